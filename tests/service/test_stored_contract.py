"""Events are a stored contract: a log written by an earlier release still replays to the same state.

The fixtures are a whole Chemin de fer shoe and two card-lottery games as the event store held them (topics and JSON states). Renaming or
moving an event class, or changing its fields, breaks this test until an upcaster is written.
"""

from __future__ import annotations

import json
import random
import uuid
from pathlib import Path

import pytest

from eventsourcing.persistence import StoredEvent

from domain.chain import digest
from tests.helpers import pick

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


LOGS = ["chemin-de-fer-stored-v1", "card-lottery-stored-v1"]


def load_old_log(service, name):
    rows = [json.loads(line) for line in (FIXTURES / f"{name}.jsonl").read_text().splitlines()]
    service.recorder.insert_events(
        [
            StoredEvent(
                originator_id=uuid.UUID(r["originator_id"]),
                originator_version=r["originator_version"],
                topic=r["topic"],
                state=r["state"].encode(),
            )
            for r in rows
        ]
    )
    return rows[0]["originator_id"]


@pytest.mark.parametrize("name", LOGS)
def test_an_old_stored_log_replays_to_the_state_it_had(service, name):
    table_id = load_old_log(service, name)
    expected = json.loads((FIXTURES / f"{name}.state.json").read_text())
    assert service.current_state(table_id) == expected


@pytest.mark.parametrize("name", LOGS)
def test_an_old_stored_log_verifies_and_its_rounds_are_indexed(service, name):
    table_id = load_old_log(service, name)
    report = service.verify(table_id)
    assert report["ok"] is True and report["rounds_checked"] > 5, report["problems"]


@pytest.mark.parametrize("name", LOGS)
def test_an_old_stored_log_still_chains_and_can_be_played_on(service, name):
    table_id = load_old_log(service, name)
    prev = ""
    for e in service.iter_events(table_id):
        data = e["data"]
        assert digest(prev, e["version"], e["type"], e["timestamp"], e["actor"], data) == e["digest"]
        prev = e["digest"]
    state = service.current_state(table_id)
    command, player, args = pick(state, random.Random(1))
    result = service.execute(table_id, command, player, args)
    assert result["version"] > state["version"]
