"""Words for messages: counts in their number, and what a client sent quoted as he wrote it.

No message says "1 were listed" or hides behind "player(s)", and none echoes a request's value in Python's
spelling (``True`` for ``true``, ``100.0`` for ``1e2``).
"""

from __future__ import annotations

import json
from typing import Any


class Spelled(float):
    """A JSON number written with a fraction or an exponent, kept as the client wrote it ("1e2"), so that a
    refusal quotes it as sent; it is a float to everything else (never a whole number: no field takes it)."""

    text: str

    def __new__(cls, text: str) -> "Spelled":
        number = super().__new__(cls, text)
        number.text = text
        return number

    def __repr__(self) -> str:
        return self.text


def as_sent(value: Any) -> str:
    """A value of a request as a message quotes it: a text in quotes, anything else in JSON's spelling (true,
    null, 1e2 as written, lists and objects as JSON)."""
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, Spelled):
        return value.text
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def counted(count: int, singular: str, plural: str | None = None) -> str:
    """``count`` with the word in the number it takes: ``counted(1, "card")`` is "1 card",
    ``counted(3, "card")`` "3 cards"; ``plural`` where adding an s is wrong ("player was", "players were")."""
    return f"{count} {singular if count == 1 else plural or singular + 's'}"
