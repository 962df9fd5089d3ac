"""Counts in words, so that no message says "1 were listed" or hides behind "player(s)"."""

from __future__ import annotations


def counted(count: int, singular: str, plural: str | None = None) -> str:
    """``count`` with the word in the number it takes: ``counted(1, "card")`` is "1 card",
    ``counted(3, "card")`` "3 cards"; ``plural`` where adding an s is wrong ("player was", "players were")."""
    return f"{count} {singular if count == 1 else plural or singular + 's'}"
