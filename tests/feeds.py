"""What the tests read of the live streams (service/streams/) that the server reads otherwise.

The server sends a feed's batches (``feed.batches()``, one write each) and counts nothing itself: the tests
follow a feed item by item, and ask a hub how many streams it holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def items(feed: Any) -> Iterator[Any]:
    """A feed's items one by one (None: a heartbeat), as its batches bring them."""
    for batch in feed.batches():
        if batch is None:
            yield None
        else:
            yield from batch


def held_streams(hub: Any) -> int:
    """The streams a hub holds (its places taken, not yet released)."""
    with hub._lock:
        return hub._open  # type: ignore[no-any-return]
