"""The read model in PostgreSQL, in the event store's own schema."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from eventsourcing.postgres import PostgresTrackingRecorder
from psycopg.sql import SQL, Identifier

from service.readmodel.rows import IndexBatch
from service.readmodel.sql import SQLIndexView


class PostgresIndexView(SQLIndexView, PostgresTrackingRecorder):
    placeholder = "%s"
    # DataError: a NUL in text, a number out of range; IntegrityError: a row that contradicts another.
    table_errors = (*SQLIndexView.table_errors, psycopg.DataError, psycopg.IntegrityError)

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
