"""What a caller sees: the one place that turns tables and events into the dicts any output sends.

Every answer, page, export, stream, round audit and verification detail is made here, from each game's
view of a table (``Table.view``) and of an event (``TableEvent.public``): what the rules let a caller see is
therefore decided by the domain and applied in one place. tests/unit/test_code_shape.py fails if any other
module of the service or the API calls those views.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from domain.table import Table, TableEvent


def event(e: TableEvent) -> dict[str, Any]:
    """An event as every output shows it: the envelope and the data, never an unrevealed seed."""
    return e.public()


def events(es: Iterable[TableEvent]) -> list[dict[str, Any]]:
    return [e.public() for e in es]


def event_text(e: TableEvent, reveal: bool | None = None) -> str:
    """An event's data as a message of an audit quotes it: a seed only where ``reveal`` (by default: where
    the event is the ShoeRevealed that publishes it)."""
    if reveal is None:
        reveal = e.type == "ShoeRevealed"
    return str({k: v for k, v in e.data.items() if k != "seed" or reveal})


def state(table: Table) -> dict[str, Any]:
    """The table's state: its id, head version and digest, then the game's view of it."""
    return {"table_id": str(table.id), "version": table.version, "digest": table.head, **table.view()}


def command_result(table: Table, appended: Iterable[TableEvent], receipt: dict[str, Any]) -> dict[str, Any]:
    """A command's answer: the new head, the events it appended, the state and the signed receipt."""
    return {
        "version": table.version,
        "digest": table.head,
        "events": events(appended),
        "state": state(table),
        "receipt": receipt,
    }


def round_record(shown: list[dict[str, Any]]) -> dict[str, Any]:
    """A round's cards, decisions (with their actors) and payments, as its audit lists them, from its events
    as ``event`` shows them."""
    return {
        "cards": [{"version": e["version"], **e["data"]} for e in shown if e["type"] == "CardDealt"],
        "decisions": [
            {"version": e["version"], "type": e["type"], "actor": e["actor"], "data": e["data"]}
            for e in shown
            if e["type"] not in ("PaymentMade", "CardDealt") or (e["type"] == "CardDealt" and e["data"]["face_up"])
        ],
        "payments": [{"version": e["version"], **e["data"]} for e in shown if e["type"] == "PaymentMade"],
    }
