"""A studio's punto banco table through the service, on every store: bettors of an open table join with their
first stake, act with their own credentials, see what a player sees, find the coup in their history; a timed
window closes on the service's clock; the table verifies and every coup's audit passes."""

from __future__ import annotations

from datetime import timedelta

import pytest

from domain.punto_banco.table import StakesAreClosed
from domain.sight import PLAYER, Viewer
from tests.helpers import StepClock

BETTORS = [f"bettor{i:02d}" for i in range(12)]


@pytest.fixture
def clock():
    return StepClock(step=timedelta(milliseconds=10))


@pytest.fixture
def studio(make_service, clock):
    service = make_service(clock=clock)
    state = service.open_table("punto-banco", ["marta"], {"open_seats": True, "min_window": 5, "max_window": 15},
                               croupier="marta", players_act="self")
    table_id = state["table_id"]
    service.execute(table_id, "shuffle", "marta", {})
    service.execute(table_id, "cut", "marta", {"position": 40})
    return service, table_id


def test_bettors_join_with_their_own_credentials_and_a_coup_settles_audits_and_lists_in_their_history(studio, clock):
    service, table_id = studio
    service.execute(table_id, "open_stakes", "marta", {"seconds": 15})
    for n, bettor in enumerate(BETTORS):
        answer = service.execute(table_id, "place_stake", bettor, {"spot": ("player", "banker", "tie")[n % 3],
                                                                    "amount": 100 if n % 3 != 1 else 200},
                                 as_player=bettor, viewer=Viewer(PLAYER, bettor))
        assert [e["type"] for e in answer["events"]] == ["BettorJoined", "StakePlaced"]
        assert {e["player"] for e in answer["state"]["expects"]} <= {bettor}
    clock.now += timedelta(seconds=16)
    with pytest.raises(StakesAreClosed):
        service.execute(table_id, "place_stake", "late0000", {"spot": "player", "amount": 100}, as_player="late0000")
    dealt = service.execute(table_id, "deal", "marta", {})
    assert dealt["events"][0]["type"] == "StakesClosed" and dealt["events"][0]["actor"] == "dealer-rule"
    state = service.current_state(table_id)
    assert state["players"] == ["marta", *BETTORS] and "late0000" not in state["balances"]
    assert sum(state["balances"].values()) + state["house"] == 0
    report = service.verify(table_id)
    assert report["ok"] is True, report["problems"]
    audit = service.round_audit(table_id, 1)
    assert False not in audit["checks"].values() and not audit["problems"]  # cards: None until the shoe is revealed
    for bettor in BETTORS:
        [row] = service.player_rounds(bettor)["rounds"]
        assert row["table_id"] == table_id and row["result"] == state["balances"][bettor]
    assert set(service.decisions(table_id)["players"]) >= set(BETTORS)


def test_a_bettors_credential_speaks_for_him_alone_and_the_croupiers_seat_needs_the_house(studio):
    service, table_id = studio
    from domain.errors import NotYourSeat
    with pytest.raises(NotYourSeat):
        service.execute(table_id, "place_stake", "anna", {"spot": "player", "amount": 100}, as_player="boris")
    with pytest.raises(NotYourSeat):
        service.execute(table_id, "open_stakes", "marta", {"seconds": 5}, as_player="marta")
    assert "anna" not in service.current_state(table_id)["players"]
