"""Direct edits of a test store's rows, as anyone with access to the database could make them."""

from __future__ import annotations

import json
import sqlite3
import uuid
from contextlib import closing
from datetime import datetime, timedelta, timezone
from typing import Any

from domain.chain import digest, format_timestamp


class Rows:
    """One table's stored events and snapshots in an SQLite file or a PostgreSQL schema."""

    def __init__(self, env: dict[str, str], table_id: str) -> None:
        self.env = env
        self.sqlite = env["PERSISTENCE_MODULE"] == "eventsourcing.sqlite"
        self.table_id = table_id
        if self.sqlite:
            self.events, self.snapshots, self.mark = "stored_events", "stored_snapshots", "?"
            self.key: Any = uuid.UUID(table_id).hex
        else:
            schema = env["POSTGRES_SCHEMA"]
            self.events, self.snapshots, self.mark = f"{schema}.zametano_events", f"{schema}.zametano_snapshots", "%s"
            self.key = table_id

    def _run(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        return self._batch(sql, [params])

    def _batch(self, sql: str, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        """Runs ``sql`` once per row of parameters on one connection; the last run's result rows."""
        sql = sql.replace("?", self.mark)
        found: list[tuple[Any, ...]] = []
        if self.sqlite:
            with closing(sqlite3.connect(self.env["SQLITE_DBNAME"])) as db, db:
                for params in rows:
                    found = db.execute(sql, params).fetchall()
            return found
        import psycopg

        with psycopg.connect(host=self.env["POSTGRES_HOST"], user=self.env["POSTGRES_USER"],
                             dbname=self.env["POSTGRES_DBNAME"]) as db:  # one transaction, committed on exit
            for params in rows:
                cursor = db.execute(sql, params)
                found = cursor.fetchall() if cursor.description else []
        return found

    def versions(self) -> list[int]:
        return [v for (v,) in self._run(
            f"SELECT originator_version FROM {self.events} WHERE originator_id = ? ORDER BY originator_version",
            self.key)]

    def snapshot_versions(self) -> list[int]:
        return [v for (v,) in self._run(
            f"SELECT originator_version FROM {self.snapshots} WHERE originator_id = ? ORDER BY originator_version",
            self.key)]

    def state(self, version: int) -> dict[str, Any]:
        (state,) = self._run(f"SELECT state FROM {self.events} WHERE originator_id = ? AND originator_version = ?",
                             self.key, version)[0]
        return json.loads(bytes(state))

    def write(self, version: int, state: dict[str, Any] | bytes) -> None:
        raw = state if isinstance(state, bytes) else json.dumps(state, separators=(",", ":")).encode()
        self._run(f"UPDATE {self.events} SET state = ? WHERE originator_id = ? AND originator_version = ?",
                  raw, self.key, version)

    def delete(self, first: int, last: int | None = None) -> None:
        """Deletes the events from ``first`` to ``last`` (to the end when None)."""
        self._run(f"DELETE FROM {self.events} WHERE originator_id = ? AND originator_version >= ? "
                  "AND originator_version <= ?", self.key, first, last if last is not None else 2**62)

    def drop_snapshots(self) -> None:
        self._run(f"DELETE FROM {self.snapshots} WHERE originator_id = ?", self.key)

    def exchange(self, a: int, b: int) -> None:
        """Exchanges the contents (type and state) of two rows; each keeps its version."""
        query = f"SELECT topic, state FROM {self.events} WHERE originator_id = ? AND originator_version = ?"
        (topic_a, state_a), (topic_b, state_b) = self._run(query, self.key, a)[0], self._run(query, self.key, b)[0]
        update = f"UPDATE {self.events} SET topic = ?, state = ? WHERE originator_id = ? AND originator_version = ?"
        self._run(update, topic_b, bytes(state_b), self.key, a)
        self._run(update, topic_a, bytes(state_a), self.key, b)

    def shift_time(self, service: Any, by: timedelta) -> None:
        """Moves every event's timestamp by ``by`` and recomputes every digest, so the chain holds."""
        stored = dict(self._run(f"SELECT originator_version, state FROM {self.events} WHERE originator_id = ?",
                                self.key))
        prev, updates = "", []
        for event in service.events.get(uuid.UUID(self.table_id)):
            state = json.loads(bytes(stored[event.originator_version]))
            moment = datetime.fromisoformat(state["timestamp"]["_data_"]) + by
            state["timestamp"]["_data_"] = moment.isoformat()
            stamp = format_timestamp(moment.astimezone(timezone.utc))
            state["digest"] = prev = digest(prev, event.originator_version, event.type, stamp, event.actor, event.data)
            updates.append((json.dumps(state, separators=(",", ":")).encode(), self.key, event.originator_version))
        self._batch(f"UPDATE {self.events} SET state = ? WHERE originator_id = ? AND originator_version = ?", updates)
