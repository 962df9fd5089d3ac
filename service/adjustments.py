"""The adjustments log: every correction decided at every table (domain/corrections.py), read from the event log.

Each decision (``CorrectionApproved`` or ``CorrectionRefused``) carries its request whole (who asked, when, why)
and, approved, every balance before and after its effects, so that one event is one entry: the log is read by
those two topics alone, in the order of the notification log, whose position is the page's cursor.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from eventsourcing.utils import get_topic

from domain.corrections import APPROVED, REFUSED, CorrectionApproved, CorrectionRefused
from service.limits import page_size, position

TOPICS = (get_topic(CorrectionApproved), get_topic(CorrectionRefused))
BATCH = 500  # notifications read at a time while a filter skips entries


class Filters:
    """What an entry must match: a table, a player whose money or stake it moved, a reason, a time window (the
    decision's moment, ``start`` included, ``end`` not)."""

    def __init__(self, table: str | None = None, player: str | None = None, reason: str | None = None,
                 start: datetime | None = None, end: datetime | None = None) -> None:
        self.table, self.player, self.reason, self.start, self.end = table, player, reason, start, end

    def match(self, entry: dict[str, Any], moment: datetime) -> bool:
        return ((self.table is None or entry["table_id"] == self.table)
                and (self.player is None or self.player in entry["players"])
                and (self.reason is None or entry["reason"] == self.reason)
                and (self.start is None or moment >= self.start)
                and (self.end is None or moment < self.end))


def entry(table_id: str, position_: int, e: Any) -> dict[str, Any]:
    """One decision as the log lists it."""
    approved = isinstance(e, CorrectionApproved)
    return {
        "position": position_, "table_id": table_id, "version": e.originator_version, "request": e.request,
        "kind": e.kind, "round": e.round, "reason": e.reason, "note": e.note,
        "status": APPROVED if approved else REFUSED,
        "requested_by": e.requested_by, "requested_at": e.requested_at,
        "decided_by": e.approved_by if approved else e.refused_by, "decided_at": e.timestamp_text,
        "why": None if approved else e.why,
        "players": list(e.players) if approved else [],
        "before": dict(e.before) if approved else None, "after": dict(e.after) if approved else None,
        "stake": dict(e.stake) if e.stake else None,
    }


def entries(service: Any, filters: Filters, after: int) -> Iterator[dict[str, Any]]:
    """Every matching entry after position ``after`` of the notification log, in its order."""
    start = position(after)
    while True:
        notes = service.recorder.select_notifications(start, BATCH, topics=TOPICS, inclusive_of_start=False)
        for note in notes:
            e = service.mapper.to_domain_event(note)
            found = entry(str(note.originator_id), note.id, e)
            if filters.match(found, e.timestamp):
                yield found
        if len(notes) < BATCH:
            return
        start = notes[-1].id


def page(service: Any, filters: Filters, after: int, limit: int) -> dict[str, Any]:
    """A page of entries after ``after``; ``next_after`` the cursor of the next (None on the last)."""
    limit = page_size(limit)
    found: list[dict[str, Any]] = []
    for item in entries(service, filters, after):
        found.append(item)
        if len(found) > limit:
            break
    more = len(found) > limit
    found = found[:limit]
    return {"adjustments": found, "next_after": found[-1]["position"] if more else None}
