"""GET /tables/{id}/roads' service side (service/roads.py): a baccarat table's roads read from its log for any
shoe and any moment, the same whether the read model has indexed the newest shuffle or not, and only from coups
whose cards are shown."""

from __future__ import annotations

import random
from datetime import datetime

import pytest

from domain.games import GAMES
from domain.roads import Coup, roads
from service.errors import NotFoundInHistory
from tests.helpers import random_args, stacked_shoe
from tests.service.test_punto_banco_service import open_punto_banco, play_shoes


@pytest.fixture(params=["memory", "sqlite"])
def persistence_env(request, tmp_path):
    """Memory and SQLite: PostgreSQL's read model shares SQLite's reading of shoes (service/readmodel/sql.py)."""
    if request.param == "memory":
        return {"PERSISTENCE_MODULE": "eventsourcing.popo"}
    return {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "events.sqlite"),
            "ZAMETANO_DATA_DIR": str(tmp_path)}


def coups_by_shoe(service, table_id, game, upto=None):
    """Each shoe's coups, read straight from the events with the game's own hook."""
    hook, shoes, current = GAMES[game].roads, {}, None
    for e in service.iter_events(table_id):
        if upto is not None and e["version"] > upto:
            break
        if e["type"] == "ShoeShuffled" and e["data"]["deck"] == hook.deck:
            current = e["data"]["shoe"]
            shoes[current] = []
        elif (coup := hook.decided(e)) is not None:
            shoes[current].append(coup)
    return shoes


def play_coups(service, table_id, coups):
    """A new shoe shuffled and cut, then ``coups`` coups staked on and dealt."""
    service.execute(table_id, "shuffle", "marta", {})
    service.execute(table_id, "cut", "anna", {"position": 100})
    for _ in range(coups):
        service.execute(table_id, "place_stake", "anna", {"spot": "banker", "amount": 100})
        service.execute(table_id, "close_stakes", "marta", {})
        service.execute(table_id, "deal", "marta", {})


def outcomes(shown):
    return [c["outcome"] for c in shown["bead_plate"]]


def as_drawn(coups: list[Coup]):
    """The roads domain/roads.py draws, as positions and marks, to compare with what the service shows."""
    return {name: [(c.column, c.row, c.mark) for c in cells] for name, cells in roads(coups).items()}


def shown_drawn(shown):
    return {name: [(c["column"], c["row"], c.get("outcome", c.get("colour"))) for c in shown[name]]
            for name in ("bead_plate", "big_road", "big_eye_boy", "small_road", "cockroach_pig")}


def test_a_punto_banco_tables_roads_for_every_shoe_and_moment_are_its_decided_coups(service):
    table_id = open_punto_banco(service, decks=6, stop_card=52)["table_id"]
    play_shoes(service, table_id, 1, seed=5)
    play_coups(service, table_id, 3)
    by_shoe = coups_by_shoe(service, table_id, "punto-banco")
    for indexed in (False, True):  # before the read model holds the shuffles, and after
        if indexed:
            service.index_caught_up()
        now = service.roads(table_id)
        assert now["shoe"] == 2 and now["shoes"] == [1, 2] and now["game"] == "punto-banco"
        assert now["coups"] == len(by_shoe[2]) == 3
        assert shown_drawn(now) == as_drawn(by_shoe[2])
        first = service.roads(table_id, shoe=1)
        assert first["coups"] == len(by_shoe[1]) > 40
        assert shown_drawn(first) == as_drawn(by_shoe[1])
        assert outcomes(first) == [c.outcome for c in by_shoe[1]]
        assert first["totals"]["banker"] + first["totals"]["player"] + first["totals"]["tie"] == first["coups"]
        assert sum(c["ties"] for c in first["big_road"]) == first["totals"]["tie"]
    events = list(service.iter_events(table_id))
    middle = next(e for e in events if e["type"] == "CoupDecided" and e["data"]["coup"] == 20)
    then = service.roads(table_id, version=middle["version"])
    assert then["shoes"] == [1] and then["coups"] == 20 and then["as_of"]["version"] == middle["version"]
    assert outcomes(then) == [c.outcome for c in by_shoe[1][:20]]
    moment = datetime.fromisoformat(middle["timestamp"])
    assert service.roads(table_id, at=moment) == then


def test_a_chemin_de_fer_coup_reaches_the_roads_only_once_its_hands_are_shown(service):
    table_id = service.open_table("chemin-de-fer", ["anna", "boris", "vera"], {"decks": 2})["table_id"]
    rng = random.Random(7)
    shown, looked = 0, 0
    for _ in range(250):
        state = service.current_state(table_id)
        choices = [e for e in state["expects"] if e["command"] not in ("pass_bank", "pass")] or state["expects"]
        expect = rng.choice(choices)
        answer = service.execute(table_id, expect["command"], expect["player"], random_args(state, expect, rng))
        for e in answer["events"]:
            if e["type"] == "ShoeShuffled" and e["data"]["deck"] == "shoe":
                shown = 0  # a new shoe, new roads
            shown += e["type"] == "HandsShown"
        if looked < 8 and any(e["type"] == "CardDealt" and not e["data"]["face_up"] for e in answer["events"]):
            looked += 1  # a hand dealt face down: the coup is not on the roads yet
            assert service.roads(table_id)["coups"] == shown
    assert looked > 3 and shown > 3
    now = service.roads(table_id)
    assert shown_drawn(now) == as_drawn(coups_by_shoe(service, table_id, "chemin-de-fer")[now["shoe"]])


def test_a_chemin_de_fer_tie_dealt_again_is_a_tie_marked_on_the_win_that_follows_it(service):
    # The punter's 4s 4h and the banker's 9c 9d: natural 8s and pairs both, a tie; dealt again, the punter's 9s Kh
    # against 2c 3d: a natural 9, the punter's (the player's) win.
    with stacked_shoe(["4s", "9c", "4h", "9d", "9s", "2c", "Kh", "3d"]):
        table_id = service.open_table("chemin-de-fer", ["anna", "boris", "vera"], {"decks": 2})["table_id"]
        for command, fields in [("draw_seats", {}), ("shuffle", {}), ("cut", {"position": 40}),
                                ("post_bank", {"amount": 100}), ("place_stake", {"amount": 100}),
                                ("close_stakes", {}), ("deal", {}), ("deal", {})]:
            state = service.current_state(table_id)
            player = next(e["player"] for e in state["expects"] if e["command"] == command)
            service.execute(table_id, command, player, fields)
    roads = service.roads(table_id)
    assert roads["shoe"] == 2 and roads["shoes"] == [2]  # shoe 1 is the lots deck, which deals no coup
    assert [(c["outcome"], c["natural"], c["banker_pair"], c["player_pair"]) for c in roads["bead_plate"]] == [
        ("tie", True, True, True), ("player", True, False, False)]
    assert [(c["column"], c["row"], c["outcome"], c["ties"]) for c in roads["big_road"]] == [(1, 1, "player", 1)]
    assert roads["totals"] == {"banker": 0, "player": 1, "tie": 1, "natural": 2, "banker_pair": 1, "player_pair": 1}


def test_a_table_without_roads_a_shoe_not_there_and_two_moments_are_refused(service):
    lottery = service.open_table("card-lottery", ["olga", "ivan", "anna"], {}, banker="olga", dealer="ivan")
    with pytest.raises(NotFoundInHistory, match="Card lottery table, which has no roads; roads are kept for "
                                                "baccarat tables: Chemin de fer and Punto banco"):
        service.roads(lottery["table_id"])
    table_id = open_punto_banco(service)["table_id"]
    empty = service.roads(table_id)
    assert empty["shoe"] is None and empty["shoes"] == [] and empty["big_road"] == [] and empty["coups"] == 0
    with pytest.raises(NotFoundInHistory, match="no shoe 3 of coups by version 2; its shoes: none yet"):
        service.roads(table_id, shoe=3)
    with pytest.raises(NotFoundInHistory, match="there is no version 9"):
        service.roads(table_id, version=9)
