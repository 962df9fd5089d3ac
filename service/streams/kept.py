"""What a hub keeps in memory for its streams: bounded maps, and reads shared by the streams of one table.

Both forget the least recently used entry first; what they keep never changes once recorded (a table's
opening, the events of a read), so a kept answer stays right.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

SHARED_READS = 64  # recent reads of new events kept for the other streams of the same table


class Kept:
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


class Recorded:
    """A table's event as recorded, kept by a hub for the streams of its table, with what they made of it: its
    public form (service/present.py), made by the first stream to need it, and each viewer's rendering of it,
    made by the first stream of that viewer. Every stream of a table in a process sends the same few events at
    once: one of them does the work, the others take it. Two that make it at the same moment make the same
    thing, so no lock is needed: the last one kept is as good as the first."""

    __slots__ = ("event", "public", "rendered")

    def __init__(self, event: Any) -> None:
        self.event = event
        self.public: dict[str, Any] | None = None
        self.rendered: dict[Any, Any] = {}


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
