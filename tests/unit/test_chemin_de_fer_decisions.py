"""Every free decision's options weighed against the solution (domain/chemin_de_fer/decisions.py): each
cell's gains against an independent enumeration (tests/draw_game.py), best, cost, and the reading of a
table's events."""

from __future__ import annotations

from fractions import Fraction

import pytest

from domain.chemin_de_fer import decisions as D, rating, rules, solution as S
from tests import draw_game


@pytest.mark.parametrize("decks", [2, 3])
@pytest.mark.parametrize("rule", rules.DRAW_RULES)
def test_every_free_cells_gains_are_what_an_independent_enumeration_of_the_solution_gives(decks, rule):
    punter_cells, banker_cells = S.free_cells(rule)
    for t in punter_cells:
        assert D.option_gains(decks, rule, "punter", t, S.STOOD) == draw_game.cell_gains(decks, rule, "punter", t, None)
    for b, x in banker_cells:
        assert D.option_gains(decks, rule, "banker", b, x) == draw_game.cell_gains(decks, rule, "banker", b, x), (b, x)


@pytest.mark.parametrize("decks", [2, 6, 12])
@pytest.mark.parametrize("rule", rules.DRAW_RULES)
def test_where_the_solution_mixes_the_decider_is_indifferent_and_where_it_is_pure_it_plays_the_best(decks, rule):
    solved = S.solve(decks, rule)
    cells = [("punter", t, S.STOOD, solved.punter[t]) for t in solved.punter_free]
    cells += [("banker", b, x, solved.banker[b, x]) for b, x in solved.banker_free]
    for role, total, third, drawing in cells:
        gains = D.option_gains(decks, rule, role, total, third)
        best = D.best_option(gains)
        if 0 < drawing < 1:
            assert best == D.EITHER and D.cost_of(gains, D.DRAW) == D.cost_of(gains, D.STAND) == 0
        elif best != D.EITHER:
            assert best == (D.DRAW if drawing == 1 else D.STAND)
            assert D.cost_of(gains, best) == 0 and D.cost_of(gains, D.STAND if best == D.DRAW else D.DRAW) > 0


def test_indifference_is_within_a_millionth_of_a_millionth():
    near = {D.DRAW: Fraction(1, 10), D.STAND: Fraction(1, 10) + Fraction(1, 10**12)}
    apart = {D.DRAW: Fraction(1, 10), D.STAND: Fraction(1, 10) + Fraction(2, 10**12)}
    assert D.best_option(near) == D.EITHER and D.cost_of(near, D.DRAW) == 0
    assert D.best_option(apart) == D.STAND and D.cost_of(apart, D.DRAW) == Fraction(2, 10**12)


def test_the_classic_punter_who_stands_on_5_gives_away_what_drawing_gains_over_standing():
    gains = D.option_gains(6, "classic", "punter", 5, S.STOOD)
    assert D.best_option(gains) == D.DRAW
    assert D.cost_of(gains, D.STAND) == gains[D.DRAW] - gains[D.STAND] > 0


def event(version, kind, actor="dealer-rule", **data):
    return {"version": version, "type": kind, "timestamp": f"t{version}", "actor": actor, "data": data,
            "command": version}


def test_the_reader_names_only_the_choices_the_rule_left_free_with_who_was_at_stake():
    log = [
        event(1, "SeatsDrawn", "service", seats=["vera", "anna", "boris"], banker="vera"),
        event(2, "StakePlaced", "anna", player="anna", amount=60),
        event(3, "StakePlaced", "boris", player="boris", amount=40),
        event(4, "StakesClosed", "vera", coup=1, stakes={"anna": 60, "boris": 40}, punter="anna", bank=100),
        *[event(5 + i, "CardDealt", "vera", shoe=2, position=i, card=card, to=to, face_up=False)
          for i, (card, to) in enumerate([("5s", "anna"), ("2h", "vera"), ("Tc", "anna"), ("Kd", "vera")])],
        event(9, "HandStood", "anna", player="anna", hand="punter", total=5),  # free under classic
        event(10, "CardDealt", "dealer-rule", shoe=2, position=4, card="3c", to="vera", face_up=True),  # forced
        event(11, "HandsShown", punter=["5s", "Tc"], banker=["2h", "Kd", "3c"], punter_total=5, banker_total=5,
              natural=False),
    ]
    reader = D.DecisionReader("classic")
    found = [f for e in log for f in reader.feed(e)]
    assert found == [
        D.FreeDecision(9, 1, "anna", "punter", 5, None, D.STAND, "vera", {"anna": 60, "boris": 40}),
    ]
    free = D.DecisionReader("free")
    found = [f for e in log for f in free.feed(e)]
    assert [f.version for f in found] == [9]  # the dealer-rule's draw is never a decision
    # The deal shown down settles the stakes closed on it, against the banker who covered them all.
    carried: dict = {}
    settled = [r for e in log for r in rating.settled(e, {"decks": 6, "draw_rule": "classic"}, carried)]
    value = S.solve(6, "classic").value
    assert settled == [("anna", "stake", 60, value), ("boris", "stake", 40, value), ("vera", "bank", 100, -value)]
