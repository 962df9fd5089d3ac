"""Checkpoints of the round tracker, so that a round audit need not read a table's log from version 1.

They hold the tracker's state at versions this process read before, each held to the digest of the event
there. Finding round n from the log alone means reading it from version 1 (the tracker's state is the whole prefix).
Every reading (a round audit, a verify) leaves the tracker's state every ``EVERY`` versions here, so the next
round audit of the table reads from the nearest such version before round n. A checkpoint is used only while
the event at its version still has the digest it had (the chain binds every event before it to that digest);
otherwise the table's checkpoints are forgotten and the log is read from version 1. Derived from the log by
this process alone: the read model never says where a round is.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from typing import Any

EVERY = 100
LIMIT = 20_000  # checkpoints kept in all (a few hundred bytes each), the least recently used table's first

_lock = threading.Lock()
_kept: OrderedDict[str, dict[int, tuple[str, str, dict[str, Any]]]] = OrderedDict()
_count = 0


def keep(table_id: str, version: int, digest: str, game: str, state: dict[str, Any]) -> None:
    global _count
    with _lock:
        table = _kept.setdefault(table_id, {})
        _count += version not in table
        table[version] = (digest, game, copy.deepcopy(state))
        _kept.move_to_end(table_id)
        while _count > LIMIT and len(_kept) > 1:
            _, dropped = _kept.popitem(last=False)
            _count -= len(dropped)


def before_round(table_id: str, number: int) -> list[tuple[int, str, str, dict[str, Any]]]:
    """The checkpoints at which round ``number`` had not begun, the latest first."""
    with _lock:
        table = _kept.get(table_id, {})
        found = [(v, d, g, s) for v, (d, g, s) in table.items() if s["rounds"] < number]
    return [(v, d, g, copy.deepcopy(s)) for v, d, g, s in sorted(found, key=lambda c: c[0], reverse=True)]


def forget(table_id: str) -> None:
    global _count
    with _lock:
        _count -= len(_kept.pop(table_id, {}))
