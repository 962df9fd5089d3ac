"""The indexing lease: of the server processes on one event store, the one whose follower indexes the read model.

Every server process follows the log (its live streams need every event), but decoding and projecting the same
events in every process, for all but one to lose the race to write the position, is wasted work. The lease
names one process at a time: on PostgreSQL a session-level advisory lock held by a connection of its own (the
server drops the lock with the connection, so a process that dies or loses its connection lets another take
over); on SQLite an exclusive ``flock`` on a file beside the database (dropped by the kernel when the process
ends); an in-memory store belongs to one process, which always holds it.

The lease only saves work: the read model's position still refuses a second writer, so a process that indexes
without it (a query, or a process that could not reach the lease) never counts anything twice.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import select
from pathlib import Path
from time import monotonic
from typing import Any
from urllib.parse import unquote, urlsplit

import psycopg
from eventsourcing.postgres import PostgresDatastore
from eventsourcing.sqlite import SQLiteDatastore
from psycopg import pq
from psycopg.rows import tuple_row

from service.files import FILE_MODE, narrow
from service.readmodel.rows import POSITION

# Seconds between attempts to reach a lease that could not be reached (no connection, no lock file): the
# process meanwhile indexes as every process did before the lease, which the position keeps correct.
UNREACHABLE_RETRY = 5.0

log = logging.getLogger("zametano.read_model")


class Lease:
    """The lease of a store that only one process can open (in memory): always held."""

    def hold(self) -> bool:
        """Whether this process is to index what it reads now: it keeps the lease while it holds it, and tries
        once, without waiting, to take it when it does not."""
        return True

    def release(self) -> None:
        """Lets another process take the lease."""


class FallibleLease(Lease):
    """A lease that may be out of reach: while it is, the process indexes anyway, as if it held it."""

    def __init__(self) -> None:
        self._retry_at = 0.0
        self._warned = False

    def hold(self) -> bool:
        if monotonic() < self._retry_at:
            return True
        try:
            held = self._hold()
        except (OSError, psycopg.Error) as exc:
            self.release()
            self._retry_at = monotonic() + UNREACHABLE_RETRY
            if not self._warned:
                log.warning("the read model's indexing lease cannot be reached (%s: %s); this process indexes "
                            "what it reads meanwhile", type(exc).__name__, " ".join(str(exc).split()))
            self._warned = True
            return True
        self._warned = False
        return held

    def _hold(self) -> bool:
        raise NotImplementedError


class FileLease(FallibleLease):
    """An exclusive ``flock`` on a file beside the SQLite database: the kernel drops it with the process."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self._fd: int | None = None
        self._held = False

    def _hold(self) -> bool:
        if self._held:
            return True
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
            narrow(self.path)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        self._held = True
        return True

    def release(self) -> None:
        fd, self._fd, self._held = self._fd, None, False
        if fd is not None:
            os.close(fd)  # drops the lock


class AdvisoryLease(FallibleLease):
    """A PostgreSQL session-level advisory lock, on a connection of its own opened as the pool opens its
    own; the connection stays open while the process tries and while it holds the lock, so that a try costs
    one round trip and holding it none."""

    def __init__(self, datastore: PostgresDatastore, key: int) -> None:
        super().__init__()
        self.datastore = datastore
        self.key = key
        self._conn: psycopg.Connection[Any] | None = None
        self._held = False
        self._ending = False  # the server said it ends the session (its locks may be gone before the socket)

    def _hold(self) -> bool:
        if self._conn is not None and not self._intact():
            if self._held:
                log.warning("the read model's indexing lease was lost with its connection")
            self.release()
        elif self._held:
            return True
        if self._conn is None:
            self._held = self._try(self._connect())
            return self._held
        try:
            self._held = self._try(self._conn)
        except psycopg.OperationalError:
            # Ended since it was looked at (an idle session timed out, an administrator's kill): once more on
            # a new connection; failing again, the lease is out of reach.
            self.release()
            self._held = self._try(self._connect())
        return self._held

    def _try(self, conn: psycopg.Connection[Any]) -> bool:
        self._conn = conn
        row = conn.execute("SELECT pg_try_advisory_lock(%s)", (self.key,)).fetchone()
        return bool(row and row[0])

    def _connect(self) -> psycopg.Connection[Any]:
        pool = self.datastore.pool
        kwargs = dict(pool.kwargs) if isinstance(pool.kwargs, dict) else {}
        if pool.get_password_func is not None:
            kwargs["password"] = pool.get_password_func()
        kwargs.setdefault("connect_timeout", max(2, round(pool.timeout)))
        kwargs.update(row_factory=tuple_row, autocommit=True, application_name="zametano read model lease")
        conn = psycopg.connect(pool.conninfo if isinstance(pool.conninfo, str) else "", **kwargs)
        self._ending = False
        conn.add_notice_handler(self._heard)
        return conn

    def _heard(self, diagnostic: psycopg.errors.Diagnostic) -> None:
        # An idle session hears an error only when the server ends it (terminated, shut down, timed out).
        if diagnostic.severity_nonlocalized in ("FATAL", "PANIC"):
            self._ending = True

    def _intact(self) -> bool:
        """Whether the lock's connection still stands, told without a round trip: a session the server ends
        sends its reason, then closes; a connection TCP keepalives gave up on fails to read."""
        conn = self._conn
        if conn is None or conn.closed:
            return False
        poller = select.poll()
        try:
            poller.register(conn.fileno(), select.POLLIN)
            for _ in range(4):  # a closing server sends its reason, then the end of the stream
                if not poller.poll(0):
                    break
                conn.pgconn.consume_input()
                conn.pgconn.is_busy()  # parses what was read, which tells _heard of an ending
        except (OSError, ValueError, psycopg.Error):
            return False
        return not self._ending and conn.pgconn.status == pq.ConnStatus.OK

    def release(self) -> None:
        conn, held, self._conn, self._held = self._conn, self._held, None, False
        if conn is None:
            return
        try:
            if held and not self._ending:
                # At once: the server would drop the lock with the session, but only once it has seen it end.
                conn.execute("SELECT pg_advisory_unlock(%s)", (self.key,))
        except psycopg.Error:
            pass
        finally:
            conn.close()


def advisory_key(*names: str) -> int:
    """A signed 64-bit advisory lock key for these names: one per schema and tables, so that two stores in one
    database do not exclude each other."""
    return int.from_bytes(hashlib.sha256("\0".join(names).encode()).digest()[:8], "big", signed=True)


def lease_for(app: Any, tracking_table: str) -> Lease:
    """The lease of the read model of ``app``'s event store."""
    datastore = getattr(app.factory, "datastore", None)
    if isinstance(datastore, PostgresDatastore):
        events_table = getattr(app.recorder, "events_table_name", "")
        return AdvisoryLease(datastore, advisory_key(POSITION, datastore.schema, events_table, tracking_table))
    if isinstance(datastore, SQLiteDatastore):
        path = sqlite_file(datastore.pool.db_name)
        if path is not None and not datastore.pool.is_sqlite_memory_mode:
            return FileLease(path.with_name(f"{path.name}.{POSITION}.lock"))
    return Lease()


def sqlite_file(name: str) -> Path | None:
    """The file of an SQLite database named by a path or a ``file:`` URI; None for one in memory."""
    if name.startswith("file:"):
        name = unquote(urlsplit(name).path)
    return Path(name) if name and not name.startswith(":") else None
