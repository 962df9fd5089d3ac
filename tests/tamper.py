"""Rewriting a table's stored events as someone with write access to the database could: in place, by
deleting rows, or re-chained (every digest recomputed after the change, so the log is consistent with
itself and only something kept outside the database can tell)."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from domain.chain import digest, format_timestamp

# Keys of a stored event's JSON that are not its data (DESIGN.md's envelope, as the library stores it).
ENVELOPE = ("timestamp", "originator_topic", "actor", "digest", "command")

Edit = Callable[[int, str, dict[str, Any]], dict[str, Any] | None]


class Store:
    """The raw rows of one store, SQLite or PostgreSQL, named by the same settings the service reads."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.sqlite = env["PERSISTENCE_MODULE"] == "eventsourcing.sqlite"

    @contextmanager
    def _db(self) -> Iterator[Any]:
        if self.sqlite:
            db = sqlite3.connect(self.env["SQLITE_DBNAME"])
            try:
                with db:
                    yield db
            finally:
                db.close()
        else:
            import psycopg

            with psycopg.connect(host=self.env["POSTGRES_HOST"], port=self.env.get("POSTGRES_PORT", "5432"),
                                 user=self.env["POSTGRES_USER"], dbname=self.env["POSTGRES_DBNAME"],
                                 autocommit=True) as db:
                yield db

    def _sql(self, text: str) -> str:
        if self.sqlite:
            return text.format(events="stored_events", snapshots="stored_snapshots").replace("%s", "?")
        schema = self.env.get("POSTGRES_SCHEMA", "public")
        return text.format(events=f"{schema}.zametano_events", snapshots=f"{schema}.zametano_snapshots")

    def _id(self, table_id: str) -> Any:
        return uuid.UUID(table_id).hex if self.sqlite else table_id

    def rows(self, table_id: str) -> list[tuple[int, str, bytes]]:
        """(version, topic, stored state) of every stored event of the table, in version order."""
        with self._db() as db:
            found = db.execute(
                self._sql("SELECT originator_version, topic, state FROM {events} WHERE originator_id = %s "
                          "ORDER BY originator_version"),
                (self._id(table_id),),
            ).fetchall()
        return [(v, t, bytes(s)) for v, t, s in found]

    def put(self, table_id: str, version: int, state: bytes) -> None:
        with self._db() as db:
            db.execute(self._sql("UPDATE {events} SET state = %s WHERE originator_id = %s AND originator_version = %s"),
                       (state, self._id(table_id), version))

    def delete(self, table_id: str, versions: list[int], snapshots: bool = False) -> None:
        """Deletes the events at ``versions``; with ``snapshots``, also every snapshot at or after the first."""
        with self._db() as db:
            for v in versions:
                db.execute(self._sql("DELETE FROM {events} WHERE originator_id = %s AND originator_version = %s"),
                           (self._id(table_id), v))
            if snapshots and versions:
                db.execute(self._sql("DELETE FROM {snapshots} WHERE originator_id = %s AND originator_version >= %s"),
                           (self._id(table_id), min(versions)))

    def truncate(self, table_id: str, keep: int, snapshots: bool = True) -> None:
        """Drops every event after version ``keep`` (and, by default, the snapshots past it)."""
        last = self.rows(table_id)[-1][0]
        self.delete(table_id, list(range(keep + 1, last + 1)), snapshots=snapshots)

    def rechain(self, table_id: str, edit: Edit) -> list[int]:
        """Applies ``edit(version, type, event)`` to every stored event (it returns the changed event, or
        None to leave it), then recomputes every digest from the first change on, so the chain holds again.
        Returns the versions the edit changed."""
        changed: list[int] = []
        prev = ""
        for version, topic, state in self.rows(table_id):
            event = json.loads(state)
            type_ = topic.rsplit(":", 1)[-1]
            new = edit(version, type_, dict(event))
            if new is not None and new != event:
                changed.append(version)
                event = new
            if changed:
                data = {k: v for k, v in event.items() if k not in ENVELOPE}
                moment = format_timestamp(datetime.fromisoformat(event["timestamp"]["_data_"]))
                event["digest"] = digest(prev, version, type_, moment, event["actor"], data)
                self.put(table_id, version, json.dumps(event, separators=(",", ":")).encode())
            prev = event["digest"]
        return changed
