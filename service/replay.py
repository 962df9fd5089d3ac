"""Rebuilding a table from its log, or naming exactly where its stored history is damaged.

A stored history that cannot give a table (a version missing, a row that cannot be read, a snapshot ahead of
the log, a log cut short behind a cached table) is a DamagedLog that says where, never a table silently
built from part of its history.
"""

from __future__ import annotations

import copy
import pickle
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.domain import OriginatorVersionError
from eventsourcing.persistence import PersistenceError
from eventsourcing.utils import resolve_topic

from domain.table import Table, TableEvent
from service import groupcommit, present, store
from service.errors import DamagedLog, ServiceError, TableNotFound

if TYPE_CHECKING:
    from service.application import TablesService


@lru_cache(maxsize=1024)  # one entry per stored topic
def topic_kind(topic: str) -> bool | None:
    """What a stored topic names: True a table's event class, False no class at all (it may have been a
    table's: such a row is decoded, and found unreadable against its table), None another class (a command's
    identity record, a credential). Read without decoding the row."""
    try:
        cls = resolve_topic(topic)
    except Exception:  # noqa: BLE001 - a class that no longer exists
        return False
    return True if isinstance(cls, type) and issubclass(cls, TableEvent) else None


def table_uuid(table_id: str) -> UUID:
    try:
        return UUID(str(table_id))
    except ValueError:
        raise TableNotFound(table_id) from None


def rebuild(app: TablesService, table_id: str, version: int | None = None) -> Table:
    """The table at its head or at a version, from the cache or the nearest snapshot and the events after
    it. A stored history that cannot give it (a version missing, a row that cannot be read, a snapshot
    ahead of the log) is a DamagedLog, never a table silently built from part of its history. At the head,
    a copy of the cached table, which the caller may keep (``borrowed`` lends the table itself instead)."""
    if version is None and app.repository.cache is not None:
        # The copy of a cached table is ours to make (see copy_of), not the repository's deepcopy.
        with borrowed(app, table_id) as table:
            return copy_of(table)
    return _read(app, table_id, table_uuid(table_id), version)


@contextmanager
def borrowed(app: TablesService, table_id: str) -> Iterator[Table]:
    """The table at its head, lent while the block runs: the cached table itself (fast-forwarded from the
    log), under the table's lock in this process, so that no command changes it meanwhile. For a reader done
    with it by the end of the block, which keeps nothing of it that can change (the views copy what they
    show, domain/table.py ``view``): it spares the reader a copy of the table."""
    uuid = table_uuid(table_id)
    if app.repository.cache is None:
        yield _read(app, table_id, uuid, None)
        return
    # The library fast-forwards the cached table in place and copies it after releasing its own lock: with
    # several request threads a copy could catch another thread's fast-forward half done. Getting and
    # using the table under one lock per table (in this process) rules that out.
    with _head_lock(app, uuid):
        yield _read(app, table_id, uuid, None)


def _head_lock(app: TablesService, uuid: UUID) -> threading.Lock:
    """The lock of a table's cached head in this process, one a table (setdefault is atomic)."""
    return app.head_locks.setdefault(uuid, threading.Lock())


def _read(app: TablesService, table_id: str, uuid: UUID, version: int | None) -> Table:
    replay = _Replay()
    try:
        table = app.repository.get(uuid, version=version, projector_func=replay, deepcopy_from_cache=False)
    except AggregateNotFoundError:
        raise TableNotFound(table_id) from None
    except (PersistenceError, ServiceError):
        raise  # the store down or busy (503), not a damaged log
    except Exception as exc:
        if store.as_outage(exc) is not None:
            raise
        # The repository mutates a cached table in place: one caught up from a damaged log must not be
        # served from the cache next time.
        _forget(app, uuid)
        raise _damage(app, table_id, uuid, exc) from exc
    if not isinstance(table, Table):
        raise TableNotFound(table_id)
    return table


class HeadLease:
    """The table at its head, lent to one command while it holds the table's lock in this process (``table``
    is None when the store keeps no cache, and then no lock is held): the cached table itself, never a copy.
    Readers of the table take the same lock and copy it (``rebuild``) or are done with it before they let go
    (``borrowed``), so none sees a command half decided. A command that fails gives the table back with
    ``drop``: a table that recorded anything is then forgotten, since its state is no longer the log's.

    Where the recorder checks each save's predecessor (service/onetrip.py, on PostgreSQL) the cached table is
    lent ``unread``: NOT checked against the log. Only a command may use it: its save is refused if the table
    moved on meanwhile (the unique key on table and version) or its log was cut behind it, and it is then
    decided again on the table read from the log. That spares the command the read that fast-forwards the
    cached table and the replay of the events found. Elsewhere the cached table is fast-forwarded from the
    log first, as every read does."""

    def __init__(self, app: TablesService, table_id: str, stale: Callable[[UUID, int], bool] | None = None) -> None:
        """``stale``: whether the cached table at a version is known to be behind the log (another process saved
        a later one, service/combining.py ``Turns``): then it is read from the log even where it could be lent
        unread."""
        self.app = app
        self.table: Table | None = None
        self.unread = False
        self._lock: threading.Lock | None = None
        self._version = 0
        if app.repository.cache is None:
            return
        uuid = table_uuid(table_id)
        unread = getattr(app.recorder, "checks_predecessors", False)
        lock = _head_lock(app, uuid)
        if not lock.acquire(blocking=False):
            groupcommit.stepping_aside()  # waits for the table's command in hand: no batch waits for this one
            lock.acquire()
        try:
            table = app.repository.cache.get(uuid) if unread else _read(app, table_id, uuid, None)
            if unread and stale is not None and isinstance(table, Table) and stale(uuid, table.version):
                table, unread = _read(app, table_id, uuid, None), False
        except KeyError:
            table = None
        except BaseException:
            lock.release()
            raise
        if isinstance(table, Table):
            self.table, self.unread, self._lock, self._version = table, unread, lock, table.version
        else:
            lock.release()

    def drop(self) -> None:
        """Gives the table back after a failure: forgotten if it recorded anything (a refusal records nothing,
        domain/table.py ``handle``), so that no later command or read sees events the log does not hold."""
        if self._lock is None:
            return
        table = self.table
        # A failed save has collected the pending events already: the version says the table moved.
        if table is not None and (table.pending_events or table.version != self._version):
            _forget(self.app, table.id)
        self.release()

    def release(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def __enter__(self) -> HeadLease:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is None:
            self.release()
        else:
            self.drop()  # whatever escaped a command may have left the table half decided


class _Unleased:
    """No table lent: the command reads its table from the log."""

    table = None
    unread = False

    def drop(self) -> None:
        pass

    def __enter__(self) -> _Unleased:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


NO_LEASE = _Unleased()


def remember(app: TablesService, table: Table) -> None:
    """A table just saved becomes the cached one (the library caches only what it read), unless the cache already
    holds a later version. The caller must not change the table afterwards."""
    if app.repository.cache is None:
        return
    with _head_lock(app, table.id):
        try:
            cached = app.repository.cache.get(table.id)
        except KeyError:
            cached = None
        if cached is None or cached.version < table.version:
            app.repository.cache.put(table.id, table)


def decoded(app: TablesService, table_id: str, rows: list[Any]) -> list[TableEvent]:
    """Stored rows as events; the first that cannot be read is a DamagedLog naming its version."""
    events = []
    for stored in rows:
        try:
            event = app.mapper.to_domain_event(stored)
            present.event(event)  # type: ignore[arg-type] - a field missing from the stored form shows here
        except Exception as exc:  # noqa: BLE001 - whatever the damage, the row is unreadable
            version = stored.originator_version
            raise DamagedLog(table_id, f"the stored event at version {version} cannot be read", version) from exc
        if not isinstance(event, TableEvent):
            raise TableNotFound(table_id)
        events.append(event)
    return events


def readable(app: TablesService, stored: Any) -> TableEvent | None:
    """A stored row's event, or None where its stored form cannot be read (it was altered or damaged)."""
    try:
        event = app.mapper.to_domain_event(stored)
        present.event(event)  # type: ignore[arg-type] - a field missing from the stored form shows here
        if not isinstance(event, TableEvent):
            raise TypeError(type(event).__name__)
    except Exception:  # noqa: BLE001 - any failure to decode a stored event is what an auditor must hear of
        return None
    return event


def _damage(app: TablesService, table_id: str, uuid: UUID, exc: Exception) -> DamagedLog:
    """What a failed rebuild says of the log, in its words (a read or two, on this rare path only)."""
    if isinstance(exc, OriginatorVersionError):
        found, expected = exc.args[:2]
        return DamagedLog(table_id, _gap_detail(found, expected), expected)
    if isinstance(exc, _NotFromHead):
        below = app.recorder.select_events(uuid, lte=exc.head, desc=True, limit=1)
        end = below[0].originator_version if below else 0
        if exc.found is not None:
            detail = _gap_detail(exc.found, end + 1)
        elif exc.snapshot is not None:
            detail = f"the snapshot at version {exc.snapshot} is ahead of the log, which ends at {end}"
        else:
            detail = f"this server's copy of the table is at version {exc.head}, but the log now ends at {end}"
        return DamagedLog(table_id, detail, end + 1)
    if isinstance(exc, _Unreadable):
        if exc.after is not None:  # rows are decoded while projected: the next stored row is the bad one
            bad = app.recorder.select_events(uuid, gt=exc.after, limit=1)
            version = bad[0].originator_version if bad else exc.after + 1
            return DamagedLog(table_id, f"the stored event at version {version} cannot be read", version)
        return DamagedLog(table_id, exc.detail, exc.version)
    # Only the snapshot is decoded outside the replay.
    return DamagedLog(table_id, f"its latest snapshot cannot be read ({type(exc).__name__})")


def _forget(app: TablesService, uuid: UUID) -> None:
    if app.repository.cache is not None:
        try:
            app.repository.cache.get(uuid, evict=True)
        except KeyError:
            pass


class _Unreadable(Exception):
    def __init__(self, detail: str, version: int | None, after: int | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.version = version
        self.after = after  # set when the row after this version could not be decoded


class _NotFromHead(Exception):
    """The table (cached, or from a snapshot) stands at ``head``, but the log has no event at ``head``: it
    has ``found`` next (a version missing) or nothing from there on (the log was cut short behind it)."""

    def __init__(self, head: int, found: int | None) -> None:
        super().__init__(head, found)
        self.head = head
        self.found = found
        self.snapshot: int | None = None  # set when the table at ``head`` came from a snapshot


def copy_of(table: Table) -> Table:
    """A copy of a table that the caller may keep and change without touching the original (the cached table,
    an audit's rebuild). A pickle round trip copies a table in half the time deepcopy takes, and keeps what
    deepcopy keeps (shared references stay shared); deepcopy remains for whatever pickle cannot write."""
    try:
        return pickle.loads(pickle.dumps(table, pickle.HIGHEST_PROTOCOL))  # type: ignore[no-any-return]
    except (pickle.PicklingError, TypeError, AttributeError):
        return copy.deepcopy(table)


class FromItsHead:
    """The repository's reads of the event store. Where it asks for the events after a version it holds
    (a cached table's head, a snapshot's version), the same query also reads the row at that version, so
    that a table whose own last event is gone from the log is noticed without another database read."""

    def __init__(self, events: Any) -> None:
        self.events = events

    def get(self, originator_id: Any, *, gt: int | None = None, lte: int | None = None, desc: bool = False,
            limit: int | None = None) -> Iterator[Any]:
        if gt is None or gt < 1 or desc or limit is not None:
            return self.events.get(originator_id, gt=gt, lte=lte, desc=desc, limit=limit)
        rows = self.events.recorder.select_events(originator_id, gt=gt - 1, lte=lte)
        return self._after(gt, rows)

    def _after(self, head: int, rows: list[Any]) -> Iterator[Any]:
        # A generator: the check runs while the repository projects, where _Replay knows what ``head`` is.
        if not rows or rows[0].originator_version != head:
            raise _NotFromHead(head, rows[0].originator_version if rows else None)
        for row in rows[1:]:
            yield self.events.mapper.to_domain_event(row)


class _Replay:
    """The repository's projector. It names the stored row it could not read (rows are decoded lazily,
    while they are projected), and says whether a table ahead of its log came from a snapshot."""

    def __init__(self) -> None:
        self.snapshot: int | None = None

    def __call__(self, table: Any, items: Any) -> Any:
        items = iter(items)
        last = table.version if table is not None else 0
        while True:
            try:
                item = next(items)
            except StopIteration:
                return table
            except _NotFromHead as exc:
                exc.snapshot = self.snapshot
                raise
            except PersistenceError:
                raise
            except Exception as exc:  # noqa: BLE001 - a row that cannot be decoded
                raise _Unreadable(f"the stored event after version {last} cannot be read", last + 1, last) from exc
            if not isinstance(item, TableEvent):
                self.snapshot = item.originator_version
            try:
                table = item.mutate(table)
            except OriginatorVersionError:
                raise
            except Exception as exc:  # noqa: BLE001 - a row decoded with fields missing or of the wrong kind
                version = item.originator_version
                raise _Unreadable(f"the stored event at version {version} cannot be applied", version) from exc
            last = item.originator_version


def projected(items: Iterable[Any], table: Table | None = None) -> Table | None:
    """``table`` (None: none yet) with ``items`` applied (a snapshot first, where there is one), projected as a
    rebuild projects what it reads (any row that cannot be applied raises)."""
    return _Replay()(table, items)  # type: ignore[no-any-return]


def _gap_detail(found: int, expected: int) -> str:
    """What OriginatorVersionError(found, expected) means for a table's log."""
    if found > expected:
        missing = f"version {expected} is" if found == expected + 1 else f"versions {expected} to {found - 1} are"
        return f"{missing} missing: the log goes from {expected - 1} to {found}"
    return f"version {found} comes where {expected} was expected: the log is out of order"
