"""Punto banco's events are a stored contract too: a whole shoe as the event store held it at the game's first
release (topics and JSON states, played by random legal commands) still replays to the same state, verifies,
and can be played on. Renaming or moving one of its event classes, or changing its fields, breaks this test
until an upcaster is written."""

from __future__ import annotations

import json
import random

from domain.chain import digest
from tests.service.test_stored_contract import FIXTURES, as_recorded, old_store  # noqa: F401 - the fixture
from tests.unit.test_punto_banco_table import fields_within

NAME = "punto-banco-stored-v1"


def test_an_old_punto_banco_log_replays_to_the_state_it_had(old_store):
    service, table_id = old_store(NAME)
    expected = json.loads((FIXTURES / f"{NAME}.state.json").read_text())
    assert as_recorded(service.current_state(table_id)) == expected


def test_an_old_punto_banco_log_holds_a_whole_shoe_and_verifies_with_its_rounds_indexed(old_store):
    service, table_id = old_store(NAME)
    types = {e["type"] for e in service.iter_events(table_id)}
    assert {"RolesAssigned", "CardsBurned", "StakePlaced", "StakesClosed", "DrawDecided", "CoupDecided",
            "StopCardCameOut", "ShoeFinished", "ShoeRevealed"} <= types
    report = service.verify(table_id)
    assert report["ok"] is True and report["rounds_checked"] > 5, report["problems"]
    assert len(service.list_rounds(table_id, limit=1000)["rounds"]) == report["rounds_checked"]


def test_an_old_punto_banco_log_still_chains_and_can_be_played_on(old_store):
    service, table_id = old_store(NAME)
    prev = ""
    for e in service.iter_events(table_id):
        assert digest(prev, e["version"], e["type"], e["timestamp"], e["actor"], e["data"]) == e["digest"]
        prev = e["digest"]
    state = service.current_state(table_id)
    entry = state["expects"][0]
    result = service.execute(table_id, entry["command"], entry["player"], fields_within(entry, random.Random(1)))
    assert result["version"] > state["version"] and result["state"]["phase"] == "stakes"
