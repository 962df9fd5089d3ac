"""The read model in SQLite, in the event store's own database file."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from eventsourcing.sqlite import SQLiteTrackingRecorder

from service.readmodel.rows import IndexBatch
from service.readmodel.sql import SQLIndexView


class SQLiteIndexView(SQLIndexView, SQLiteTrackingRecorder):
    table_errors = (*SQLIndexView.table_errors, sqlite3.DataError, sqlite3.IntegrityError)

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
