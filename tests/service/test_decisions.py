"""GET /tables/{id}/decisions' service side (service/decisions.py): every free decision of a table played to
the end of a shoe weighed as the solution implies, the players' sums, the round audits' decisions, and the
expected loss of every stake."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from domain.chemin_de_fer import decisions as D, solution as S
from domain.punto_banco import edges
from tests import draw_game
from tests.helpers import random_args, stacked_shoe

PLAYERS = ["anna", "boris", "vera"]


def play_to_the_end_of_a_shoe(service, table_id, seed=1, most=3000):
    """Random legal play, staking rather than passing, until a coup finishes the shoe."""
    rng = random.Random(seed)
    for _ in range(most):
        state = service.current_state(table_id)
        choices = [e for e in state["expects"] if e["command"] not in ("pass_bank", "pass")] or state["expects"]
        expect = rng.choice(choices)
        answer = service.execute(table_id, expect["command"], expect["player"], random_args(state, expect, rng))
        if any(e["type"] == "ShoeFinished" for e in answer["events"]):
            return
    raise AssertionError("the shoe did not finish")


def whole(service, table_id, limit=7):
    decisions, cursor = [], 0
    while True:
        page = service.decisions(table_id, cursor, limit)
        decisions += page["decisions"]
        cursor = page["next_after"]
        if cursor is None:
            return decisions, page["players"]


@pytest.mark.parametrize("rule", ["classic", "free"])
def test_every_decision_of_a_shoe_is_weighed_as_the_solution_implies_and_sums_per_player(service, rule):
    table_id = service.open_table("chemin-de-fer", PLAYERS, {"decks": 2, "draw_rule": rule})["table_id"]
    play_to_the_end_of_a_shoe(service, table_id, seed=3)
    decisions, players = whole(service, table_id)
    assert decisions and [d["version"] for d in decisions] == sorted({d["version"] for d in decisions})
    for d in decisions:
        exact = draw_game.cell_gains(2, rule, d["role"], d["total"], d.get("third"))
        assert d["gains"] == {k: float(v) for k, v in exact.items()}, d
        best = max(exact, key=exact.get) if abs(exact["draw"] - exact["stand"]) > Fraction(1, 10**12) else "either"
        cost = 0 if best == "either" else exact[best] - exact[d["chosen"]]
        assert d["best"] == best and d["cost"] == float(cost)
        assert math.isclose(d["cost_amount"], float(cost * d["at_stake"]), abs_tol=len(d["to"]) * 5e-5)
        assert d["cost_amount"] == round(sum(d["to"].values()), 4)
    for player, summary in players.items():
        mine = [d for d in decisions if d["player"] == player]
        assert summary["decisions"] == len(mine)
        assert summary["costly"] == sum(1 for d in mine if d["cost"] > 0)
        assert summary["cost_amount"] == round(sum(d["cost_amount"] for d in mine), 4)
        for receiver, amount in summary["to"].items():
            assert amount == round(sum(d["to"].get(receiver, 0) for d in mine), 4)
    for n in sorted({d["round"] for d in decisions})[:5]:
        assert service.round_audit(table_id, n)["free_decisions"] == [d for d in decisions if d["round"] == n]


def test_a_punter_who_stands_on_5_at_a_classic_table_is_charged_what_the_solution_gives(service):
    with stacked_shoe(["5s", "2h", "Tc", "4d"]):  # the punter 5, the banker 6: the banker then stands (A.10)
        table_id = service.open_table("chemin-de-fer", PLAYERS, {"decks": 2})["table_id"]
        for command, fields in [("draw_seats", {}), ("shuffle", {}), ("cut", {"position": 40}),
                                ("post_bank", {"amount": 100}), ("place_stake", {"amount": 60}),
                                ("place_stake", {"amount": 40}), ("close_stakes", {}), ("deal", {})]:
            state = service.current_state(table_id)
            player = next(e["player"] for e in state["expects"] if e["command"] == command)
            service.execute(table_id, command, player, fields)
        state = service.current_state(table_id)
        punter, banker = state["punter"], state["banker"]
        service.execute(table_id, "stand", punter, {})
    page = service.decisions(table_id)
    [decision] = page["decisions"]
    gains = D.option_gains(2, "classic", "punter", 5, S.STOOD)
    cost = gains["draw"] - gains["stand"]
    assert decision | {"version": 0} == {
        "version": 0, "round": 1, "player": punter, "role": "punter", "total": 5, "chosen": "stand", "best": "draw",
        "gains": {"draw": float(gains["draw"]), "stand": float(gains["stand"])}, "cost": float(cost),
        "at_stake": 100, "cost_amount": round(float(cost * 100), 4), "to": {banker: round(float(cost * 100), 4)},
    }
    assert page["players"][punter]["cost_amount"] == decision["cost_amount"] and page["players"][punter]["costly"] == 1


def test_a_chemin_de_fer_stake_is_expected_to_lose_the_games_value_to_the_banker_deal_by_deal(service):
    table_id = service.open_table("chemin-de-fer", PLAYERS, {"decks": 2, "draw_rule": "free"})["table_id"]
    play_to_the_end_of_a_shoe(service, table_id, seed=5)
    value = S.solve(2, "free").value
    expected = {p: Fraction(0) for p in PLAYERS}
    staked = dict.fromkeys(PLAYERS, 0)
    banker, stakes = None, {}
    for e in service.iter_events(table_id):
        if e["type"] in ("SeatsDrawn", "BankPassed"):
            banker = e["data"].get("banker") or e["data"].get("to_banker")
        elif e["type"] == "StakesClosed":
            stakes = e["data"]["stakes"]
        elif e["type"] == "HandsShown":  # every deal, a tied one too
            for player, amount in stakes.items():
                expected[player] += value * amount
                staked[player] += amount
            expected[banker] -= value * sum(stakes.values())
            staked[banker] += sum(stakes.values())
    players = service.decisions(table_id)["players"]
    assert {p: (s["staked"], s["theoretical_loss"]) for p, s in players.items()} == {
        p: (staked[p], round(float(expected[p]), 4)) for p in PLAYERS}
    balances = service.current_state(table_id)["balances"]
    assert {p: s["result"] for p, s in players.items()} == {p: balances[p] for p in PLAYERS}


def test_punto_banco_has_no_free_decisions_and_rates_every_stake_at_its_spots_edge(service):
    table_id = service.open_table("punto-banco", ["marta", "anna", "boris"], {}, croupier="marta")["table_id"]
    rng = random.Random(2)
    stakes: dict[str, Fraction] = {"anna": Fraction(0), "boris": Fraction(0)}
    staked = {"anna": 0, "boris": 0}
    rules = service.current_state(table_id)["rules"]
    spot_edges = edges.spot_edges(rules)
    closed: dict = {}
    for _ in range(200):
        state = service.current_state(table_id)
        expect = rng.choice(state["expects"])
        answer = service.execute(table_id, expect["command"], expect["player"], random_args(state, expect, rng))
        for e in answer["events"]:
            if e["type"] == "StakesClosed":
                closed = e["data"]["stakes"]
            elif e["type"] == "CoupDecided":  # a stake counts once its coup is dealt
                for player, spots in closed.items():
                    for spot, amount in spots.items():
                        stakes[player] += amount * spot_edges[spot]
                        staked[player] += amount
    page = service.decisions(table_id)
    assert page["decisions"] == [] and page["next_after"] is None
    for player in ("anna", "boris"):
        assert page["players"][player]["staked"] == staked[player]
        assert page["players"][player]["theoretical_loss"] == round(float(stakes[player]), 4)
        assert page["players"][player]["result"] == service.current_state(table_id)["balances"][player]
    assert any(staked.values())


def test_the_card_lottery_has_no_free_decisions_and_is_not_rated(service):
    table_id = service.open_table("card-lottery", ["olga", "ivan", "anna"], {}, banker="olga", dealer="ivan")["table_id"]
    page = service.decisions(table_id)
    assert page["decisions"] == []
    assert {p["theoretical_loss"] for p in page["players"].values()} == {None}
