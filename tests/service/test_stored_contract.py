"""Events are a stored contract: a log written by an earlier release still replays to the same state.

The fixture is a whole Chemin de fer shoe as the event store held it (topics and JSON states). Renaming or
moving an event class, or changing its fields, breaks this test until an upcaster is written.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from eventsourcing.persistence import StoredEvent

from domain.chain import digest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def load_old_log(service):
    rows = [json.loads(line) for line in (FIXTURES / "chemin-de-fer-stored-v1.jsonl").read_text().splitlines()]
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


def test_an_old_stored_log_replays_to_the_state_it_had(service):
    table_id = load_old_log(service)
    expected = json.loads((FIXTURES / "chemin-de-fer-stored-v1.state.json").read_text())
    assert service.current_state(table_id) == expected


def test_an_old_stored_log_still_chains_and_can_be_played_on(service):
    table_id = load_old_log(service)
    prev = ""
    for e in service.iter_events(table_id):
        data = e["data"]
        assert digest(prev, e["version"], e["type"], e["timestamp"], e["actor"], data) == e["digest"]
        prev = e["digest"]
    state = service.current_state(table_id)
    expect = state["expects"][0]
    result = service.execute(table_id, expect["command"], expect["player"], {"position": 20} if expect["command"] == "cut" else {})
    assert result["version"] > state["version"]
