"""The per-process hub of the live streams: their places (admission), and what the process heard of the log.

A stream waits on the hub (its table's condition variable, with its heartbeat as the timeout: a change wakes
only the streams of its table); the hub learns of changes from the service's own commits and from the read
model's follower (service/streams/log.py), and keeps the recent head changes for the streams of heads.
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from service import metrics
from service.errors import StreamRefused
from service.streams.kept import Kept, Recorded, SharedReads
from service.streams.log import HeadChange, Opening

# Events a hub keeps of each table its streams follow, as recorded, so that those streams send what was just
# recorded without reading it again (a stream further behind reads the log).
RECENT = 256
# Head changes a hub keeps for streams that resume (Last-Event-ID); an older position is read from the log.
HISTORY = 10_000
OPENINGS = 10_000  # tables whose game, players and opening time a hub keeps (they never change)
# Seconds a client refused for a full process waits: a stream ends when its client has gone, noticed at its
# next heartbeat at the latest.
RETRY_FULL = 5
RETRY_STOPPING = 1  # a stopping process: another one (or its replacement) takes the stream at once

_HUBS: weakref.WeakSet[Hub] = weakref.WeakSet()


def stop_all() -> None:
    """Ends every stream of this process (the worker is stopping: gunicorn waits for open requests)."""
    for hub in list(_HUBS):
        hub.close()


class Slot:
    """One stream's place among the process's ``max_streams``."""

    def __init__(self, hub: Hub, kind: str) -> None:
        self.hub, self.kind = hub, kind
        self.held = True

    def release(self) -> None:
        self.hub.release(self)


class _Watched:
    """A table some streams follow: how many, the highest version heard, the condition they wait on, and its
    latest events as recorded (by version; not always every version: one heard of only by ``moved`` is not)."""

    __slots__ = ("streams", "version", "changed", "recent")

    def __init__(self, lock: threading.Lock) -> None:
        self.streams = 0
        self.version = 0
        self.changed = threading.Condition(lock)
        self.recent: dict[int, Recorded] = {}


class Hub:
    """What this process has heard of the log, for its streams (see service/streams/__init__.py). One lock; a
    condition per followed table, so that a change wakes only the streams of its table, and one for the
    streams of heads."""

    def __init__(self, max_streams: int = 32) -> None:
        self.max_streams = max_streams
        self._lock = threading.Lock()
        self._heads_changed = threading.Condition(self._lock)
        self._open = 0
        self._closed = False
        self._watched: dict[str, _Watched] = {}
        self._resyncs = 0  # moved when this hub may have missed changes: every stream reads again
        self._heads: deque[HeadChange] = deque(maxlen=HISTORY)  # in position order
        self._floor: int | None = None  # every head change after this position is in _heads (None: nothing heard)
        self._position = 0  # the last position heard
        self.openings = Kept(OPENINGS)
        self.reads = SharedReads()
        # Told when a stream opens in a process that had none: the follower reads the log again for it.
        self.first_stream: Callable[[], None] | None = None
        _HUBS.add(self)

    # --- streams ------------------------------------------------------------------------------------

    def admit(self, kind: str) -> Slot:
        """A place for one more stream, or StreamRefused (503) saying why there is none."""
        with self._lock:
            reason = "stopping" if self._closed else "full" if self._open >= self.max_streams else None
            if reason is None:
                self._open += 1
            first = self._open == 1 and reason is None
        if reason is not None:
            metrics.stream_refused(reason)
            raise _refusal(reason, self.max_streams)
        metrics.OPEN_STREAMS.labels(kind).inc()
        if first and self.first_stream is not None:
            self.first_stream()
        return Slot(self, kind)

    @property
    def streams_open(self) -> int:
        return self._open

    def release(self, slot: Slot) -> None:
        with self._lock:
            if not slot.held:
                return
            slot.held = False
            self._open -= 1
        metrics.OPEN_STREAMS.labels(slot.kind).dec()

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
            self._move(versions)

    def _move(self, versions: Mapping[str, int]) -> None:  # holding the lock
        for table_id, version in versions.items():
            watched = self._watched.get(table_id)
            if watched is not None and version > watched.version:
                watched.version = version
                watched.changed.notify_all()

    def recorded(self, events: Sequence[Any]) -> None:
        """These table events were recorded (a read now finds them), in the order recorded: their tables moved,
        and the events of the tables this hub's streams follow are kept, so that the streams woken send them
        without a read of their own. Kept and moved under one lock: a stream woken finds them kept."""
        versions: dict[str, int] = {}
        with self._lock:
            for event in events:
                table_id = str(event.originator_id)
                versions[table_id] = event.originator_version
                watched = self._watched.get(table_id)
                if watched is None or event.originator_version in watched.recent:
                    continue
                watched.recent[event.originator_version] = Recorded(event)
                if len(watched.recent) > RECENT:  # the older half goes: one sort every RECENT / 2 events
                    for version in sorted(watched.recent)[:RECENT // 2]:
                        del watched.recent[version]
            self._move(versions)

    def unkept(self, versions: Iterable[tuple[str, int]]) -> set[tuple[str, int]]:
        """Which of these (table, version) are of tables this hub's streams follow and not kept yet: the events
        ``recorded`` would keep (this process's own commits are kept already)."""
        with self._lock:
            return {(table_id, version) for table_id, version in versions
                    if table_id in self._watched and version not in self._watched[table_id].recent}

    def kept(self, table_id: str, after: int, upto: int) -> list[Recorded] | None:
        """The (followed) table's events after version ``after`` up to ``upto``, as recorded, if this hub keeps
        every one of them; else None (they are read from the log)."""
        if upto - after > RECENT:
            return None
        with self._lock:
            watched = self._watched.get(table_id)
            if watched is None:
                return None
            found = [watched.recent.get(version) for version in range(after + 1, upto + 1)]
        return None if None in found else found  # type: ignore[return-value]

    @property
    def hearing(self) -> bool:
        """Whether a follower has subscribed: other processes' commands reach the streams only from then on."""
        return self._floor is not None

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
