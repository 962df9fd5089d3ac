"""The read model: every table, every finished round and every shoe, kept up to date from the event log.

The read model follows the application's notification log: a follower thread (service/follower.py), or a
query where none runs, hands the Indexer the notifications after the last one tracked; it turns them into
rows and writes the rows and the new tracking position in one transaction of the event store's own database.
Two processes (or a follower and a query) indexing at once cannot both write the same position (the
tracking row refuses the second), so the loser re-reads and nothing is counted twice. Queries read these
rows; none scans the events.

What one table holds cannot stop the others: the events of a batch are turned into rows table by table,
and a table whose events cannot be read, projected or written is recorded as failed at that version (its
rows stay as they were before the batch, never half-written) while the position moves on for every other
table. A failed table is not indexed further; listing, rounds and audits say so.

Columns hold only what queries filter and sort on (ids, game, versions, times, counts). Everything else
(names, amounts, round summaries, shoes) is one JSON text per row: ASCII only, so no character of a
name can break a text column, and encrypted with the event store's cipher when one is configured, so the
read model never shows what the encrypted events hide.
"""

from __future__ import annotations

import base64
import json
import logging
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg
import psycopg_pool
from eventsourcing.persistence import IntegrityError, MapperDeserialisationError, Tracking, TrackingRecorder
from eventsourcing.popo import POPOTrackingRecorder
from eventsourcing.postgres import PostgresTrackingRecorder
from eventsourcing.sqlite import SQLiteTrackingRecorder
from eventsourcing.utils import resolve_topic
from psycopg.sql import SQL, Identifier

from domain.rounds import RoundTracker
from domain.table import TableEvent
from service.errors import IndexUnreadable
from service.follower import Follower

log = logging.getLogger("zametano.read_model")

# The read model's tables and its tracking position carry a version: a read model of another layout is
# left alone and this one is built afresh from the log (it is derived, so nothing is lost).
TABLES, ROUNDS, SHOES = "zametano_tables_v2", "zametano_rounds_v2", "zametano_shoes_v2"
POSITION = "zametano-read-model-v2"
TABLE_COLUMNS = ("table_id", "seq", "game", "opened_at", "version", "updated_at", "rounds", "sealed")
ROUND_COLUMNS = ("table_id", "round", "first_version", "last_version", "started_at", "ended_at", "sealed")
SHOE_COLUMNS = ("table_id", "shoe", "shuffled_version", "revealed_version", "sealed")
SEALED_TABLE = ("players", "tracker")
SEALED_SHOE = ("deck", "decks", "algorithm", "commitment", "cut", "seed")
MESSAGE_LENGTH = 300
# A notification to index: its id (the table's ``seq`` when it opens it), its event (or Unreadable), and the
# event as the events API shows it (None for an unreadable one).
Item = tuple[int, Any, "dict[str, Any] | None"]
# How long a query waits for the follower to index what was recorded before it, before it does it itself.
FOLLOWER_WAIT = 2.0


class Sealer:
    """Turns what the read model must not show in clear into one text column and back: JSON with every
    non-ASCII character escaped (so a NUL in a name is six harmless characters), encrypted and base64-encoded
    when the event store has a cipher."""

    def __init__(self, cipher: Any = None) -> None:
        self.cipher = cipher

    def seal(self, value: Any) -> str:
        text = json.dumps(value, separators=(",", ":"))
        if self.cipher is None:
            return text
        return base64.b64encode(self.cipher.encrypt(text.encode("ascii"))).decode("ascii")

    def open(self, text: str) -> Any:
        if self.cipher is not None:
            text = self.cipher.decrypt(base64.b64decode(text)).decode("ascii")
        return json.loads(text)


@dataclass
class TableRows:
    """One table's rows after a batch: its row, the rounds it finished, the shoes it touched."""

    first_version: int
    table: dict[str, Any]
    rounds: list[dict[str, Any]] = field(default_factory=list)
    shoes: dict[int, dict[str, Any]] = field(default_factory=dict)


@dataclass
class IndexFailure:
    """A table the read model could not index: where (``version``), why, and enough of the table to list it
    if the read model did not hold it yet."""

    table_id: str
    version: int
    message: str
    seq: int
    game: str | None = None
    opened_at: str | None = None


@dataclass
class IndexBatch:
    """Rows to write with one tracking position, table by table, and the tables that failed."""

    tables: dict[str, TableRows] = field(default_factory=dict)
    failures: dict[str, IndexFailure] = field(default_factory=dict)


class IndexView(TrackingRecorder, ABC):
    sealer = Sealer()

    @abstractmethod
    def write(self, batch: IndexBatch, tracking: Any, read_at: int) -> None:
        """Writes the rows and moves the tracking position from ``read_at`` on, in one transaction that first
        claims the position: if another process moved it since it was read, IntegrityError and nothing is
        written. Claiming the position first also makes writers queue on one row, so they cannot deadlock.
        A table whose rows the database refuses is written as failed instead (added to ``batch.failures``)."""

    @abstractmethod
    def get_tables(self, table_ids: list[str]) -> dict[str, dict[str, Any]]: ...

    @abstractmethod
    def list_tables(self, game: str | None, after: int, limit: int) -> list[dict[str, Any]]: ...

    @abstractmethod
    def list_rounds(self, table_id: str, after: int, limit: int) -> list[dict[str, Any]]: ...

    @abstractmethod
    def get_shoes(self, table_id: str, numbers: list[int] | None = None) -> list[dict[str, Any]]:
        """The table's shoes, or only those numbered."""


def describe(exc: BaseException) -> str:
    """An exception in one short line, without the stored text it may be about."""
    if isinstance(exc, MapperDeserialisationError) and exc.__cause__ is not None:
        text = f"the stored event cannot be read ({type(exc.__cause__).__name__}: {exc.__cause__})"
    else:
        text = f"{type(exc).__name__}: {exc}"
    text = " ".join(text.split())
    return text if len(text) <= MESSAGE_LENGTH else text[: MESSAGE_LENGTH - 3] + "..."


def _failure_of(table_id: str, rows: TableRows, exc: BaseException) -> IndexFailure:
    table = rows.table
    return IndexFailure(
        table_id,
        rows.first_version,
        f"versions {rows.first_version} to {table['version']} could not be written: {describe(exc)}",
        table["seq"],
        table["game"],
        table["opened_at"],
    )


class _SQLIndex(IndexView):
    """The SQL both databases share; subclasses say how to run it."""

    placeholder = "?"
    # What a database refuses because of one table's values; anything else (a lost connection, a lock
    # timeout, a missing table) fails the whole write, so that no table is marked failed for it.
    table_errors: tuple[type[BaseException], ...] = (ValueError, TypeError, OverflowError)

    def _table(self, name: str) -> str:
        return name

    def _marks(self, n: int) -> str:
        return ", ".join([self.placeholder] * n)

    def _create_statements(self) -> list[str]:
        t, r, s = self._table(TABLES), self._table(ROUNDS), self._table(SHOES)
        return [
            f"CREATE TABLE IF NOT EXISTS {t} (table_id TEXT PRIMARY KEY, seq BIGINT NOT NULL, game TEXT, "
            "opened_at TEXT, version BIGINT NOT NULL, updated_at TEXT, rounds BIGINT NOT NULL, sealed TEXT NOT NULL, "
            "error_version BIGINT, error TEXT)",
            f"CREATE INDEX IF NOT EXISTS {TABLES}_by_seq ON {t} (seq)",
            f"CREATE INDEX IF NOT EXISTS {TABLES}_by_game ON {t} (game, seq)",
            f"CREATE TABLE IF NOT EXISTS {r} (table_id TEXT NOT NULL, round BIGINT NOT NULL, "
            "first_version BIGINT NOT NULL, last_version BIGINT NOT NULL, started_at TEXT NOT NULL, "
            "ended_at TEXT NOT NULL, sealed TEXT NOT NULL, PRIMARY KEY (table_id, round))",
            f"CREATE TABLE IF NOT EXISTS {s} (table_id TEXT NOT NULL, shoe BIGINT NOT NULL, "
            "shuffled_version BIGINT NOT NULL, revealed_version BIGINT, sealed TEXT NOT NULL, "
            "PRIMARY KEY (table_id, shoe))",
        ]

    # --- writing ---------------------------------------------------------------------------------

    @contextmanager
    def _savepoint(self, cursor: Any) -> Iterator[None]:
        raise NotImplementedError

    def _write(self, cursor: Any, batch: IndexBatch, tracking: Any, read_at: int, tracking_table: str) -> None:
        self._claim(cursor, tracking_table, tracking, read_at)
        try:
            with self._savepoint(cursor):
                self._write_rows(cursor, list(batch.tables.values()))
        except self.table_errors:
            # One table's values were refused: write table by table, so that only that one fails.
            for table_id, rows in batch.tables.items():
                try:
                    with self._savepoint(cursor):
                        self._write_rows(cursor, [rows])
                except self.table_errors as exc:
                    batch.failures[table_id] = _failure_of(table_id, rows, exc)
        if batch.failures:
            self._write_failures(cursor, list(batch.failures.values()))

    def _write_rows(self, cursor: Any, tables: list[TableRows]) -> None:
        seal = self.sealer.seal
        t, r, s = self._table(TABLES), self._table(ROUNDS), self._table(SHOES)
        table_rows = [
            (*(x.table[c] for c in TABLE_COLUMNS[:-1]), seal({k: x.table[k] for k in SEALED_TABLE})) for x in tables
        ]
        round_rows = [(*(row[c] for c in ROUND_COLUMNS[:-1]), seal(row["summary"])) for x in tables for row in x.rounds]
        shoe_rows = [
            (*(row[c] for c in SHOE_COLUMNS[:-1]), seal({k: row[k] for k in SEALED_SHOE}))
            for x in tables
            for row in x.shoes.values()
        ]
        statements = [
            (
                f"INSERT INTO {t} ({', '.join(TABLE_COLUMNS)}) VALUES ({self._marks(len(TABLE_COLUMNS))}) "
                "ON CONFLICT (table_id) DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at, "
                "rounds = excluded.rounds, sealed = excluded.sealed",
                table_rows,
            ),
            (f"INSERT INTO {r} ({', '.join(ROUND_COLUMNS)}) VALUES ({self._marks(len(ROUND_COLUMNS))})", round_rows),
            (
                f"INSERT INTO {s} ({', '.join(SHOE_COLUMNS)}) VALUES ({self._marks(len(SHOE_COLUMNS))}) "
                "ON CONFLICT (table_id, shoe) DO UPDATE SET revealed_version = excluded.revealed_version, "
                "sealed = excluded.sealed",
                shoe_rows,
            ),
        ]
        for sql, rows in statements:
            if rows:
                cursor.executemany(sql, rows)

    def _write_failures(self, cursor: Any, failures: list[IndexFailure]) -> None:
        """A failed table keeps the rows it had; one the read model did not hold yet is listed with nothing
        indexed (version 0), so that it shows up with its failure."""
        columns = (*TABLE_COLUMNS, "error_version", "error")
        rows = [
            (f.table_id, f.seq, f.game, f.opened_at, 0, f.opened_at, 0, self.sealer.seal({"players": [], "tracker": None}),
             f.version, self.sealer.seal(f.message))
            for f in failures
        ]
        cursor.executemany(
            f"INSERT INTO {self._table(TABLES)} ({', '.join(columns)}) VALUES ({self._marks(len(columns))}) "
            "ON CONFLICT (table_id) DO UPDATE SET error_version = excluded.error_version, error = excluded.error",
            rows,
        )

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

    # --- reading ---------------------------------------------------------------------------------

    def _select(self, sql: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
        raise NotImplementedError

    def _open_table(self, row: dict[str, Any]) -> dict[str, Any]:
        """A table's row as callers see it; one that cannot be opened is shown failed, never raised, so that
        it cannot stop a listing of other tables."""
        out = {k: row[k] for k in TABLE_COLUMNS[:-1]}
        out["index_error"] = None
        try:
            out.update(self.sealer.open(row["sealed"]))
        except Exception as exc:  # noqa: BLE001 - whatever it is, it belongs to this table alone
            out.update(players=[], tracker=None)
            message = IndexUnreadable(row["table_id"], describe(exc)).message
            out["index_error"] = {"version": row["version"] + 1, "message": message}
        if row["error_version"] is not None:
            try:
                message = self.sealer.open(row["error"])
            except Exception as exc:  # noqa: BLE001
                message = IndexUnreadable(row["table_id"], describe(exc)).message
            out["index_error"] = {"version": row["error_version"], "message": message}
        return out

    def _open(self, table_id: str, rows: list[dict[str, Any]], names: tuple[str, ...] | None) -> list[dict[str, Any]]:
        out = []
        for row in rows:
            try:
                opened = self.sealer.open(row.pop("sealed"))
            except Exception as exc:  # noqa: BLE001
                raise IndexUnreadable(table_id, describe(exc)) from None
            out.append({**row, **(opened if names else {"summary": opened})})
        return out

    def get_tables(self, table_ids: list[str]) -> dict[str, dict[str, Any]]:
        if not table_ids:
            return {}
        rows = self._select(
            f"SELECT * FROM {self._table(TABLES)} WHERE table_id IN ({self._marks(len(table_ids))})", tuple(table_ids)
        )
        return {row["table_id"]: self._open_table(row) for row in rows}

    def list_tables(self, game: str | None, after: int, limit: int) -> list[dict[str, Any]]:
        p, t = self.placeholder, self._table(TABLES)
        if game:
            rows = self._select(f"SELECT * FROM {t} WHERE game = {p} AND seq > {p} ORDER BY seq LIMIT {p}", (game, after, limit))
        else:
            rows = self._select(f"SELECT * FROM {t} WHERE seq > {p} ORDER BY seq LIMIT {p}", (after, limit))
        return [self._open_table(r) for r in rows]

    def list_rounds(self, table_id: str, after: int, limit: int) -> list[dict[str, Any]]:
        p = self.placeholder
        rows = self._select(
            f"SELECT * FROM {self._table(ROUNDS)} WHERE table_id = {p} AND round > {p} ORDER BY round LIMIT {p}",
            (table_id, after, limit),
        )
        return self._open(table_id, rows, None)

    def get_shoes(self, table_id: str, numbers: list[int] | None = None) -> list[dict[str, Any]]:
        p, table = self.placeholder, self._table(SHOES)
        if numbers is None:
            rows = self._select(f"SELECT * FROM {table} WHERE table_id = {p} ORDER BY shoe", (table_id,))
        elif not numbers:
            return []
        else:
            rows = self._select(
                f"SELECT * FROM {table} WHERE table_id = {p} AND shoe IN ({self._marks(len(numbers))}) ORDER BY shoe",
                (table_id, *numbers),
            )
        return self._open(table_id, rows, SEALED_SHOE)


class SQLiteIndexView(_SQLIndex, SQLiteTrackingRecorder):
    table_errors = (*_SQLIndex.table_errors, sqlite3.DataError, sqlite3.IntegrityError)

    def construct_create_table_statements(self) -> list[str]:
        return super().construct_create_table_statements() + self._create_statements()

    @contextmanager
    def _savepoint(self, cursor: Any) -> Iterator[None]:
        cursor.execute("SAVEPOINT zametano_index")
        try:
            yield
        except BaseException:
            cursor.execute("ROLLBACK TO zametano_index")
            cursor.execute("RELEASE zametano_index")
            raise
        cursor.execute("RELEASE zametano_index")

    def write(self, batch: IndexBatch, tracking: Any, read_at: int) -> None:
        with self.datastore.transaction(commit=True) as c:
            self._write(c, batch, tracking, read_at, "tracking")

    def _select(self, sql: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
        with self.datastore.transaction(commit=False) as c:
            c.execute(sql, params)
            return [dict(zip(row.keys(), tuple(row))) for row in c.fetchall()]


class PostgresIndexView(_SQLIndex, PostgresTrackingRecorder):
    placeholder = "%s"
    # DataError: a NUL in text, a number out of range; IntegrityError: a row that contradicts another.
    table_errors = (*_SQLIndex.table_errors, psycopg.DataError, psycopg.IntegrityError)

    def __init__(self, datastore: Any, **kwargs: Any) -> None:
        super().__init__(datastore, **kwargs)
        for statement in self._create_statements():
            self.sql_create_statements.append(SQL(statement))  # type: ignore[arg-type]

    def _table(self, name: str) -> str:
        return Identifier(self.datastore.schema, name).as_string()

    @contextmanager
    def _savepoint(self, cursor: Any) -> Iterator[None]:
        with cursor.connection.transaction():  # nested in the write's transaction: a savepoint
            yield

    def write(self, batch: IndexBatch, tracking: Any, read_at: int) -> None:
        with self.datastore.transaction(commit=True) as curs:
            tracking_table = Identifier(self.datastore.schema, self.tracking_table_name).as_string()
            self._write(curs, batch, tracking, read_at, tracking_table)

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
            for table_id, rows in batch.tables.items():
                try:  # copies made first, so that a table that cannot be copied changes nothing
                    table, rounds, shoes = json.loads(json.dumps([rows.table, rows.rounds, list(rows.shoes.items())]))
                except (TypeError, ValueError) as exc:
                    batch.failures[table_id] = _failure_of(table_id, rows, exc)
                    continue
                self._tables[table_id] = table
                for row in rounds:
                    self._rounds.setdefault(table_id, {})[row["round"]] = row
                for shoe, row in shoes:
                    self._shoes.setdefault(table_id, {})[shoe] = row
            for f in batch.failures.values():
                table = self._tables.setdefault(f.table_id, {
                    "table_id": f.table_id, "seq": f.seq, "game": f.game, "opened_at": f.opened_at, "version": 0,
                    "updated_at": f.opened_at, "rounds": 0, "players": [], "tracker": None,
                })
                table["index_error"] = {"version": f.version, "message": f.message}
            self._insert_tracking(tracking)

    @staticmethod
    def _copy(row: dict[str, Any]) -> dict[str, Any]:
        return {"index_error": None, **json.loads(json.dumps(row))}

    def get_tables(self, table_ids: list[str]) -> dict[str, dict[str, Any]]:
        with self._database_lock:
            return {t: self._copy(self._tables[t]) for t in table_ids if t in self._tables}

    def list_tables(self, game: str | None, after: int, limit: int) -> list[dict[str, Any]]:
        with self._database_lock:
            rows = sorted((r for r in self._tables.values() if r["seq"] > after and (not game or r["game"] == game)),
                          key=lambda r: r["seq"])
            return [self._copy(r) for r in rows[:limit]]

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


class Indexer:
    """Keeps the read model up to date from the notification log, one command-complete batch at a time: fed
    by a follower in the background (service/follower.py) or, where none runs, by the query that needs it."""

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
        self.view.sealer = Sealer(app.mapper.cipher)
        self.store_checked = False
        self.follower: Follower | None = None
        self.follower_wait = FOLLOWER_WAIT
        self._known = 0  # the highest position seen, by this process's reads and writes
        self._moved = threading.Condition()

    # --- following in the background ------------------------------------------------------------------

    def follow(self, publisher: Any = None) -> None:
        """Starts a thread that indexes events as they are recorded (stopped by close()), telling ``publisher``
        (service/streams.py) of each list it reads. Not on a PostgreSQL pool of a single connection, which the
        follower's LISTEN would keep from every request."""
        pool = getattr(getattr(self.app.factory, "datastore", None), "pool", None)
        if isinstance(pool, psycopg_pool.ConnectionPool) and pool.max_size < 2:
            log.warning("the read model is not followed in the background: the connection pool holds one "
                        "connection (POSTGRES_POOL_SIZE + POSTGRES_MAX_OVERFLOW); queries index what they need")
            return
        self.follower = Follower(self, self.app.recorder, publisher)
        self.follower.start()

    def close(self) -> None:
        if self.follower is not None:
            self.follower.stop()

    # --- positions ------------------------------------------------------------------------------------

    def position(self) -> int:
        """The last notification the read model holds, as its database says now."""
        position = self.view.max_tracking_id(POSITION) or 0
        self._observe(position)
        return position

    def _observe(self, position: int) -> None:
        with self._moved:
            if position > self._known:
                self._known = position
                self._moved.notify_all()

    def wait_for(self, position: int, timeout: float) -> bool:
        """True once this process has seen the read model at ``position`` or past it; False after ``timeout``."""
        with self._moved:
            return self._moved.wait_for(lambda: self._known >= position, timeout)

    def status(self) -> dict[str, Any]:
        """How far the read model is behind the log: ``lag`` in events (notifications), 0 when current."""
        head = self.app.recorder.max_notification_id() or 0
        position = self.position()
        following = self.follower is not None and self.follower.running
        return {"position": position, "head": head, "lag": max(0, head - position), "following": following}

    # --- indexing -------------------------------------------------------------------------------------

    def bring_up_to_date(self) -> None:
        """Returns once the read model holds every event recorded before the call. The follower, when it runs,
        is woken and waited for (at most ``follower_wait`` seconds); without one, or if it does not get there in
        time, the caller indexes what is missing itself."""
        head = self.app.recorder.max_notification_id() or 0
        if self.position() >= head:
            return
        follower = self.follower
        if follower is not None and follower.running:
            follower.hurry()
            if self.wait_for(head, self.follower_wait):
                return
        self.catch_up()

    def catch_up(self) -> None:
        """Indexes everything recorded so far, reading the log from the read model's position."""
        self._check_store()
        while True:
            position = self.position()
            notes = list(self.app.recorder.select_notifications(position, self.BATCH, inclusive_of_start=False))
            if not notes:
                return
            try:
                self._index(notes, position, whole=len(notes) < self.BATCH)
            except IntegrityError:
                continue  # another process (or the follower) wrote this range first: read the position again

    def take(self, notes: list[Any], whole: bool) -> list[Any]:
        """Indexes notifications the follower's subscription read, those past the read model's position, in
        batches of at most BATCH; returns those held back (the start of a command the last list cut off, when
        not ``whole``)."""
        while len(notes) > self.BATCH:
            notes = self._take(notes[: self.BATCH], whole=False) + notes[self.BATCH :]
        return self._take(notes, whole)

    def _take(self, notes: list[Any], whole: bool) -> list[Any]:
        self._check_store()
        while True:
            position = self.position()
            notes = [n for n in notes if n.id > position]
            if not notes:
                return []
            try:
                return self._index(notes, position, whole)
            except IntegrityError:
                continue  # written meanwhile by another process or a query: what is past it is still to do

    def _check_store(self) -> None:
        if not self.store_checked:
            # A wrong key would make every event unreadable, and every table would be recorded as failed
            # for good: refuse to index anything until the configuration reads what is stored.
            self.app.check_store()
            self.store_checked = True

    def _index(self, notes: list[Any], position: int, whole: bool) -> list[Any]:
        """Writes the rows of ``notes`` with the new position, in one transaction; IntegrityError if the
        position moved from ``position`` meanwhile. Unless the notes are ``whole`` (they end where the log
        ended when they were read), the last command may be cut off: it is held back and returned, so that
        a round settled by its last command is indexed whole."""
        decoded = [self._decode(n) for n in notes]
        keep = len(notes) if whole else _commands_end([event for event, _ in decoded])
        batch = self._build([(n.id, *d) for n, d in zip(notes[:keep], decoded[:keep])])
        self.view.write(batch, Tracking(POSITION, notes[keep - 1].id), position)
        self._observe(notes[keep - 1].id)
        return notes[keep:]

    def _decode(self, note: Any) -> tuple[Any, dict[str, Any] | None]:
        """A notification as its event, and a table's event as the events API shows it (which the rows are made
        of); a stored row that cannot be read is recorded against its table alone."""
        try:
            event = self.app.mapper.to_domain_event(note)
            # a field missing from the stored form shows here
            return event, event.public() if isinstance(event, TableEvent) else None
        except Exception as exc:  # noqa: BLE001 - recorded against its table, never raised to a reader
            return Unreadable(note.originator_id, note.originator_version, note.topic, exc), None

    def _build(self, events: list[Item]) -> IndexBatch:
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
        rows: TableRows | None = None
        tracker: RoundTracker | None = None
        for seq, event, data in items:
            try:
                if isinstance(event, Unreadable):
                    raise event.error
                if row is None:
                    row = self._opening(table_id, seq, data)
                if rows is None:
                    rows = TableRows(first_version=data["version"], table=row)
                if tracker is None:
                    tracker = RoundTracker(self.marks[row["game"]], row["tracker"])
                for finished in tracker.feed(data):
                    rows.rounds.append({"table_id": table_id, **finished})
                    row["rounds"] = finished["round"]
                row["version"], row["updated_at"] = data["version"], data["timestamp"]
                self._shoe(rows, table_id, data)
            except Exception as exc:  # noqa: BLE001 - any failure is this table's alone
                raise ProjectionFailed(event.originator_version, exc) from exc
        assert rows is not None and tracker is not None and row is not None
        try:
            # Every batch ends at a command boundary: a round whose settling command is in it is finished.
            for finished in tracker.flush():
                rows.rounds.append({"table_id": table_id, **finished})
                row["rounds"] = finished["round"]
        except Exception as exc:  # noqa: BLE001
            raise ProjectionFailed(items[-1][1].originator_version, exc) from exc
        row["tracker"] = tracker.state
        return rows

    def _opening(self, table_id: str, seq: int, data: dict[str, Any]) -> dict[str, Any]:
        if data["type"] != "TableOpened":
            raise ValueError(f"the table's first event is {data['type']}, not TableOpened")
        game = data["data"]["game"]
        if game not in self.marks:
            raise ValueError(f"unknown game {game!r}")
        return {
            "table_id": table_id, "seq": seq, "game": game, "players": data["data"]["players"],
            "opened_at": data["timestamp"], "version": 0, "updated_at": data["timestamp"], "rounds": 0,
            "tracker": None, "index_error": None,
        }

    def _failure(
        self, table_id: str, row: dict[str, Any] | None, items: list[Item], failed: ProjectionFailed
    ) -> IndexFailure:
        seq, first, _ = items[0]
        game = opened_at = None
        if row is None and isinstance(first, TableEvent) and first.type == "TableOpened":
            game = first.game if first.game in self.marks else None  # type: ignore[attr-defined]
            opened_at = first.timestamp_text
        return IndexFailure(table_id, failed.version, failed.message, seq, game, opened_at)

    def _shoe(self, rows: TableRows, table_id: str, e: dict[str, Any]) -> None:
        kind, data = e["type"], e["data"]
        if kind not in ("ShoeShuffled", "ShoeCut", "ShoeRevealed"):
            return
        number = data["shoe"]
        if not isinstance(number, int) or isinstance(number, bool):
            raise ValueError(f"the shoe number {number!r} is not a whole number")
        if kind == "ShoeShuffled":
            rows.shoes[number] = {
                "table_id": table_id, "shoe": number, "deck": data["deck"], "decks": data["decks"],
                "algorithm": data["algorithm"], "commitment": data["commitment"], "cut": 0, "seed": None,
                "shuffled_version": e["version"], "revealed_version": None,
            }
            return
        row = rows.shoes.get(number)
        if row is None:
            row = next(iter(self.view.get_shoes(table_id, [number])), None)
            if row is None:
                return
            rows.shoes[number] = row
        if kind == "ShoeCut":
            row["cut"] = data["position"]
        else:
            row["seed"], row["revealed_version"] = data["seed"], e["version"]


def _kind(e: Any) -> bool | None:
    """True for a table's event, False for an unreadable one whose class cannot be resolved, None otherwise."""
    if isinstance(e, TableEvent):
        return True
    if not isinstance(e, Unreadable):
        return None
    try:
        cls = resolve_topic(e.topic)
    except Exception:  # noqa: BLE001 - a class that no longer exists: its table is found by its id
        return False
    return True if isinstance(cls, type) and issubclass(cls, TableEvent) else None


def _commands_end(events: list[Any]) -> int:
    """How many of ``events`` end at a command boundary: all but the last command's (all, if there is only one)."""
    last, keep = events[-1], len(events)
    while keep > 0 and _same_command(events[keep - 1], last):
        keep -= 1
    return keep or len(events)


def _same_command(a: Any, b: Any) -> bool:
    return a.originator_id == b.originator_id and getattr(a, "command", None) == getattr(b, "command", None)
