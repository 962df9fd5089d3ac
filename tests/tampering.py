"""Direct edits of a test store's rows, as anyone with write access to the database could make them: in place,
by deleting or exchanging rows, or re-chained (every digest recomputed after the change, so that the log is
consistent with itself again and only something kept outside the database can tell). An encrypted store is
edited by someone who holds its cipher key too (CIPHER_KEY, or the cipher key file): states are read
decrypted and written encrypted again, so that only the chain and what is kept outside can tell."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable
from contextlib import closing
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from domain.chain import digest, format_timestamp
from service.atrest import KEY_FILE, cipher_of
from tests.helpers import postgres_location

# Keys of a stored event's JSON that are not its data (docs/design.md's envelope, as the library stores it).
ENVELOPE = ("timestamp", "originator_topic", "actor", "digest", "command", "salts")

# edit(version, type, stored event) -> the changed stored event, or None to leave it as it is
Edit = Callable[[int, str, dict[str, Any]], dict[str, Any] | None]


def store_cipher(env: dict[str, str]) -> Any:
    """The cipher the service would read the store with: CIPHER_KEY, else its cipher key file (None: neither)."""
    if env.get("CIPHER_KEY"):
        return cipher_of(env["CIPHER_KEY"])
    path = Path(env.get("ZAMETANO_CIPHER_KEY_FILE") or Path(env.get("ZAMETANO_DATA_DIR") or "var") / KEY_FILE)
    return cipher_of(path.read_text().strip()) if path.exists() else None


class Rows:
    """One table's stored events and snapshots in an SQLite file or a PostgreSQL schema, named by the same
    settings the service reads."""

    def __init__(self, env: dict[str, str], table_id: str) -> None:
        self.env = env
        self.sqlite = env["PERSISTENCE_MODULE"] == "eventsourcing.sqlite"
        self.table_id = table_id
        if self.sqlite:
            self.events, self.snapshots, self.mark = "stored_events", "stored_snapshots", "?"
            self.key: Any = uuid.UUID(table_id).hex
        else:
            schema = env.get("POSTGRES_SCHEMA", "public")
            self.events, self.snapshots, self.mark = f"{schema}.zametano_events", f"{schema}.zametano_snapshots", "%s"
            self.key = table_id
        self.cipher = store_cipher(env)
        self.encrypted: bool | None = None  # found out from the first state read

    def _open(self, state: bytes) -> bytes:
        if self.cipher is not None and self.encrypted is not False:
            try:
                state, self.encrypted = self.cipher.decrypt(state), True
            except ValueError:
                self.encrypted = False  # a store kept in clear
        return state

    def _seal(self, state: bytes) -> bytes:
        if self.encrypted is None:
            self.rows()
        return self.cipher.encrypt(state) if self.encrypted else state

    def _run(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        return self._batch(sql, [params])

    def _batch(self, sql: str, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        """Runs ``sql`` once per row of parameters in one transaction; the last run's result rows."""
        sql = sql.replace("?", self.mark)
        found: list[tuple[Any, ...]] = []
        if self.sqlite:
            with closing(sqlite3.connect(self.env["SQLITE_DBNAME"])) as db, db:
                for params in rows:
                    found = db.execute(sql, params).fetchall()
            return found
        import psycopg

        with psycopg.connect(**postgres_location(self.env)) as db:
            for params in rows:  # one transaction, committed on exit
                cursor = db.execute(sql, params)
                found = cursor.fetchall() if cursor.description else []
        return found

    def rows(self) -> list[tuple[int, str, bytes]]:
        """(version, event type, stored state) of every stored event, in version order."""
        found = self._run(f"SELECT originator_version, topic, state FROM {self.events} WHERE originator_id = ? "
                          "ORDER BY originator_version", self.key)
        return [(v, topic.rsplit(":", 1)[-1], self._open(bytes(state))) for v, topic, state in found]

    def versions(self) -> list[int]:
        return [v for v, _, _ in self.rows()]

    def snapshot_versions(self) -> list[int]:
        return [v for (v,) in self._run(
            f"SELECT originator_version FROM {self.snapshots} WHERE originator_id = ? ORDER BY originator_version",
            self.key)]

    def state(self, version: int) -> dict[str, Any]:
        (state,) = self._run(f"SELECT state FROM {self.events} WHERE originator_id = ? AND originator_version = ?",
                             self.key, version)[0]
        return json.loads(self._open(bytes(state)))

    def write(self, version: int, state: dict[str, Any] | bytes) -> None:
        """Replaces the stored event at ``version`` as it is: no digest is recomputed."""
        raw = state if isinstance(state, bytes) else json.dumps(state, separators=(",", ":")).encode()
        self._run(f"UPDATE {self.events} SET state = ? WHERE originator_id = ? AND originator_version = ?",
                  self._seal(raw), self.key, version)

    def delete(self, first: int, last: int | None = None) -> None:
        """Deletes the events from ``first`` to ``last`` (to the end when None)."""
        self._run(f"DELETE FROM {self.events} WHERE originator_id = ? AND originator_version >= ? "
                  "AND originator_version <= ?", self.key, first, last if last is not None else 2**62)

    def drop_snapshots(self, after: int = 0) -> None:
        """Deletes the snapshots past version ``after`` (every one by default)."""
        self._run(f"DELETE FROM {self.snapshots} WHERE originator_id = ? AND originator_version > ?",
                  self.key, after)

    def damage_snapshot(self, version: int) -> None:
        """Overwrites the snapshot at ``version`` with bytes that no cipher or transcoder reads."""
        self._run(f"UPDATE {self.snapshots} SET state = ? WHERE originator_id = ? AND originator_version = ?",
                  b"not a snapshot", self.key, version)

    def exchange(self, a: int, b: int) -> None:
        """Exchanges the contents (type and state) of two rows; each keeps its version."""
        query = f"SELECT topic, state FROM {self.events} WHERE originator_id = ? AND originator_version = ?"
        (topic_a, state_a), (topic_b, state_b) = self._run(query, self.key, a)[0], self._run(query, self.key, b)[0]
        update = f"UPDATE {self.events} SET topic = ?, state = ? WHERE originator_id = ? AND originator_version = ?"
        self._batch(update, [(topic_b, bytes(state_b), self.key, a), (topic_a, bytes(state_a), self.key, b)])

    def rechain(self, edit: Edit) -> list[int]:
        """Applies ``edit`` to every stored event (its data, or its envelope such as the timestamp), then
        recomputes every digest from the first change on, so that the chain holds again. Returns the versions
        the edit changed."""
        changed: list[int] = []
        updates: list[tuple[Any, ...]] = []
        prev = ""
        for version, type_, raw in self.rows():
            event = json.loads(raw)
            new = edit(version, type_, json.loads(raw))
            if new is not None and new != event:
                changed.append(version)
                event = new
            if changed:
                data = {k: v for k, v in event.items() if k not in ENVELOPE}
                moment = format_timestamp(datetime.fromisoformat(event["timestamp"]["_data_"]))
                event["digest"] = digest(prev, version, type_, moment, event["actor"], data, event.get("salts"))
                updates.append((self._seal(json.dumps(event, separators=(",", ":")).encode()), self.key, version))
            prev = event["digest"]
        if updates:
            self._batch(f"UPDATE {self.events} SET state = ? WHERE originator_id = ? AND originator_version = ?",
                        updates)
        return changed

    def shift_time(self, by: timedelta) -> list[int]:
        """Moves every event's timestamp by ``by`` and recomputes every digest."""

        def moved(version: int, type_: str, event: dict[str, Any]) -> dict[str, Any]:
            moment = datetime.fromisoformat(event["timestamp"]["_data_"]) + by
            return {**event, "timestamp": {**event["timestamp"], "_data_": moment.isoformat()}}

        return self.rechain(moved)


class ReadModel:
    """The read model's rows (service/readmodel/) in an SQLite file or a PostgreSQL schema, edited behind the
    service's back: its sealed columns opened and sealed again with the store's cipher, as someone who holds
    the key could."""

    def __init__(self, env: dict[str, str]) -> None:
        from service.readmodel.rows import Sealer

        self.rows = Rows(env, str(uuid.UUID(int=0)))  # for its connection and its cipher only
        self.sqlite = self.rows.sqlite
        self.schema = "" if self.sqlite else env.get("POSTGRES_SCHEMA", "public") + "."
        self.sealer = Sealer(store_cipher(env))

    def run(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        """``sql`` with ``{t}`` standing for the schema (PostgreSQL) before a table's name."""
        return self.rows._run(sql.replace("{t}", self.schema), *params)

    def round(self, table_id: str, number: int) -> dict[str, Any]:
        from service.readmodel.rows import ROUNDS

        (first, last, sealed), = self.run(f"SELECT first_version, last_version, sealed FROM {{t}}{ROUNDS} "
                                          "WHERE table_id = ? AND round = ?", table_id, number)
        return {"first_version": first, "last_version": last, "summary": self.sealer.open(sealed), "sealed": sealed}

    def set_round(self, table_id: str, number: int, **values: Any) -> None:
        from service.readmodel.rows import ROUNDS

        if "summary" in values:
            values["sealed"] = self.sealer.seal(values.pop("summary"))
        sets = ", ".join(f"{name} = ?" for name in values)
        self.run(f"UPDATE {{t}}{ROUNDS} SET {sets} WHERE table_id = ? AND round = ?", *values.values(), table_id, number)

    def delete_round(self, table_id: str, number: int) -> None:
        from service.readmodel.rows import ROUNDS

        self.run(f"DELETE FROM {{t}}{ROUNDS} WHERE table_id = ? AND round = ?", table_id, number)

    def table(self, table_id: str) -> dict[str, Any]:
        from service.readmodel.rows import TABLES

        (rounds, sealed), = self.run(f"SELECT rounds, sealed FROM {{t}}{TABLES} WHERE table_id = ?", table_id)
        return {"rounds": rounds, **self.sealer.open(sealed)}

    def set_table(self, table_id: str, rounds: int | None = None, **sealed: Any) -> None:
        from service.readmodel.rows import TABLES

        if rounds is not None:
            self.run(f"UPDATE {{t}}{TABLES} SET rounds = ? WHERE table_id = ?", rounds, table_id)
        if sealed:
            opened = {k: v for k, v in self.table(table_id).items() if k != "rounds"}
            self.run(f"UPDATE {{t}}{TABLES} SET sealed = ? WHERE table_id = ?",
                     self.sealer.seal({**opened, **sealed}), table_id)

    def set_shoe(self, table_id: str, number: int, revealed_version: Any = "keep", **sealed: Any) -> None:
        from service.readmodel.rows import SHOES

        if revealed_version != "keep":
            self.run(f"UPDATE {{t}}{SHOES} SET revealed_version = ? WHERE table_id = ? AND shoe = ?",
                     revealed_version, table_id, number)
        if sealed:
            (text,), = self.run(f"SELECT sealed FROM {{t}}{SHOES} WHERE table_id = ? AND shoe = ?", table_id, number)
            self.run(f"UPDATE {{t}}{SHOES} SET sealed = ? WHERE table_id = ? AND shoe = ?",
                     self.sealer.seal({**self.sealer.open(text), **sealed}), table_id, number)

    def drop(self) -> None:
        """Every row of the read model and its position deleted: the next service builds it again from the log."""
        from service.readmodel.rows import POSITION, ROUNDS, SEAT_ROUNDS, SHOES, TABLES

        for name in (TABLES, ROUNDS, SHOES, SEAT_ROUNDS):
            self.run(f"DELETE FROM {{t}}{name}")
        tracking = "tracking" if self.sqlite else "{t}zametano_tracking"
        self.run(f"DELETE FROM {tracking} WHERE application_name = ?", POSITION)


def swap_table_ids(env: dict[str, str], a: str, b: str) -> None:
    """Two tables' stored events exchange their ids, each row keeping its contents; their snapshots and the
    read model are dropped, so that nothing derived remembers which was which. The sealed seeds are sealed
    again to their new table (service/seeds.py), as someone holding the seed keys could: every row reads."""
    from service.config import load
    from service.seeds import is_sealed, load_seed_keys

    keys = load_seed_keys(load(env))
    for table, to in ((a, b), (b, a)):
        rows = Rows(env, table)
        for version, type_, raw in rows.rows():
            state = json.loads(raw)
            if type_ == "ShoeShuffled" and is_sealed(state["seed"]):
                seed = keys.open(state["seed"], f"seed:{table}")
                rows.write(version, {**state, "seed": keys.seal(seed, f"seed:{to}")})
        rows.drop_snapshots()
    rows = Rows(env, a)
    key = (lambda t: uuid.UUID(t).hex) if rows.sqlite else (lambda t: t)
    spare = key(str(uuid.uuid4()))
    for table in (rows.events, rows.snapshots):
        moves = [(spare, key(a)), (key(a), key(b)), (key(b), spare)]
        rows._batch(f"UPDATE {table} SET originator_id = ? WHERE originator_id = ?", moves)
    ReadModel(env).drop()
