"""The round and shoe projection: a batch of events turned into the read model's rows, table by table.

What one table holds cannot stop the others: the events of a batch are turned into rows table by table,
and a table whose events cannot be read, projected or written is recorded as failed at that version (its
rows stay as they were before the batch, never half-written) while the position moves on for every other
table. A failed table is not indexed further; listing, rounds and audits say so.

Each table's rows are made from its events as the events API shows them (service/present.py), one event at a
time (``TableProjection.process_event``), in the manner of eventsourcing's projections.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from domain.rounds import RoundTracker
from domain.table import TableEvent
from service import present
from service.replay import topic_kind
from service.readmodel.rows import IndexBatch, IndexFailure, TableRows, describe
from service.readmodel.seats import Seats
from service.readmodel.view import IndexView

# A notification to index: its id (the table's ``seq`` when it opens it), its event (or Unreadable), and the
# event as the events API shows it (None for an unreadable one).
Item = tuple[int, Any, "dict[str, Any] | None"]


@dataclass
class Unreadable:
    """A notification the mapper could not turn into an event (damaged, or stored under another key)."""

    originator_id: Any
    originator_version: int
    topic: str
    error: Exception
    command = None


class ProjectionFailed(Exception):
    def __init__(self, version: int, cause: BaseException) -> None:
        super().__init__(describe(cause))
        self.version = version
        self.message = str(self)


@dataclass(frozen=True)
class Elsewhere:
    """A notification of an aggregate that is no table (a command's identity record, a credential): the read
    model holds nothing of it, so it is never decrypted or decoded (a quarter of the log's rows)."""

    originator_id: Any
    originator_version: int
    command = None


def decode(mapper: Any, note: Any) -> tuple[Any, dict[str, Any] | None]:
    """A notification as its event, and a table's event as the events API shows it (which the rows are made
    of); a stored row that cannot be read is recorded against its table alone."""
    if topic_kind(note.topic) is None:
        return Elsewhere(note.originator_id, note.originator_version), None
    try:
        event = mapper.to_domain_event(note)
        # a field missing from the stored form shows here
        return event, present.event(event) if isinstance(event, TableEvent) else None
    except Exception as exc:  # noqa: BLE001 - recorded against its table, never raised to a reader
        return Unreadable(note.originator_id, note.originator_version, note.topic, exc), None


class Projection:
    """Turns a batch's events into rows: each table's apart, so that a table that fails fails alone. Reads the
    rows the read model holds already (``view``) to carry them on."""

    def __init__(self, marks: dict[str, Any], view: IndexView) -> None:
        self.marks = marks
        self.view = view

    def process(self, events: list[Item]) -> IndexBatch:
        batch = IndexBatch()
        chunks: dict[str, list[Item]] = {}
        unknown: dict[str, list[Item]] = {}  # unreadable, of a class that cannot even be named
        for item in events:
            kind = _kind(item[1])
            if kind is not None:
                (chunks if kind else unknown).setdefault(str(item[1].originator_id), []).append(item)
        known = self.view.get_tables(sorted(set(chunks) | set(unknown)))
        for table_id, items in unknown.items():
            if table_id in chunks or table_id in known:
                chunks[table_id] = sorted(chunks.get(table_id, []) + items, key=lambda item: item[0])
        for table_id, items in chunks.items():
            row = known.get(table_id)
            if row is not None and row["index_error"] is not None:
                continue  # a failed table is not indexed further: its rows end where it failed
            try:
                batch.tables[table_id] = self._project(table_id, row, items)
            except ProjectionFailed as failed:
                batch.failures[table_id] = self._failure(table_id, row, items, failed)
        return batch

    def _project(self, table_id: str, row: dict[str, Any] | None, items: list[Item]) -> TableRows:
        """The table's rows after these events; ProjectionFailed names the first event that could not be
        indexed. Works on copies, so that a failure leaves nothing behind."""
        table = TableProjection(table_id, row, self.marks, self.view)
        for seq, event, data in items:
            try:
                table.process_event(seq, event, data)
            except Exception as exc:  # noqa: BLE001 - any failure is this table's alone
                if _outage(exc):
                    raise
                raise ProjectionFailed(event.originator_version, exc) from exc
        try:
            return table.close()
        except Exception as exc:  # noqa: BLE001
            if _outage(exc):
                raise
            raise ProjectionFailed(items[-1][1].originator_version, exc) from exc

    def _failure(
        self, table_id: str, row: dict[str, Any] | None, items: list[Item], failed: ProjectionFailed
    ) -> IndexFailure:
        seq, first, _ = items[0]
        game = opened_at = None
        if row is None and isinstance(first, TableEvent) and first.type == "TableOpened":
            game = first.game if first.game in self.marks else None  # type: ignore[attr-defined]
            opened_at = first.timestamp_text
        return IndexFailure(table_id, failed.version, failed.message, seq, game, opened_at)


class TableProjection:
    """One table's rows, moved on by each of its events in turn and finished at the batch's end."""

    def __init__(self, table_id: str, row: dict[str, Any] | None, marks: dict[str, Any], view: IndexView) -> None:
        self.table_id = table_id
        self.row = row
        self.marks = marks
        self.view = view
        self.rows: TableRows | None = None
        self.tracker: RoundTracker | None = None
        self.seats: Seats | None = None

    def process_event(self, seq: int, event: Any, data: dict[str, Any] | None) -> None:
        if isinstance(event, Unreadable):
            raise event.error
        assert data is not None
        if self.row is None:
            self.row = self._opening(seq, data)
        if self.rows is None:
            self.rows = TableRows(first_version=data["version"], table=self.row)
        if self.tracker is None:
            self.tracker = RoundTracker(self.marks[self.row["game"]], self.row["tracker"])
            self.seats = Seats(self.row["game"], self.row["players"], self.row.get("seats"))
        for finished in self.tracker.feed(data):
            self._finished(finished)
        assert self.seats is not None
        opened = self.tracker.state["open"]
        self.seats.note(seq, data, None if opened is None else opened["round"])
        self.row["version"], self.row["updated_at"] = data["version"], data["timestamp"]
        self._shoe(data)

    def close(self) -> TableRows:
        assert self.rows is not None and self.tracker is not None and self.row is not None
        # Every batch ends at a command boundary: a round whose settling command is in it is finished.
        for finished in self.tracker.flush():
            self._finished(finished)
        self.row["tracker"] = self.tracker.state
        return self.rows

    def _finished(self, finished: dict[str, Any]) -> None:
        assert self.rows is not None and self.row is not None and self.seats is not None
        self.rows.rounds.append({"table_id": self.table_id, **finished})
        self.rows.seats += [{"table_id": self.table_id, **part} for part in self.seats.finish(finished)]
        self.row["rounds"] = finished["round"]

    def _opening(self, seq: int, data: dict[str, Any]) -> dict[str, Any]:
        if data["type"] != "TableOpened":
            raise ValueError(f"the table's first event is {data['type']}, not TableOpened")
        game = data["data"]["game"]
        if game not in self.marks:
            raise ValueError(f"unknown game {game!r}")
        return {
            "table_id": self.table_id, "seq": seq, "game": game, "players": data["data"]["players"],
            "opened_at": data["timestamp"], "version": 0, "updated_at": data["timestamp"], "rounds": 0,
            "tracker": None, "seats": Seats.opened(data["data"]["rules"], data["data"]["players"]), "index_error": None,
        }

    def _shoe(self, e: dict[str, Any]) -> None:
        assert self.rows is not None
        kind, data = e["type"], e["data"]
        if kind not in ("ShoeShuffled", "ShoeCut", "ShoeRevealed"):
            return
        number = data["shoe"]
        if not isinstance(number, int) or isinstance(number, bool):
            raise ValueError(f"the shoe number {number!r} is not a whole number")
        if kind == "ShoeShuffled":
            self.rows.shoes[number] = {
                "table_id": self.table_id, "shoe": number, "deck": data["deck"], "decks": data["decks"],
                "algorithm": data["algorithm"], "commitment": data["commitment"], "cut": 0, "seed": None,
                "shuffled_version": e["version"], "revealed_version": None,
            }
            return
        row = self.rows.shoes.get(number)
        if row is None:
            row = next(iter(self.view.get_shoes(self.table_id, [number])), None)
            if row is None:
                return
            self.rows.shoes[number] = row
        if kind == "ShoeCut":
            row["cut"] = data["position"]
        else:
            row["seed"], row["revealed_version"] = data["seed"], e["version"]


def _kind(e: Any) -> bool | None:
    """True for a table's event, False for an unreadable one whose class cannot be resolved, None otherwise."""
    if isinstance(e, TableEvent):
        return True
    return topic_kind(e.topic) if isinstance(e, Unreadable) else None


def _outage(exc: Exception) -> bool:
    """The store itself failed (service/store.py): no table's fault, so none is marked failed; the batch is
    indexed again once the store is back."""
    from service.store import as_outage  # not at import: the store's module reads the read model's

    return as_outage(exc) is not None
