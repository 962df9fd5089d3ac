"""What a page costs to fetch: answers gzipped for clients that take gzip, validators on documents that do not change.

- ``GET /games``: the games as /openapi.json's ``x-games`` tells them, without the rest of the document: what
  the desk needs to draw its forms, a few kilobytes instead of the whole description of the API.
- /games and /openapi.json are serialised once per process; each carries a strong ``ETag`` (a digest of its
  bytes) and ``Cache-Control: no-cache``, so a page fetched again asks whether it changed and hears 304 with
  no body until a new version of the service is deployed. The desk's files have theirs from Flask's
  ``send_file``.
- Any answer of at least ``MIN_SIZE`` bytes in a textual type is gzipped when the request's
  ``Accept-Encoding`` names gzip; every such answer says ``Vary: Accept-Encoding``. Streams (Server-Sent
  Events, NDJSON exports) are never buffered for it: each message must leave as soon as it is written. An
  ETag stays as it is on a gzipped answer: a state's names its version, which ``If-Match`` takes back, and
  ``Vary`` keeps caches from mixing the two encodings.
"""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Callable
from typing import Any

from flask import Blueprint, Flask, Response, current_app, request

from api.http import digest_tag

MIN_SIZE = 500  # below this a gzip header and a round of CPU save nothing worth having
LEVEL = 6  # zlib's default: about 4x on JSON at a few hundred microseconds for the largest answers
COMPRESSIBLE = ("application/json", "application/problem+json", "text/html", "text/css", "text/javascript",
                "application/javascript", "image/svg+xml", "text/plain")
# Files served by send_file are compressed once per version of the file (its ETag), not once per request.
FILE_CACHE_SIZE = 64

blp = Blueprint("pages", __name__)


class Document:
    """A JSON document built once, on the first request that asks for it (the app's routes are all known
    by then), served with a strong ETag and answered 304 while a client's copy is still it."""

    def __init__(self, build: Callable[[], Any], indent: int | None = None) -> None:
        self._build = build
        self._indent = indent
        self._body: bytes | None = None
        self._tag = ""
        self._lock = threading.Lock()

    def _ready(self) -> tuple[bytes, str]:
        if self._body is None:
            with self._lock:
                if self._body is None:
                    body = json.dumps(self._build(), indent=self._indent, ensure_ascii=False).encode()
                    self._tag = digest_tag(body)
                    self._body = body
        return self._body, self._tag

    def answer(self) -> Response:
        body, tag = self._ready()
        headers = {"ETag": f'"{tag}"', "Cache-Control": "no-cache"}
        if request.if_none_match.contains_weak(tag):
            return current_app.response_class(status=304, headers=headers)
        return current_app.response_class(body, mimetype="application/json", headers=headers)


def _games() -> Any:
    from api.schemas import games_document  # the schemas import the games registry: not needed before a request

    return games_document()


GAMES = Document(_games)


@blp.route("/games")
def games() -> Response:
    """The games (who plays, roles, options, accounts, commands and their fields): /openapi.json's ``x-games``."""
    return GAMES.answer()


def accepts_gzip() -> bool:
    """Whether the request's Accept-Encoding takes gzip (a q of 0 refuses it, RFC 9110 12.5.3)."""
    given = request.environ.get("HTTP_ACCEPT_ENCODING", "")
    if "gzip" not in given and "*" not in given:
        return False  # most API clients send none: its parsing is not worth a command's time
    return request.accept_encodings["gzip"] > 0 or (
        "gzip" not in request.accept_encodings and request.accept_encodings["*"] > 0)


def compressible(response: Response) -> bool:
    """A whole body of a textual type: a file (send_file's passthrough) or an answer held in memory, never a
    stream of messages (which is streamed, not passthrough)."""
    if response.status_code not in (200, 201) or response.mimetype not in COMPRESSIBLE:
        return False
    if "Content-Encoding" in response.headers:
        return False
    return response.direct_passthrough or not response.is_streamed


class _FileCache:
    """The gzipped bytes of files, by path and ETag: a file is compressed once per version of it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, str], bytes] = {}

    def get(self, key: tuple[str, str], make: Callable[[], bytes]) -> bytes:
        with self._lock:
            found = self._entries.get(key)
        if found is None:
            found = make()
            with self._lock:
                if len(self._entries) >= FILE_CACHE_SIZE:
                    self._entries.clear()
                self._entries[key] = found
        return found


FILES = _FileCache()


def compress(response: Response) -> Response:
    """Gzips the answer when the client takes gzip and it is worth it (see the module's docstring)."""
    textual = response.mimetype in COMPRESSIBLE
    if textual and (response.direct_passthrough or not response.is_streamed):
        if "Vary" in response.headers:
            response.vary.add("Accept-Encoding")
        else:
            response.headers["Vary"] = "Accept-Encoding"  # as vary.add writes it, without parsing an empty set
    if not textual or request.method == "HEAD" or not accepts_gzip() or not compressible(response):
        return response
    is_file = response.direct_passthrough
    if is_file:
        response.direct_passthrough = False  # a desk file: read it whole (they are a few kilobytes)
    data = response.get_data()
    if len(data) < MIN_SIZE:
        return response
    tag, _ = response.get_etag()
    if is_file and tag:
        packed = FILES.get((request.path, tag), lambda: gzip.compress(data, LEVEL, mtime=0))
    else:
        packed = gzip.compress(data, LEVEL, mtime=0)
    response.set_data(packed)
    response.headers["Content-Encoding"] = "gzip"
    return response


def register(app: Flask) -> None:
    app.register_blueprint(blp)
    app.after_request(compress)
