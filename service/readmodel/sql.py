"""The SQL the read model's SQLite and PostgreSQL stores share: its tables, its writes and its queries.

Subclasses (service/readmodel/sqlite.py, service/readmodel/postgres.py) say how to run it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from eventsourcing.persistence import IntegrityError

from service.errors import IndexUnreadable
from service.readmodel.rows import (
    ROUND_COLUMNS,
    ROUNDS,
    SEALED_SHOE,
    SEALED_TABLE,
    SEAT_ROUND_COLUMNS,
    SEAT_ROUNDS,
    SHOE_COLUMNS,
    SHOES,
    TABLE_COLUMNS,
    TABLES,
    IndexBatch,
    IndexFailure,
    TableRows,
    describe,
    failure_of,
)
from service.readmodel.view import IndexView


class SQLIndexView(IndexView):
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
            f"CREATE TABLE IF NOT EXISTS {self._table(SEAT_ROUNDS)} (player TEXT NOT NULL, key BIGINT NOT NULL, "
            "table_id TEXT NOT NULL, round BIGINT NOT NULL, sealed TEXT NOT NULL, PRIMARY KEY (player, key))",
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
                    batch.failures[table_id] = failure_of(table_id, rows, exc)
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
        seat_rows = [
            (self.sealer.tag(row["player"]), row["key"], row["table_id"], row["round"], seal(row))
            for x in tables
            for row in x.seats
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
            (
                f"INSERT INTO {self._table(SEAT_ROUNDS)} ({', '.join(SEAT_ROUND_COLUMNS)}) "
                f"VALUES ({self._marks(len(SEAT_ROUND_COLUMNS))})",
                seat_rows,
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

    def seat_rounds(self, player: str, before: int, limit: int,
                    tables: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
        p = self.placeholder
        among = "" if tables is None else f"AND table_id IN ({self._marks(len(tables))}) " if tables else "AND FALSE "
        rows = self._select(
            f"SELECT table_id, sealed FROM {self._table(SEAT_ROUNDS)} WHERE player = {p} AND key < {p} {among}"
            f"ORDER BY key DESC LIMIT {p}",
            (self.sealer.tag(player), before, *(tables or ()), limit),
        )
        out = []
        for row in rows:
            try:
                out.append(self.sealer.open(row["sealed"]))
            except Exception as exc:  # noqa: BLE001
                raise IndexUnreadable(row["table_id"], describe(exc)) from None
        return out
