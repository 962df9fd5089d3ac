"""Who acts at a table, and who did (service/commands.py, domain/acting.py): each command's events record the
credential that issued it, chained like every other field; at a self-acting table the house's credential
cannot act for a player, and a player's credential never acts for another."""

from __future__ import annotations

import pytest

from domain.chain import digest
from domain.errors import NotYourSeat

PLAYERS = ["anna", "boris", "vera"]


def test_every_event_of_a_command_records_the_credential_that_issued_it_and_the_chain_covers_it(service):
    table_id = service.open_table("chemin-de-fer", PLAYERS, {}, by="desk-1")["table_id"]
    result = service.execute(table_id, "draw_seats", "anna", {}, by="desk-1")
    events = service.events_page(table_id)["events"]
    assert {e["data"]["by"] for e in events} == {"desk-1"} and len(events) == result["version"]
    prev = ""
    for e in events:
        assert e["digest"] == digest(prev, e["version"], e["type"], e["timestamp"], e["actor"], e["data"])
        prev = e["digest"]
    assert service.verify(table_id)["ok"] is True


def test_a_command_without_a_credential_is_recorded_as_before_without_by(service):
    table_id = service.open_table("chemin-de-fer", PLAYERS, {})["table_id"]
    service.execute(table_id, "draw_seats", "anna", {})
    assert all("by" not in e["data"] for e in service.events_page(table_id)["events"])


def test_a_self_acting_table_records_its_choice_and_refuses_the_house_acting_for_a_player(service):
    opened = service.open_table("chemin-de-fer", PLAYERS, {}, by="desk-1", players_act="self")
    table_id = opened["table_id"]
    assert service.events_page(table_id)["events"][0]["data"]["players_act"] == "self"
    with pytest.raises(NotYourSeat) as refused:
        service.execute(table_id, "draw_seats", "anna", {}, by="desk-1")
    assert "anna's own credential" in refused.value.message
    with pytest.raises(NotYourSeat):
        service.execute(table_id, "draw_seats", "anna", {}, by="boris", as_player="boris")
    assert service.current_state(table_id)["version"] == opened["version"]  # nothing recorded
    service.execute(table_id, "draw_seats", "anna", {}, by="anna", as_player="anna")
    assert service.events_page(table_id)["events"][-1]["data"]["by"] == "anna"
    assert service.verify(table_id)["ok"] is True


def test_the_house_keeps_its_own_seat_at_a_self_acting_punto_banco_table(service):
    table_id = service.open_table("punto-banco", ["marta", "anna"], {}, croupier="marta", players_act="self",
                                  by="desk-1")["table_id"]
    service.execute(table_id, "shuffle", "marta", {}, by="desk-1")  # the croupier's seat is the house's
    with pytest.raises(NotYourSeat):
        service.execute(table_id, "cut", "anna", {"position": 200}, by="desk-1")
    service.execute(table_id, "cut", "anna", {"position": 200}, by="anna", as_player="anna")
    with pytest.raises(NotYourSeat):
        service.execute(table_id, "place_stake", "marta", {"spot": "banker", "amount": 100}, by="marta",
                        as_player="marta")
