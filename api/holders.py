"""Live streams per credential: in each worker, one token (or player) holds at most a quarter of its streams.

The worker's own cap (ZAMETANO_MAX_STREAMS, service/streams/hub.py) is shared by everyone: without this, one
auditor's token could take every stream of every worker and leave none to the croupiers' desks. A stream past
its holder's share is a 503 with ``Retry-After``, like one past the worker's. A service without tokens (open, on
loopback: one machine's user) has one holder only, and only the worker's cap.
"""

from __future__ import annotations

import threading
from typing import Any

from service import metrics
from service.errors import StreamRefused

SHARE = 4  # a credential holds at most 1/SHARE of a worker's streams (at least one)
RETRY = 5  # seconds: a stream ends when its client has gone, noticed at its next heartbeat at the latest


def share(max_streams: int) -> int:
    return max(1, max_streams // SHARE)


class Holders:
    """The streams each credential holds in this worker."""

    def __init__(self, max_streams: int) -> None:
        self.limit = share(max_streams)
        self._lock = threading.Lock()
        self._held: dict[tuple[str, str], int] = {}

    def take(self, holder: tuple[str, str] | None) -> None:
        """One more stream for ``holder`` (None: no credential, no share), or StreamRefused."""
        if holder is None:
            return
        with self._lock:
            held = self._held.get(holder, 0)
            if held < self.limit:
                self._held[holder] = held + 1
                return
        metrics.stream_refused("credential")
        raise StreamRefused(f"This credential holds as many live streams as one credential may in this server "
                            f"process ({self.limit}, a quarter of ZAMETANO_MAX_STREAMS); close one, or try again in "
                            f"{RETRY} seconds.", RETRY)

    def give_back(self, holder: tuple[str, str] | None) -> None:
        if holder is None:
            return
        with self._lock:
            held = self._held.get(holder, 0) - 1
            if held > 0:
                self._held[holder] = held
            else:
                self._held.pop(holder, None)


class HeldFeed:
    """A service feed that gives its holder's place back when it is closed (once, however often it is)."""

    def __init__(self, feed: Any, holders: Holders, holder: tuple[str, str] | None) -> None:
        self.feed, self.holders, self.holder = feed, holders, holder
        self._lock = threading.Lock()
        self._held = True

    def batches(self) -> Any:
        return self.feed.batches()

    def close(self) -> None:
        self.feed.close()
        with self._lock:
            held, self._held = self._held, False
        if held:
            self.holders.give_back(self.holder)


def opened(holders: Holders, holder: tuple[str, str] | None, open_feed: Any) -> HeldFeed:
    """The feed ``open_feed()`` makes, counted against ``holder``'s share (given back if it cannot be opened)."""
    holders.take(holder)
    try:
        feed = open_feed()
    except BaseException:
        holders.give_back(holder)
        raise
    return HeldFeed(feed, holders, holder)
