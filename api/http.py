"""HTTP's forms of what the service takes as plain values: ``If-Match`` is the version a command expects,
a page's ``cursor`` the position after which the next page starts (and ``next_cursor`` the service's
``next_after``). Whatever cannot be read is a RequestRefused, answered 400 or 422 by api/errors.py."""

from __future__ import annotations

import re
from typing import Any

from flask import request

# Past this no version or position exists; it also keeps a client's number within a database integer.
MAX_NUMBER = 2**62
# A version in an entity tag, strong or weak: "7" or W/"7" (a bare 7 is read the same, as it always was).
_VERSION_TAG = re.compile(r'(?:W/)?("?)(\d{1,19})\1')


class RequestRefused(Exception):
    """A header or query parameter the API cannot read; ``field`` names it, ``message`` says what is allowed."""

    def __init__(self, status: int, field: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.field = field
        self.message = message


def expected_version(header: str | None) -> int | None:
    """``If-Match: "7"`` (or ``W/"7"``): the version the client last saw, which the command expects.
    None without the header or with ``*`` (any current version: the table must only exist)."""
    if header is None or header.strip() == "*":
        return None
    match = _VERSION_TAG.fullmatch(header.strip())
    if match is None or int(match.group(2)) > MAX_NUMBER:
        raise RequestRefused(400, "If-Match", 'If-Match names one version of the table, e.g. "7" or W/"7".')
    return int(match.group(2))


def command_preconditions() -> dict[str, Any]:
    """The command's ``If-Match`` and ``Idempotency-Key`` headers as the service's arguments."""
    return {
        "expected_version": expected_version(request.headers.get("If-Match")),
        "idempotency_key": request.headers.get("Idempotency-Key"),
    }


def after(cursor: str | None) -> int:
    """A page's ``cursor``, the ``next_cursor`` of the page before: the position the page starts after."""
    if not cursor:
        return 0
    if not cursor.isascii() or not cursor.isdigit() or len(cursor) > 19 or int(cursor) > MAX_NUMBER:
        raise RequestRefused(422, "cursor", "'cursor' is the 'next_cursor' of the previous page.")
    return int(cursor)


def cursor_page(page: dict[str, Any]) -> dict[str, Any]:
    """A page of the service's (``next_after``) as the API shows it (``next_cursor``, a string)."""
    rest = {k: v for k, v in page.items() if k != "next_after"}
    return {**rest, "next_cursor": None if page["next_after"] is None else str(page["next_after"])}
