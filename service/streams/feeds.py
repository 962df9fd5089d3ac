"""The feeds a live stream sends from: one table's events, and every table's head, each waiting on the hub.

A feed reads nothing while what it follows does not move. When it moves, a table's feed sends the events after
the last one it sent, so that nothing comes twice or out of order: as the hub keeps them when it was told of
them as they were recorded (the usual case), else read through the service's ordinary reads (``Reader``),
one read shared by every stream of the table. Each subscriber's feed shows an event as that subscriber sees
it (domain/sight.py), each event at its own moment; streams of the same view share what one of them made.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from domain.sight import Sight
from domain.table import TableOpened
from service import present
from service.errors import ServiceError
from service.streams.hub import Hub
from service.streams.kept import Recorded
from service.streams.log import HeadChange, Opening, opening_of

PAGE = 500  # events, or notifications, read at once


class Reader(Protocol):
    """What the streams read through (TablesService)."""

    def iter_events(self, table_id: str, after: int = 0, batch: int = 500) -> Iterator[dict[str, Any]]: ...

    def read_events(self, table_id: str, *, after: int = 0, upto: int | None = None,
                    limit: int | None = None) -> list[Any]: ...

    def head_changes(self, after: int, limit: int) -> tuple[list[HeadChange], int, bool]: ...

    def log_position(self) -> int: ...


class TableFeed:
    """A table's events after version ``after``, then each one as it is recorded, in version order, each
    once; None where ``heartbeat`` seconds passed without one. Built open: the table exists and the first
    page of its backlog reads (TableNotFound, DamagedLog now rather than a broken stream)."""

    def __init__(self, reader: Reader, hub: Hub, table_id: str, after: int, heartbeat: float,
                 seen: Sight | None = None, render: Callable[[dict[str, Any]], Any] | None = None) -> None:
        self.reader, self.hub, self.table_id, self.heartbeat = reader, hub, table_id, heartbeat
        self.seen = seen  # this subscriber's view (None: as recorded); the reads shared by all are not
        # What the caller makes of each event as this subscriber sees it (None: the event itself); a function
        # of the event alone, so that every stream of the same view shares what one made (Recorded.rendered).
        self.render = render
        self._kind = _kind_of(seen, render)
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

    def batches(self) -> Iterator[list[Any] | None]:
        """The events (each rendered, with a ``render``), what one read brings as one list (never empty), so
        that a command's events go to the client in one write rather than one write each."""
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

    def _pages(self, events: Iterator[dict[str, Any]]) -> Iterator[list[Any]]:
        page: list[Any] = []
        for event in self._sent(events):
            page.append(event)
            if len(page) == PAGE:
                yield page
                page = []
        if page:
            yield page

    def _new(self, heard: int) -> Iterator[list[Any]]:
        """The events after the last one sent up to version ``heard``: as the hub keeps them when it keeps them
        all (it was told of them as they were recorded), else read once for every stream of the table."""
        if self.last >= heard:
            return
        kept = self.hub.kept(self.table_id, self.last, heard)
        if kept is not None:
            yield [self._shown(recorded) for recorded in kept]
            self.last = heard
            return
        while self.last < heard:
            after = self.last
            events = self.hub.reads.get((self.table_id, after, heard), lambda: present.events(
                self.reader.read_events(self.table_id, after=after, upto=heard, limit=PAGE)))
            batch = list(self._sent(events))
            if not batch:
                return  # nothing there after all: wait for the next change
            yield batch

    def _sent(self, events: Any) -> Iterator[Any]:
        for event in events:
            if event["version"] > self.last:  # never twice, never back
                yield self._out(event)
                self.last = event["version"]

    def _out(self, public: dict[str, Any]) -> Any:
        shown = present.as_seen(public, self.seen)
        return shown if self.render is None else self.render(shown)

    def _shown(self, recorded: Recorded) -> Any:
        """A kept event as this subscriber's output, made once for every stream of its kind."""
        kind = self._kind
        if kind is not None:
            made = recorded.rendered.get(kind)
            if made is not None:
                return made
        public = recorded.public
        if public is None:
            public = recorded.public = present.event(recorded.event)
        made = self._out(public)
        if kind is not None:
            recorded.rendered[kind] = made
        return made

    def close(self) -> None:
        if self._watching:
            self._watching = False
            self.hub.unwatch(self.table_id)
        self.slot.release()


def _kind_of(seen: Sight | None, render: Any) -> Any:
    """What makes two streams' output of an event the same: the view and the rendering (None: never shared,
    for a view that holds a moment's ledger, which no two streams share)."""
    try:
        hash(seen)
    except TypeError:
        return None
    return (seen, render)


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
