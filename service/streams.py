"""Live streams of the event log: a table's events as they are recorded, and every table's head.

Each process (each service) has one Hub, which learns of new events once for all the streams it serves:

- from the service's own commits, at once (``TablesService._notify``): which tables moved to which version;
- from the read model's follower (service/follower.py), which follows the whole notification log (LISTEN/NOTIFY
  on PostgreSQL, polling on SQLite, in-process on memory) and so hears every process's commits, a moment
  later (its GATHER, and on SQLite its POLL): which tables moved, and each one's new head, decoded here once
  for every stream and kept, with its position in the log, for the streams of heads.

A stream waits on the hub (its table's condition variable, with its heartbeat as the timeout: a change wakes
only the streams of its table) and reads nothing while its table does not move: a quiet stream costs one
sleeping thread. When its table moves it reads the events
after the last one it sent through the service's ordinary reads; the streams of one table woken by one change
share that read (``SharedReads``). A stream subscribes before it reads its backlog, so an event recorded
between the two is not missed, and it only ever reads after the last version it sent, so no event comes twice
or out of order, whatever woke it. When the follower subscribes again after a failure from further on than
the hub heard, every stream reads again from its last event (``resyncs``).

A process holds at most ``max_streams`` streams at once (ZAMETANO_MAX_STREAMS); the server gives each worker
that many threads on top of those for ordinary requests, so streams never take a thread a command needs.
"""

from __future__ import annotations

import itertools
import logging
import threading
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from eventsourcing.utils import resolve_topic

from domain.table import TableEvent, TableOpened
from service import metrics
from service.errors import ServiceError, StreamRefused

# Head changes a hub keeps for streams that resume (Last-Event-ID); an older position is read from the log.
HISTORY = 10_000
OPENINGS = 10_000  # tables whose game, players and opening time a hub keeps (they never change)
SHARED_READS = 64  # recent reads of new events kept for the other streams of the same table
PAGE = 500  # events, or notifications, read at once
# Seconds a client refused for a full process waits: a stream ends when its client has gone, noticed at its
# next heartbeat at the latest.
RETRY_FULL = 5
RETRY_STOPPING = 1  # a stopping process: another one (or its replacement) takes the stream at once

log = logging.getLogger("zametano.streams")
_HUBS: weakref.WeakSet[Hub] = weakref.WeakSet()


def stop_all() -> None:
    """Ends every stream of this process (the worker is stopping: gunicorn waits for open requests)."""
    for hub in list(_HUBS):
        hub.close()


@dataclass(frozen=True)
class HeadChange:
    """A table's head after a change, at ``position`` in the notification log."""

    position: int
    table_id: str
    version: int
    digest: str
    timestamp: str


Opening = dict[str, Any]  # a table's game, players and opening time


class Reader(Protocol):
    """What the streams read through (TablesService)."""

    def iter_events(self, table_id: str, after: int = 0, batch: int = 500) -> Iterator[dict[str, Any]]: ...

    def read_events(self, table_id: str, *, after: int = 0, upto: int | None = None,
                    limit: int | None = None) -> list[Any]: ...

    def head_changes(self, after: int, limit: int) -> tuple[list[HeadChange], int, bool]: ...

    def log_position(self) -> int: ...


class _Kept:
    """A bounded map, the least recently used entry forgotten first."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[Any, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)


class _Read:
    __slots__ = ("done", "value", "error")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None


class SharedReads:
    """A read that several streams need at once (those of one table, woken by one change) is made by the first
    and waited for by the others. Recorded events never change, so a read's answer stays right while kept."""

    def __init__(self, size: int = SHARED_READS) -> None:
        self._size = size
        self._entries: OrderedDict[Any, _Read] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any, load: Callable[[], Any]) -> Any:
        with self._lock:
            entry = self._entries.get(key)
            mine = entry is None
            if entry is None:
                entry = self._entries[key] = _Read()
                while len(self._entries) > self._size:
                    self._entries.popitem(last=False)
            else:
                self._entries.move_to_end(key)
        if mine:
            try:
                entry.value = load()
            except BaseException as exc:
                entry.error = exc
                with self._lock:
                    if self._entries.get(key) is entry:
                        del self._entries[key]  # a failure is not kept: the next stream tries again
                raise
            finally:
                entry.done.set()
        entry.done.wait()
        if entry.error is not None:
            raise entry.error
        return entry.value


class Slot:
    """One stream's place among the process's ``max_streams``."""

    def __init__(self, hub: Hub, kind: str) -> None:
        self.hub, self.kind = hub, kind
        self.held = True

    def release(self) -> None:
        self.hub.release(self)


class _Watched:
    """A table some streams follow: how many, the highest version heard, and the condition they wait on."""

    __slots__ = ("streams", "version", "changed")

    def __init__(self, lock: threading.Lock) -> None:
        self.streams = 0
        self.version = 0
        self.changed = threading.Condition(lock)


class Hub:
    """What this process has heard of the log, for its streams (see the module's docstring). One lock; a
    condition per followed table, so that a change wakes only the streams of its table, and one for the
    streams of heads."""

    def __init__(self, max_streams: int = 32, history: int | None = None) -> None:
        self.max_streams = max_streams
        self._lock = threading.Lock()
        self._heads_changed = threading.Condition(self._lock)
        self._open = 0
        self._closed = False
        self._watched: dict[str, _Watched] = {}
        self._resyncs = 0  # moved when this hub may have missed changes: every stream reads again
        self._heads: deque[HeadChange] = deque(maxlen=HISTORY if history is None else history)  # in position order
        self._floor: int | None = None  # every head change after this position is in _heads (None: nothing heard)
        self._position = 0  # the last position heard
        self.openings = _Kept(OPENINGS)
        self.reads = SharedReads()
        _HUBS.add(self)

    # --- streams ------------------------------------------------------------------------------------

    def admit(self, kind: str) -> Slot:
        """A place for one more stream, or StreamRefused (503) saying why there is none."""
        with self._lock:
            reason = "stopping" if self._closed else "full" if self._open >= self.max_streams else None
            if reason is None:
                self._open += 1
        if reason is not None:
            metrics.stream_refused(reason)
            raise _refusal(reason, self.max_streams)
        metrics.OPEN_STREAMS.labels(kind).inc()
        return Slot(self, kind)

    def release(self, slot: Slot) -> None:
        with self._lock:
            if not slot.held:
                return
            slot.held = False
            self._open -= 1
        metrics.OPEN_STREAMS.labels(slot.kind).dec()

    @property
    def open_streams(self) -> int:
        with self._lock:
            return self._open

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Ends every stream (each returns at its next wake, at once) and refuses new ones."""
        with self._lock:
            self._closed = True
            self._wake_all()

    def _wake_all(self) -> None:  # holding the lock
        for watched in self._watched.values():
            watched.changed.notify_all()
        self._heads_changed.notify_all()

    # --- what is heard ----------------------------------------------------------------------------------

    def moved(self, versions: Mapping[str, int]) -> None:
        """Tables reached these versions (recorded: a read now finds them)."""
        with self._lock:
            for table_id, version in versions.items():
                watched = self._watched.get(table_id)
                if watched is not None and version > watched.version:
                    watched.version = version
                    watched.changed.notify_all()

    def subscribed(self, gt: int) -> None:
        """The follower reads the log from after ``gt`` on. From further on than this hub heard (or at its
        first subscription), what lies between is not in its memory: streams read it from the log."""
        with self._lock:
            if self._floor is not None and gt <= self._position:
                return  # it reads again what was heard; heard() keeps each position once
            self._heads.clear()
            self._floor = gt
            self._position = max(self._position, gt)
            self._resyncs += 1
            self._wake_all()

    def heard(self, position: int, heads: Sequence[HeadChange], openings: Mapping[str, Opening]) -> None:
        """The follower read the log up to ``position``; ``heads`` are the changes it holds, in order."""
        for table_id, opening in openings.items():
            self.openings.put(table_id, opening)
        with self._lock:
            for head in heads:
                if head.position <= self._position:
                    continue
                if len(self._heads) == self._heads.maxlen:
                    self._floor = self._heads[0].position  # forgotten: resuming before it reads the log
                self._heads.append(head)
            if position > self._position:
                self._position = position
                self._heads_changed.notify_all()

    # --- waiting ---------------------------------------------------------------------------------------

    def watch(self, table_id: str) -> int:
        """Follows the table's versions from now on; returns the resync count to wait with."""
        with self._lock:
            watched = self._watched.get(table_id)
            if watched is None:
                watched = self._watched[table_id] = _Watched(self._lock)
            watched.streams += 1
            return self._resyncs

    def unwatch(self, table_id: str) -> None:
        with self._lock:
            watched = self._watched.get(table_id)
            if watched is not None:
                watched.streams -= 1
                if watched.streams <= 0:
                    del self._watched[table_id]

    def wait_table(self, table_id: str, beyond: int, resyncs: int, timeout: float) -> tuple[int, int] | None:
        """Once the (watched) table is heard past version ``beyond``, or every stream must read again: the
        version heard and the resync count. None after ``timeout`` seconds, or once the hub is closed."""
        with self._lock:
            watched = self._watched[table_id]

            def woken() -> bool:
                return self._closed or watched.version > beyond or self._resyncs != resyncs

            if not watched.changed.wait_for(woken, timeout) or self._closed:
                return None
            return watched.version, self._resyncs

    def heads_after(self, position: int) -> tuple[list[HeadChange], int] | None:
        """The head changes after ``position`` and the position heard up to; None when this hub does not
        hold them all (they are read from the log)."""
        with self._lock:
            if self._floor is None or position < self._floor:
                return None
            found = []
            for head in reversed(self._heads):
                if head.position <= position:
                    break
                found.append(head)
            found.reverse()
            return found, self._position

    def wait_heads(self, position: int, timeout: float) -> bool:
        """True once something was heard after ``position`` (or it is to be read from the log); False after
        ``timeout`` seconds, or once the hub is closed."""

        def woken() -> bool:
            return self._closed or (self._floor is not None and (self._position > position or position < self._floor))

        with self._lock:
            return self._heads_changed.wait_for(woken, timeout) and not self._closed


def _refusal(reason: str, limit: int) -> StreamRefused:
    if reason == "stopping":
        return StreamRefused("This server process is stopping; connect again to be served by another.", RETRY_STOPPING)
    if limit == 0:
        return StreamRefused("This server opens no live streams (ZAMETANO_MAX_STREAMS=0).")
    return StreamRefused(
        f"This server process holds as many live streams as it may ({limit}, ZAMETANO_MAX_STREAMS); try again "
        f"in {RETRY_FULL} seconds.", RETRY_FULL)


# --- what the log says ----------------------------------------------------------------------------------


@lru_cache(maxsize=256)  # one entry per event class
def is_table_topic(topic: str) -> bool:
    try:
        cls = resolve_topic(topic)
    except Exception:  # noqa: BLE001 - a class that no longer exists is no table's head the hub can show
        return False
    return isinstance(cls, type) and issubclass(cls, TableEvent)


def versions_of(events: Sequence[Any]) -> dict[str, int]:
    """The last version of each table among recorded events (or notifications), in the order recorded."""
    return {str(e.originator_id): e.originator_version for e in events}


def heads_of(notes: Sequence[Any], mapper: Any) -> tuple[list[HeadChange], dict[str, Opening]]:
    """Each table's last change among notifications, in position order, and the openings among them. A
    notification that cannot be read is left out (its table's stream, reading the log, says so)."""
    last: dict[str, Any] = {}
    for note in notes:
        last[str(note.originator_id)] = note
    heads, openings = [], {}
    for table_id, note in last.items():
        if not is_table_topic(note.topic):
            continue
        try:
            event = mapper.to_domain_event(note)
        except Exception:  # noqa: BLE001 - a damaged event is the audit's to name
            continue
        heads.append(HeadChange(note.id, table_id, note.originator_version, event.digest, event.timestamp_text))
        if isinstance(event, TableOpened):
            openings[table_id] = opening_of(event)
    heads.sort(key=lambda head: head.position)
    return heads, openings


def opening_of(event: TableOpened) -> Opening:
    return {"game": event.game, "opened_at": event.timestamp_text, "players": list(event.players)}


class Publisher:
    """Tells a hub what the read model's follower reads (service/follower.py)."""

    def __init__(self, hub: Hub, mapper: Any) -> None:
        self.hub, self.mapper = hub, mapper

    def subscribed(self, gt: int) -> None:
        self.hub.subscribed(gt)

    def read(self, notes: Sequence[Any]) -> None:
        if not notes:
            return
        self.hub.moved(versions_of(notes))
        heads, openings = heads_of(notes, self.mapper)
        self.hub.heard(notes[-1].id, heads, openings)


# --- the streams ------------------------------------------------------------------------------------------


class TableFeed:
    """A table's events after version ``after``, then each one as it is recorded, in version order, each
    once; None where ``heartbeat`` seconds passed without one. Built open: the table exists and the first
    page of its backlog reads (TableNotFound, DamagedLog now rather than a broken stream)."""

    def __init__(self, reader: Reader, hub: Hub, table_id: str, after: int, heartbeat: float) -> None:
        self.reader, self.hub, self.table_id, self.heartbeat = reader, hub, table_id, heartbeat
        self.last = after  # the last version sent (or skipped by the client's choice)
        self.slot = hub.admit("table")
        self._watching = False
        try:
            self._resyncs = hub.watch(table_id)  # first: nothing recorded after this is missed
            self._watching = True
            self._backlog = reader.iter_events(table_id, after=after)
            self._first = next(self._backlog, None)
        except BaseException:
            self.close()
            raise

    def __iter__(self) -> Iterator[dict[str, Any] | None]:
        for batch in self.batches():
            if batch is None:
                yield None
            else:
                yield from batch

    def batches(self) -> Iterator[list[dict[str, Any]] | None]:
        """As iterating, but what one read brings comes as one list (never empty), so that a command's
        events go to the client in one write rather than one write each."""
        if self._first is not None:
            yield from self._pages(itertools.chain((self._first,), self._backlog))
        self._first = None
        waited = self.last
        while True:
            woke = self.hub.wait_table(self.table_id, max(self.last, waited), self._resyncs, self.heartbeat)
            if woke is None:
                if self.hub.closed:
                    return
                yield None
                continue
            heard, resyncs = woke
            if resyncs != self._resyncs:
                self._resyncs = resyncs
                yield from self._pages(self.reader.iter_events(self.table_id, after=self.last))
            else:
                yield from self._new(heard)
            waited = heard

    def _pages(self, events: Iterator[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
        page: list[dict[str, Any]] = []
        for event in self._sent(events):
            page.append(event)
            if len(page) == PAGE:
                yield page
                page = []
        if page:
            yield page

    def _new(self, heard: int) -> Iterator[list[dict[str, Any]]]:
        """The events after the last one sent up to version ``heard``, read once for every stream of the table."""
        while self.last < heard:
            after = self.last
            events = self.hub.reads.get((self.table_id, after, heard), lambda: [
                e.public() for e in self.reader.read_events(self.table_id, after=after, upto=heard, limit=PAGE)])
            batch = list(self._sent(events))
            if not batch:
                return  # nothing there after all: wait for the next change
            yield batch

    def _sent(self, events: Any) -> Iterator[dict[str, Any]]:
        for event in events:
            if event["version"] > self.last:  # never twice, never back
                yield event
                self.last = event["version"]

    def close(self) -> None:
        if self._watching:
            self._watching = False
            self.hub.unwatch(self.table_id)
        self.slot.release()


class HeadFeed:
    """Every table's head as it changes, after position ``after`` in the log (None: from now), as
    ``(position, head)``; None where ``heartbeat`` seconds passed without one. A position this process no
    longer holds is read from the log, each table's latest head among what was recorded since."""

    def __init__(self, reader: Reader, hub: Hub, after: int | None, heartbeat: float) -> None:
        self.reader, self.hub, self.heartbeat = reader, hub, heartbeat
        self.slot = hub.admit("heads")
        try:
            now = reader.log_position()
        except BaseException:
            self.close()
            raise
        # A position past the log's end (from another store) would wait for changes that never come.
        self.position = now if after is None else min(after, now)

    def __iter__(self) -> Iterator[tuple[int, dict[str, Any]] | None]:
        while True:
            heads, moved_to, more = self._next()
            for head in heads:
                yield head.position, self._shown(head)
                self.position = max(self.position, head.position)
            self.position = max(self.position, moved_to)
            if more:
                continue
            if not self.hub.wait_heads(self.position, self.heartbeat):
                if self.hub.closed:
                    return
                yield None

    def batches(self) -> Iterator[list[tuple[int, dict[str, Any]]] | None]:
        """One head a write: heads are few and small."""
        for item in self:
            yield None if item is None else [item]

    def _next(self) -> tuple[list[HeadChange], int, bool]:
        """The changes after the position, the position they take it to, and whether more are to be read."""
        found = self.hub.heads_after(self.position)
        if found is not None:
            return found[0], found[1], False
        heads, read_to, whole = self.reader.head_changes(self.position, PAGE)
        return heads, read_to, not whole

    def _shown(self, head: HeadChange) -> dict[str, Any]:
        opening = self._opening(head.table_id) or {"game": None, "opened_at": None, "players": None}
        return {"table_id": head.table_id, "game": opening["game"], "version": head.version, "digest": head.digest,
                "timestamp": head.timestamp, "opened_at": opening["opened_at"], "players": opening["players"]}

    def _opening(self, table_id: str) -> Opening | None:
        known = self.hub.openings.get(table_id)
        if known is not None:
            return known  # type: ignore[no-any-return]
        try:
            first = self.reader.read_events(table_id, upto=1)
        except ServiceError:  # a damaged opening: the table is still listed, without it (an outage ends the stream)
            return None
        if not first or not isinstance(first[0], TableOpened):
            return None
        opening = opening_of(first[0])
        self.hub.openings.put(table_id, opening)
        return opening

    def close(self) -> None:
        self.slot.release()
