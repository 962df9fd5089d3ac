"""HTTP's forms of what the service takes as plain values.

HTTP's forms of what the service takes as plain values: ``If-Match`` is the version a command expects
and ``ETag`` the version a state shows, a page's ``cursor`` the position after which the next page starts
(and ``next_cursor`` the service's ``next_after``). Whatever cannot be read is a RequestRefused, answered
400 or 422 by api/errors.py."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from functools import wraps
from typing import Any

from flask import current_app, request

from service.limits import MAX_NUMBER

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


def etag(version: int) -> dict[str, str]:
    """The ``ETag`` of a table's state at ``version``: the version, in the form ``If-Match`` takes back. A
    strong tag, since a table's state at a version is always the same bytes."""
    return {"ETag": f'"{version}"'}


def conditional(view: Callable[..., Any]) -> Callable[..., Any]:
    """A GET view of a state (its ETag the version it shows) honours the preconditions of RFC 9110 13.1, If-Match
    first: ``If-Match`` is read as a command reads it (a version, or ``*``; anything else a 400) and naming
    another version is a 412 (on a GET; a command's stale If-Match stays the contract's 409);
    ``If-None-Match`` naming this state is a 304 without a body, so a client polling a table it has already
    read gets nothing more until the table moves."""

    @wraps(view)
    def answer(*args: Any, **kwargs: Any) -> Any:
        response = view(*args, **kwargs)
        tag, _ = response.get_etag()
        expected = expected_version(request.headers.get("If-Match"))
        if expected is not None and str(expected) != tag:
            raise RequestRefused(412, "If-Match", f'If-Match names version {expected}, but this state is version '
                                                  f"{tag}; a GET needs no If-Match.")
        if request.if_none_match.contains_weak(tag):
            return current_app.response_class(status=304, headers={"ETag": response.headers["ETag"]})
        return response

    return answer


def digest_tag(body: bytes) -> str:
    """A strong entity tag of a body's bytes (unquoted): the first 128 bits of its SHA-256."""
    return hashlib.sha256(body).hexdigest()[:32]


def digest_tagged(view: Callable[..., Any]) -> Callable[..., Any]:
    """A GET view whose answer seldom changes (a finished round's audit): its ETag a digest of the bytes it
    sends, and ``If-None-Match`` naming it a 304 without a body. Taken from the body, the tag is right whatever
    made the answer change (a log damaged since shows new problems, so a new tag), and differs between viewers
    who see different cards."""

    @wraps(view)
    def answer(*args: Any, **kwargs: Any) -> Any:
        response = view(*args, **kwargs)
        if response.status_code != 200:
            return response
        tag = digest_tag(response.get_data())
        response.set_etag(tag)
        if request.if_none_match.contains_weak(tag):
            return current_app.response_class(status=304, headers={"ETag": response.headers["ETag"]})
        return response

    return answer


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
