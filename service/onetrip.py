"""The PostgreSQL recorder that writes a save in one round trip: one statement, calling one function of the database.

The library's recorder writes a save as a transaction of six statements in a pipeline (BEGIN, SET LOCAL
lock_timeout, LOCK TABLE, NOTIFY, the INSERT, then COMMIT), which is two round trips to the database: the
pipeline's sync, which must hear of a version already taken before the commit, and the COMMIT itself. Here the
same statements run inside one PL/pgSQL function, called in autocommit mode, so the save is one statement: one
round trip, one implicit transaction, nothing written unless all of it is. What it keeps of the library's:

- the table is locked in EXCLUSIVE mode before the insert, so that notification ids are committed in the order
  they were issued (the read model's follower and the streams read the log by notification id and must never
  pass over a gap that a slower transaction fills in later);
- the same lock timeout, the same NOTIFY of the library's channel, the same unique key on (table, version):
  a version taken first is an IntegrityError, as it was;
- the notification ids, in the order the events were given.

And it refuses, as a version already taken (IntegrityError, SQLSTATE 23000), a save whose first event of a table
would not follow a version in the log (a log cut short behind a table cached in a process): with both checks
inside the write, a command can be decided on the cached table without reading the log first. A refused save
is decided again on the table read from the log, which names the damage (service/replay.py).

The function is created (or replaced) where the library creates its tables (``CREATE_TABLE``). A store
whose tables were created without it (by an older version, with ``CREATE_TABLE=n``) is written the library's
way, and the server's log says so once. ``APPLICATION_RECORDER_TOPIC`` set to the library's own recorder
turns it off.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import psycopg.errors
from eventsourcing.persistence import InterfaceError, OperationalError, ProgrammingError, StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore
from eventsourcing.utils import retry
from psycopg.sql import SQL, Identifier

TOPIC = "service.onetrip:OneTripRecorder"
log = logging.getLogger("zametano.store")


class OneTripRecorder(PostgresApplicationRecorder):
    def __init__(self, datastore: PostgresDatastore, *, events_table_name: str = "stored_events") -> None:
        super().__init__(datastore, events_table_name=events_table_name)
        self.save_function = f"zametano_save_{events_table_name}"
        self.check_identifier_length(self.save_function)
        names = {
            "schema": Identifier(datastore.schema),
            "function": Identifier(self.save_function),
            "id_type": Identifier(datastore.originator_id_type),
            "table": Identifier(self.events_table_name),
            "channel": Identifier(self.channel_name),
        }
        self.sql_create_statements.append(SQL(
            "CREATE OR REPLACE FUNCTION {schema}.{function}"
            "(ids {id_type}[], versions bigint[], topics text[], states bytea[]) "
            "RETURNS SETOF bigint LANGUAGE plpgsql AS $BODY$ "
            "BEGIN "
            "SET LOCAL lock_timeout = '{lock_timeout}s'; "
            "LOCK TABLE {schema}.{table} IN EXCLUSIVE MODE; "
            "IF EXISTS (SELECT FROM unnest(ids, versions) AS e(originator_id, originator_version) "
            "WHERE e.originator_version > 1 "
            "AND NOT EXISTS (SELECT FROM unnest(ids, versions) AS f(originator_id, originator_version) "
            "WHERE f.originator_id = e.originator_id AND f.originator_version = e.originator_version - 1) "
            "AND NOT EXISTS (SELECT FROM {schema}.{table} AS t "
            "WHERE t.originator_id = e.originator_id AND t.originator_version = e.originator_version - 1)) THEN "
            "RAISE EXCEPTION 'an event would follow a version missing from the log' USING ERRCODE = '23000'; "
            "END IF; "
            "NOTIFY {channel}; "
            "RETURN QUERY INSERT INTO {schema}.{table} (originator_id, originator_version, topic, state) "
            "SELECT * FROM unnest(ids, versions, topics, states) "
            "RETURNING notification_id; "
            "END; $BODY$"
        ).format(lock_timeout=datastore.lock_timeout, **names))
        # Four arrays of plain types, sent in binary: psycopg writes an array of the library's composite type
        # as text, in Python, escaping every state's bytes (about 0.1 ms of a save of five events).
        self.save_statement = SQL("SELECT id FROM {schema}.{function}(%b, %b::bigint[], %b, %b) AS id").format(**names)
        self.function_missing = False

    @property
    def checks_predecessors(self) -> bool:
        """Whether a save is refused (IntegrityError) when its first event of an aggregate would not follow a
        version in the log: a command may then be decided on this process's cached table without reading the
        log first (service/commands.py)."""
        return not self.function_missing

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> Sequence[int] | None:
        if not stored_events or self.function_missing:
            return super().insert_events(stored_events, **kwargs)
        columns = ([e.originator_id for e in stored_events], [e.originator_version for e in stored_events],
                   [e.topic for e in stored_events], [e.state for e in stored_events])
        try:
            with self.datastore.get_connection() as conn, conn.cursor() as curs:
                curs.execute(self.save_statement, columns, prepare=True)
                return [row["id"] for row in curs.fetchall()]
        except ProgrammingError as exc:
            if not isinstance(exc.__cause__, psycopg.errors.UndefinedFunction):
                raise
            # Nothing was written: the statement failed before the function ran.
            self.function_missing = True
            log.warning("the store has no function %s (its tables were created without it): saves take the "
                        "library's two round trips", self.save_function)
            return super().insert_events(stored_events, **kwargs)
