"""The read model: every table, every finished round and every shoe, kept up to date from the event log.

The service catches the read model up from the application's notification log: it reads the notifications
after the last one tracked, turns them into rows, and writes the rows and the new tracking position in one
transaction of the event store's own database. Two processes catching up at once cannot both write the
same position (the tracking row refuses the second), so the loser re-reads and nothing is counted twice.
Queries read these rows; none scans the events.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from eventsourcing.persistence import IntegrityError, Tracking, TrackingRecorder
from eventsourcing.popo import POPOTrackingRecorder
from eventsourcing.postgres import PostgresTrackingRecorder
from eventsourcing.sqlite import SQLiteTrackingRecorder
from psycopg.sql import SQL, Identifier

from domain.rounds import RoundTracker
from domain.table import TableEvent
from service.errors import DamagedLog

TABLE_COLUMNS = ("table_id", "seq", "game", "players", "opened_at", "version", "updated_at", "rounds", "tracker")
ROUND_COLUMNS = ("table_id", "round", "first_version", "last_version", "started_at", "ended_at", "summary")
SHOE_COLUMNS = (
    "table_id", "shoe", "deck", "decks", "algorithm", "commitment", "cut", "seed", "shuffled_version", "revealed_version"
)


@dataclass
class IndexBatch:
    """Rows to write with one tracking position: tables (new or moved on), finished rounds, shoes."""

    tables: dict[str, dict[str, Any]] = field(default_factory=dict)
    rounds: list[dict[str, Any]] = field(default_factory=list)
    shoes: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)


class IndexView(TrackingRecorder, ABC):
    @abstractmethod
    def write(self, batch: IndexBatch, tracking: Any, read_at: int) -> None:
        """Writes the rows and moves the tracking position from ``read_at`` on, in one transaction that first
        claims the position: if another process moved it since it was read, IntegrityError and nothing is
        written. Claiming the position first also makes writers queue on one row, so they cannot deadlock."""

    @abstractmethod
    def get_tables(self, table_ids: list[str]) -> dict[str, dict[str, Any]]: ...

    @abstractmethod
    def list_tables(self, game: str | None, after: int, limit: int) -> list[dict[str, Any]]: ...

    @abstractmethod
    def list_rounds(self, table_id: str, after: int, limit: int) -> list[dict[str, Any]]: ...

    @abstractmethod
    def get_shoes(self, table_id: str, numbers: list[int] | None = None) -> list[dict[str, Any]]:
        """The table's shoes, or only those numbered."""


def _decode_table(row: dict[str, Any]) -> dict[str, Any]:
    row = dict(row)
    row["players"] = json.loads(row["players"])
    row["tracker"] = json.loads(row["tracker"])
    return row


class _SQLIndex(IndexView):
    """The SQL both databases share; subclasses say how to run it."""

    placeholder = "?"

    def _table(self, name: str) -> str:
        return name

    def _upserts(self, batch: IndexBatch) -> list[tuple[str, list[tuple[Any, ...]]]]:
        p = self.placeholder
        t, r, s = self._table("zametano_tables"), self._table("zametano_rounds"), self._table("zametano_shoes")
        tables = [
            (row["table_id"], row["seq"], row["game"], json.dumps(row["players"]), row["opened_at"], row["version"],
             row["updated_at"], row["rounds"], json.dumps(row["tracker"]))
            for row in batch.tables.values()
        ]
        rounds = [tuple(row[c] for c in ROUND_COLUMNS) for row in batch.rounds]
        shoes = [tuple(row[c] for c in SHOE_COLUMNS) for row in batch.shoes.values()]
        marks = lambda n: ", ".join([p] * n)  # noqa: E731
        return [
            (
                f"INSERT INTO {t} ({', '.join(TABLE_COLUMNS)}) VALUES ({marks(len(TABLE_COLUMNS))}) "
                "ON CONFLICT (table_id) DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at, "
                "rounds = excluded.rounds, tracker = excluded.tracker",
                tables,
            ),
            (f"INSERT INTO {r} ({', '.join(ROUND_COLUMNS)}) VALUES ({marks(len(ROUND_COLUMNS))})", rounds),
            (
                f"INSERT INTO {s} ({', '.join(SHOE_COLUMNS)}) VALUES ({marks(len(SHOE_COLUMNS))}) "
                "ON CONFLICT (table_id, shoe) DO UPDATE SET cut = excluded.cut, seed = excluded.seed, "
                "revealed_version = excluded.revealed_version",
                shoes,
            ),
        ]

    def _create_statements(self) -> list[str]:
        t, r, s = self._table("zametano_tables"), self._table("zametano_rounds"), self._table("zametano_shoes")
        return [
            f"CREATE TABLE IF NOT EXISTS {t} (table_id TEXT PRIMARY KEY, seq BIGINT NOT NULL, game TEXT NOT NULL, "
            "players TEXT NOT NULL, opened_at TEXT NOT NULL, version BIGINT NOT NULL, updated_at TEXT NOT NULL, "
            "rounds BIGINT NOT NULL, tracker TEXT NOT NULL)",
            f"CREATE INDEX IF NOT EXISTS zametano_tables_by_seq ON {t} (seq)",
            f"CREATE INDEX IF NOT EXISTS zametano_tables_by_game ON {t} (game, seq)",
            f"CREATE TABLE IF NOT EXISTS {r} (table_id TEXT NOT NULL, round BIGINT NOT NULL, "
            "first_version BIGINT NOT NULL, last_version BIGINT NOT NULL, started_at TEXT NOT NULL, "
            "ended_at TEXT NOT NULL, summary TEXT NOT NULL, PRIMARY KEY (table_id, round))",
            f"CREATE TABLE IF NOT EXISTS {s} (table_id TEXT NOT NULL, shoe BIGINT NOT NULL, deck TEXT NOT NULL, "
            "decks BIGINT NOT NULL, algorithm TEXT NOT NULL, commitment TEXT NOT NULL, cut BIGINT NOT NULL, "
            "seed TEXT, shuffled_version BIGINT NOT NULL, revealed_version BIGINT, PRIMARY KEY (table_id, shoe))",
        ]

    def _select(self, sql: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
        raise NotImplementedError

    def _claim(self, cursor: Any, table: str, tracking: Any, read_at: int) -> None:
        """Moves the position from ``read_at`` to the batch's last notification, or fails. A single write
        statement first, so that SQLite takes its write lock at once (waiting its turn) instead of failing
        to upgrade a read lock."""
        p = self.placeholder
        if read_at == 0:
            cursor.execute(
                f"INSERT INTO {table} VALUES ({p}, {p}) ON CONFLICT (application_name) DO NOTHING "
                "RETURNING notification_id",
                (tracking.application_name, tracking.notification_id),
            )
        else:
            cursor.execute(
                f"UPDATE {table} SET notification_id = {p} WHERE application_name = {p} AND notification_id = {p} "
                "RETURNING notification_id",
                (tracking.notification_id, tracking.application_name, read_at),
            )
        if cursor.fetchone() is None:
            raise IntegrityError(f"{tracking.application_name}: the read model moved on since it was read")

    def get_tables(self, table_ids: list[str]) -> dict[str, dict[str, Any]]:
        if not table_ids:
            return {}
        marks = ", ".join([self.placeholder] * len(table_ids))
        rows = self._select(f"SELECT * FROM {self._table('zametano_tables')} WHERE table_id IN ({marks})", tuple(table_ids))
        return {row["table_id"]: _decode_table(row) for row in rows}

    def list_tables(self, game: str | None, after: int, limit: int) -> list[dict[str, Any]]:
        p, t = self.placeholder, self._table("zametano_tables")
        if game:
            rows = self._select(f"SELECT * FROM {t} WHERE game = {p} AND seq > {p} ORDER BY seq LIMIT {p}", (game, after, limit))
        else:
            rows = self._select(f"SELECT * FROM {t} WHERE seq > {p} ORDER BY seq LIMIT {p}", (after, limit))
        return [_decode_table(r) for r in rows]

    def list_rounds(self, table_id: str, after: int, limit: int) -> list[dict[str, Any]]:
        p = self.placeholder
        return self._select(
            f"SELECT * FROM {self._table('zametano_rounds')} WHERE table_id = {p} AND round > {p} ORDER BY round LIMIT {p}",
            (table_id, after, limit),
        )

    def get_shoes(self, table_id: str, numbers: list[int] | None = None) -> list[dict[str, Any]]:
        p, table = self.placeholder, self._table("zametano_shoes")
        if numbers is None:
            return self._select(f"SELECT * FROM {table} WHERE table_id = {p} ORDER BY shoe", (table_id,))
        if not numbers:
            return []
        marks = ", ".join([p] * len(numbers))
        return self._select(
            f"SELECT * FROM {table} WHERE table_id = {p} AND shoe IN ({marks}) ORDER BY shoe", (table_id, *numbers)
        )


class SQLiteIndexView(_SQLIndex, SQLiteTrackingRecorder):
    def construct_create_table_statements(self) -> list[str]:
        return super().construct_create_table_statements() + self._create_statements()

    def write(self, batch: IndexBatch, tracking: Any, read_at: int) -> None:
        with self.datastore.transaction(commit=True) as c:
            self._claim(c, "tracking", tracking, read_at)
            for sql, rows in self._upserts(batch):
                if rows:
                    c.executemany(sql, rows)

    def _select(self, sql: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
        with self.datastore.transaction(commit=False) as c:
            c.execute(sql, params)
            return [dict(zip(row.keys(), tuple(row))) for row in c.fetchall()]


class PostgresIndexView(_SQLIndex, PostgresTrackingRecorder):
    placeholder = "%s"

    def __init__(self, datastore: Any, **kwargs: Any) -> None:
        super().__init__(datastore, **kwargs)
        for statement in self._create_statements():
            self.sql_create_statements.append(SQL(statement))  # type: ignore[arg-type]

    def _table(self, name: str) -> str:
        return Identifier(self.datastore.schema, name).as_string()

    def write(self, batch: IndexBatch, tracking: Any, read_at: int) -> None:
        with self.datastore.transaction(commit=True) as curs:
            self._claim(curs, Identifier(self.datastore.schema, self.tracking_table_name).as_string(), tracking, read_at)
            for sql, rows in self._upserts(batch):
                if rows:
                    curs.executemany(sql, rows)  # type: ignore[arg-type]

    def _select(self, sql: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(sql, params)  # type: ignore[arg-type]
            return [dict(row) for row in curs.fetchall()]


class POPOIndexView(IndexView, POPOTrackingRecorder):
    """In memory, for the in-memory event store."""

    def __init__(self) -> None:
        super().__init__()
        self._tables: dict[str, dict[str, Any]] = {}
        self._rounds: dict[str, dict[int, dict[str, Any]]] = {}
        self._shoes: dict[str, dict[int, dict[str, Any]]] = {}

    def write(self, batch: IndexBatch, tracking: Any, read_at: int) -> None:
        with self._database_lock:
            if (self._max_tracking_ids[tracking.application_name] or 0) != read_at:
                raise IntegrityError(f"{tracking.application_name}: the read model moved on since it was read")
            for table_id, row in batch.tables.items():
                self._tables[table_id] = json.loads(json.dumps(row))
            for row in batch.rounds:
                self._rounds.setdefault(row["table_id"], {})[row["round"]] = dict(row)
            for (table_id, shoe), row in batch.shoes.items():
                self._shoes.setdefault(table_id, {})[shoe] = dict(row)
            self._insert_tracking(tracking)

    def get_tables(self, table_ids: list[str]) -> dict[str, dict[str, Any]]:
        with self._database_lock:
            return {t: json.loads(json.dumps(self._tables[t])) for t in table_ids if t in self._tables}

    def list_tables(self, game: str | None, after: int, limit: int) -> list[dict[str, Any]]:
        with self._database_lock:
            rows = sorted((r for r in self._tables.values() if r["seq"] > after and (not game or r["game"] == game)),
                          key=lambda r: r["seq"])
            return [json.loads(json.dumps(r)) for r in rows[:limit]]

    def list_rounds(self, table_id: str, after: int, limit: int) -> list[dict[str, Any]]:
        with self._database_lock:
            rounds = self._rounds.get(table_id, {})
            return [dict(rounds[n]) for n in sorted(rounds) if n > after][:limit]

    def get_shoes(self, table_id: str, numbers: list[int] | None = None) -> list[dict[str, Any]]:
        with self._database_lock:
            shoes = self._shoes.get(table_id, {})
            return [dict(shoes[n]) for n in sorted(shoes) if numbers is None or n in numbers]


VIEW_CLASSES: dict[str, type[IndexView]] = {
    "eventsourcing.sqlite": SQLiteIndexView,
    "eventsourcing.postgres": PostgresIndexView,
    "eventsourcing.popo": POPOIndexView,
}


class Indexer:
    """Catches the read model up from the notification log, one command-complete batch at a time."""

    BATCH = 500

    def __init__(self, app: Any, marks: dict[str, Any]) -> None:
        self.app = app
        self.marks = marks
        module = app.env.get("PERSISTENCE_MODULE", "eventsourcing.popo")
        view_class = VIEW_CLASSES.get(module)
        if view_class is None or view_class is POPOIndexView:
            self.view: IndexView = POPOIndexView()
        else:
            self.view = app.factory.tracking_recorder(view_class)

    def catch_up(self) -> None:
        while True:
            position = self.view.max_tracking_id(self.app.name) or 0
            notes = list(self.app.recorder.select_notifications(position, self.BATCH, inclusive_of_start=False))
            if not notes:
                return
            events = [self._decode(n) for n in notes]
            if len(notes) == self.BATCH:
                # End the batch at a command boundary, so that a round settled by its last command is whole.
                last, keep = events[-1], len(events)
                while keep > 0 and _same_command(events[keep - 1], last):
                    keep -= 1
                if keep > 0:
                    notes, events = notes[:keep], events[:keep]
            batch = self._build([(n.id, e) for n, e in zip(notes, events)])
            try:
                self.view.write(batch, Tracking(self.app.name, notes[-1].id), position)
            except IntegrityError:
                continue  # another process wrote this range first: read the position again

    def _decode(self, note: Any) -> Any:
        """A notification as its event; a stored row that cannot be read stops the read model there, named."""
        try:
            event = self.app.mapper.to_domain_event(note)
            if isinstance(event, TableEvent):
                event.public()  # a field missing from the stored form shows here
            return event
        except Exception as exc:  # noqa: BLE001 - whatever the damage, the row is unreadable
            version = note.originator_version
            raise DamagedLog(str(note.originator_id), f"the stored event at version {version} cannot be read",
                             version) from exc

    def _build(self, events: list[tuple[int, Any]]) -> IndexBatch:
        batch = IndexBatch()
        table_events = [(seq, e) for seq, e in events if isinstance(e, TableEvent)]
        known = self.view.get_tables(sorted({str(e.originator_id) for _, e in table_events}))
        trackers: dict[str, RoundTracker] = {}
        for seq, event in table_events:
            table_id = str(event.originator_id)
            data = event.public()
            row = batch.tables.get(table_id) or known.get(table_id)
            if row is None:
                if data["type"] != "TableOpened":
                    continue  # cannot happen in one log: every table starts with its opening
                row = {
                    "table_id": table_id, "seq": seq, "game": data["data"]["game"], "players": data["data"]["players"],
                    "opened_at": data["timestamp"], "version": 0, "updated_at": data["timestamp"], "rounds": 0,
                    "tracker": None,
                }
            batch.tables[table_id] = row
            tracker = trackers.get(table_id)
            if tracker is None:
                tracker = trackers[table_id] = RoundTracker(self.marks[row["game"]], row["tracker"])
            for finished in tracker.feed(data):
                batch.rounds.append({"table_id": table_id, **finished})
                row["rounds"] = finished["round"]
            row["version"], row["updated_at"] = data["version"], data["timestamp"]
            self._shoe(batch, table_id, data)
        # Every batch ends at a command boundary: a round whose settling command is in it is finished.
        for table_id, tracker in trackers.items():
            for finished in tracker.flush():
                batch.rounds.append({"table_id": table_id, **finished})
                batch.tables[table_id]["rounds"] = finished["round"]
            batch.tables[table_id]["tracker"] = tracker.state
        return batch

    def _shoe(self, batch: IndexBatch, table_id: str, e: dict[str, Any]) -> None:
        kind, data = e["type"], e["data"]
        if kind not in ("ShoeShuffled", "ShoeCut", "ShoeRevealed"):
            return
        key = (table_id, data["shoe"])
        if kind == "ShoeShuffled":
            batch.shoes[key] = {
                "table_id": table_id, "shoe": data["shoe"], "deck": data["deck"], "decks": data["decks"],
                "algorithm": data["algorithm"], "commitment": data["commitment"], "cut": 0, "seed": None,
                "shuffled_version": e["version"], "revealed_version": None,
            }
            return
        row = batch.shoes.get(key)
        if row is None:
            row = next(iter(self.view.get_shoes(table_id, [data["shoe"]])), None)
            if row is None:
                return
            batch.shoes[key] = row
        if kind == "ShoeCut":
            row["cut"] = data["position"]
        else:
            row["seed"], row["revealed_version"] = data["seed"], e["version"]


def _same_command(a: Any, b: Any) -> bool:
    return a.originator_id == b.originator_id and getattr(a, "command", None) == getattr(b, "command", None)
