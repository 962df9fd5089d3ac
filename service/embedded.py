"""The embedded (SQLite) store's file faults made outages, from which the service recovers by itself.

A full disk, a file or folder made read-only, a file gone: each is an outage (service/store.py's
StoreUnavailable, a 503 with Retry-After), never a failure (a 500), and the service serves again by itself
once the fault ends.

SQLite alone does not make them so: a connection keeps writing through the file it opened whatever its
mode becomes, a connection opened while the file is read-only stays read-only after the fault has gone,
one opened after the file vanished makes a new, empty one, and a write on a full disk may still succeed
where SQLite's log has room and fail elsewhere. So here:

- every connection is taken from the pool only after a look at the file (``FileGate``, at most every
  GATE_EVERY seconds): gone, a read or a write is refused at once; not writable (the file or its folder),
  or its disk with less than MIN_FREE_BYTES free, a write is refused at once. A refused write wrote
  nothing (``NotWritten``): its 503 says so, it is never looked up nor decided again;
- a connection that met a fault of the file is closed when it is given back, never used again, so the
  one that replaces it opens the file as it is now (writable again);
- a connection is opened with ``mode=rw`` once the file exists, so that a file gone is an outage, never
  a new empty store; a connection to a file since replaced (another inode) is closed and replaced;
- /readyz asks the gate afresh (``FileGate.problem``), so it follows the fault within a look.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from time import monotonic
from typing import Any

from eventsourcing.sqlite import SQLiteConnection, SQLiteConnectionPool, SQLiteFactory

from service.errors import StoreUnavailable

# Seconds between two looks at the file by one process: a fault is seen, and its end, within this.
GATE_EVERY = 0.1
# Free space below which a write is refused: SQLite needs a few pages, and a disk this full is one a write
# may fail on halfway (its log grown, its file not).
MIN_FREE_BYTES = 1 << 20
# Retry-After of the store's file faults: the gate looks again well within a second.
RETRY_AFTER = 1
# What SQLite says of a fault of its file (as opposed to a broken schema or a bug), lower case.
FILE_FAULTS = ("full", "readonly", "read-only", "disk i/o", "unable to open")

log = logging.getLogger("zametano.store")


class NotWritten(StoreUnavailable):
    """A write refused before it began, because of the store's file: nothing of it was written."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, retry_after=RETRY_AFTER)
        self.message = (
            "The event store cannot take writes right now (its disk or its file); nothing was recorded. Try "
            "again in a few seconds."
        )
        self.args = (self.message,)


def is_file_fault(exc: BaseException) -> bool:
    """An SQLite error (raw, or as the library wraps it) that means the file failed, not the statement."""
    for _ in range(8):  # the library's wrapping, and ours, are a link or two deep
        if exc is None or isinstance(exc, sqlite3.Error):
            break
        exc = exc.__cause__  # type: ignore[assignment]
    return isinstance(exc, sqlite3.OperationalError | sqlite3.DatabaseError) and any(
        fault in str(exc).lower() for fault in FILE_FAULTS)


class FileGate:
    """What is wrong with the store's file now, for reading and for writing (None: nothing), looked at most
    every GATE_EVERY seconds."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.folder = os.path.dirname(os.path.abspath(path))
        self._seen: tuple[float, int | None, str | None, str | None] | None = None  # when, inode, read, write
        self._lock = threading.Lock()
        self._fault_since: float | None = None

    def look(self) -> tuple[int | None, str | None, str | None]:
        """The file's inode, and what stops a read and a write (None: nothing), looked at now."""
        try:
            inode = os.stat(self.path).st_ino
        except OSError as exc:
            gone = f"the SQLite file {self.path} cannot be reached ({exc.strerror or exc})"
            return None, gone, gone
        write = None
        if not os.access(self.path, os.W_OK):
            write = f"the SQLite file {self.path} is read-only"
        elif not os.access(self.folder, os.W_OK):
            write = f"the folder of the SQLite file, {self.folder}, is read-only"
        else:
            try:
                stats = os.statvfs(self.folder)
                free = stats.f_bavail * stats.f_frsize
            except OSError:
                free = MIN_FREE_BYTES
            if free < MIN_FREE_BYTES:
                write = f"the disk of the SQLite file {self.path} is full ({free} bytes free)"
        return inode, None, write

    def state(self, fresh: bool = False) -> tuple[int | None, str | None, str | None]:
        now = monotonic()
        seen = self._seen
        if fresh or seen is None or now - seen[0] >= GATE_EVERY:
            with self._lock:
                inode, read, write = self.look()
                self._seen = (now, inode, read, write)
                self._tell(write or read, now)
            return inode, read, write
        return seen[1], seen[2], seen[3]

    def _tell(self, problem: str | None, now: float) -> None:
        """The log hears of a fault once, when it begins, and once when it ends."""
        if problem is not None and self._fault_since is None:
            self._fault_since = now
            log.warning("the event store cannot take writes: %s", problem)
        elif problem is None and self._fault_since is not None:
            log.warning("the event store takes writes again, after %.1f s", now - self._fault_since)
            self._fault_since = None

    def check(self, writing: bool) -> int | None:
        """The file's inode; NotWritten (a write) or StoreUnavailable (a read) if the file cannot serve now."""
        inode, read, write = self.state()
        if writing and write is not None:
            raise NotWritten(write)
        if read is not None:
            raise StoreUnavailable(read, retry_after=RETRY_AFTER)
        return inode

    def problem(self) -> str | None:
        """For /readyz: what stops writes now, looked at afresh."""
        _, read, write = self.state(fresh=True)
        return write or read


class GuardedConnection(SQLiteConnection):
    """A connection that is closed when given back once it has met a fault of the file."""

    inode: int | None = None

    @contextmanager
    def transaction(self, *, commit: bool) -> Iterator[Any]:
        try:
            with super().transaction(commit=commit) as cursor:
                yield cursor
        except Exception as exc:
            if is_file_fault(exc):
                self._closing.set()  # the pool closes it when it is given back
            raise


class GuardedPool(SQLiteConnectionPool):
    """The library's SQLite pool behind a FileGate."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.gate = FileGate(self.db_name)

    def get_connection(self, timeout: float | None = None, *, is_writer: bool | None = None) -> Any:
        inode = self.gate.check(writing=is_writer is True)
        for _ in range(self.pool_size + self.max_overflow + 1):
            conn = super().get_connection(timeout, is_writer=is_writer)
            if conn.inode == inode or inode is None or conn.inode is None:
                return conn
            conn._closing.set()  # opened on a file since replaced: never used again
            self.put_connection(conn)
        raise StoreUnavailable(f"the SQLite file {self.db_name} keeps being replaced", retry_after=RETRY_AFTER)

    def _create_connection(self) -> Any:
        name = self.db_name
        if os.path.exists(name):  # never a new, empty file where the store's file went away
            name = f"file:{urllib.parse.quote(os.path.abspath(name))}?mode=rw"
        try:
            sqlite_conn = sqlite3.connect(database=name, uri=True, check_same_thread=False, isolation_level=None,
                                          cached_statements=True, timeout=self.lock_timeout or 5)
            if not self.is_journal_mode_wal:
                mode = sqlite_conn.execute("PRAGMA journal_mode;").fetchone()[0]
                if mode.lower() != "wal":
                    sqlite_conn.execute("PRAGMA journal_mode=WAL;")
                self.is_journal_mode_wal = True
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"the SQLite file {self.db_name} cannot be opened ({exc})",
                                   retry_after=RETRY_AFTER) from exc
        sqlite_conn.row_factory = sqlite3.Row
        conn = GuardedConnection(sqlite_conn=sqlite_conn, max_age=self.max_age)
        try:
            conn.inode = os.stat(self.db_name).st_ino
        except OSError:
            conn.inode = None
        return conn


def guard(factory: Any) -> None:
    """Gives an SQLite factory's datastore a GuardedPool (before anything has opened a connection); a store
    in memory has no file to guard."""
    if not isinstance(factory, SQLiteFactory):
        return
    pool = factory.datastore.pool
    if pool.is_sqlite_memory_mode or isinstance(pool, GuardedPool) or pool.db_name.startswith("file:"):
        return
    factory.datastore.pool = GuardedPool(
        db_name=pool.db_name, lock_timeout=pool.lock_timeout, pool_size=pool.pool_size,
        max_overflow=pool.max_overflow, pool_timeout=pool.pool_timeout, max_age=pool.max_age,
        pre_ping=pool.pre_ping)
