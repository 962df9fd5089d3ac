"""The bounds every query puts on positions and page sizes, in one place."""

from __future__ import annotations

MAX_PAGE = 1000
# Versions, rounds and cursors past this cannot exist, and would overflow a database integer.
MAX_NUMBER = 2**62


def position(after: int) -> int:
    """A position in a log (a version, a round, a notification) as a query takes it: none before 0, none
    past MAX_NUMBER."""
    return min(max(after, 0), MAX_NUMBER)


def page_size(limit: int) -> int:
    """A page's length as a query takes it: at least 1, at most MAX_PAGE."""
    return max(1, min(limit, MAX_PAGE))
