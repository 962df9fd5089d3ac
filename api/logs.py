"""The service's own log: one line per request and per event worth an operator's attention.

The service's own log: one line per request, one for each refusal, conflict, retry, idempotent repeat, store
outage and failure, each with the request's id.

Lines go to stderr as JSON objects, one a line, unless stderr is a terminal, where they are text for a
person; ``ZAMETANO_LOG_FORMAT=json|text`` chooses. No line can be forged by a client: JSON escapes every
control character, and the text form writes each one as an escape (``\\n``), so whatever a client sends
ends up inside the one line it belongs to. Request bodies are never logged, nor anything the service keeps
hidden (undealt cards, unrevealed seeds): the lines carry names, ids, statuses and the messages clients
are answered with, which never hold either.

Every line written while a request is served names its principal (api/auth.py): ``role`` (operator,
auditor, player, open) and ``principal``, the token's name or the player, never the token itself; a request
refused before it has one (a 401, a 429) has neither.

A request's id is the client's ``X-Request-Id`` when that is 1 to 128 characters of ``A-Z a-z 0-9 . _ :
-``, else a new one; it is returned in the ``X-Request-Id`` header of every response and as ``request_id``
in every error body (api/errors.py), so a client's report leads to the server's lines.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import re
import sys
import traceback
import uuid
from datetime import datetime, timezone
from time import perf_counter
from typing import Any

from flask import Flask, g, has_request_context, request

from api import edge

HEADER = "X-Request-Id"
ENVIRON_KEY = "HTTP_X_REQUEST_ID"  # the header as WSGI hands it over, read without building the request's headers
CLIENT_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
# A refusal's message in the log: enough to see what was wrong, never a client's whole body echoed back.
MAX_MESSAGE = 300
# The extra fields a line may carry, in this order; anything else given to a logger is left out.
FIELDS = ("request_id", "role", "principal", "method", "route", "status", "duration_ms", "table_id", "command", "code")
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]")

log = logging.getLogger("zametano.http")


def request_id() -> str | None:
    """This request's id (made on first use), or None outside a request."""
    if not has_request_context():
        return None
    rid: str | None = g.get("request_id")
    if rid is None:
        given = request.environ.get(ENVIRON_KEY, "")
        rid = g.request_id = given if CLIENT_ID.fullmatch(given) else uuid.uuid4().hex
    return rid


def elapsed() -> float:
    """Seconds since this request's first hook ran."""
    return perf_counter() - g.get("started", perf_counter())


def method() -> str:
    """The request's method, or OTHER: a client may send any word there."""
    return request.method if request.method in METHODS else "OTHER"


def route() -> str:
    """The route's template (``/tables/{table_id}``), never the path the client sent."""
    return _template(request.url_rule.rule) if request.url_rule is not None else "unmatched"


@functools.lru_cache(maxsize=256)  # one entry a route of the app's own
def _template(rule: str) -> str:
    return re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule)


def table_id() -> str | None:
    """The table the path names, when it names one (in its canonical form: the text is the client's)."""
    value = (request.view_args or {}).get("table_id")
    try:
        return str(uuid.UUID(value)) if isinstance(value, str) else None
    except ValueError:
        return None


def streaming() -> None:
    """This request's answer is a live stream: its line is written when the stream ends, with its whole length."""
    g.streaming = True


def refused(code: int, message: str) -> None:
    """An error answer's line: a refusal (4xx), a conflict (409). A 5xx has a line of its own where it
    happens (the traceback, the store's outage)."""
    if code >= 500:
        return
    text = message if len(message) <= MAX_MESSAGE else message[:MAX_MESSAGE] + "..."
    if code == 409:
        log.warning("conflict 409: %s", text, extra={"code": code})
    else:
        log.info("refused %d: %s", code, text, extra={"code": code})


class _WithRequestId(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "request_id", None) is None:
            record.request_id = request_id()
        if getattr(record, "role", None) is None:
            record.role, record.principal = principal()
        return True


def principal() -> tuple[str | None, str | None]:
    """This request's role and principal's name (api/auth.py puts them in ``g.principal``), or Nones."""
    if not has_request_context():
        return None, None
    who = g.get("principal")
    return (who.role, who.name) if who is not None else (None, None)


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    return {name: getattr(record, name) for name in FIELDS if getattr(record, name, None) is not None}


def _timestamp(record: logging.LogRecord) -> str:
    """``2026-12-02T09:00:00.123Z``: the second's text made once a second, a line adds its milliseconds."""
    fraction, second = math.modf(record.created)
    micros = round(fraction * 1_000_000)  # rounded to the microsecond as datetime does, then cut to the millisecond
    if micros >= 1_000_000:
        second, micros = second + 1, micros - 1_000_000
    return f"{_second(int(second))}.{micros // 1000:03d}Z"


@functools.lru_cache(maxsize=4)
def _second(second: int) -> str:
    return datetime.fromtimestamp(second, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


class JsonLines(logging.Formatter):
    """One JSON object a line: time, level, logger, pid, message, the request's fields, the traceback if any."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": _timestamp(record),
            "level": record.levelname,
            "logger": record.name,
            "pid": record.process,  # which gunicorn worker
            "message": record.getMessage(),
            **_fields(record),
        }
        if record.exc_info:
            line["exception"] = "".join(traceback.format_exception(*record.exc_info)).rstrip()
        # ASCII only: a reader that splits lines at U+2028 or U+0085 (as Python's splitlines does) still sees one
        return _JSON.encode(line)


_JSON = json.JSONEncoder(default=str)  # json.dumps with an option builds an encoder for every line


class Text(logging.Formatter):
    """For a person at a terminal: ``time level [pid] logger message key=value ...``, every control character
    escaped; a traceback follows, each of its lines indented, so none can pass for a line of its own."""

    def format(self, record: logging.LogRecord) -> str:
        fields = " ".join(f"{name}={value}" for name, value in _fields(record).items())
        head = f"{_timestamp(record)} {record.levelname} [{record.process}] {record.name}"
        line = escape(f"{head} {record.getMessage()} {fields}".rstrip())
        if record.exc_info:
            text = "".join(traceback.format_exception(*record.exc_info)).rstrip()
            line += "".join(f"\n    | {escape(part)}" for part in text.splitlines())
        return line


def escape(text: str) -> str:
    return _CONTROL.sub(lambda m: json.dumps(m.group())[1:-1] if m.group() in "\n\r\t" else f"\\u{ord(m.group()):04x}", text)


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever sys.stderr is when a line is written (a test's capture, a redirected stream)."""

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass  # always sys.stderr


def configure(log_format: str | None) -> None:
    """Sends the ``zametano`` loggers' lines to stderr in ``log_format`` (json or text; None: text on a
    terminal, else json). Called once per process that serves (again: replaces the earlier set-up)."""
    if log_format is None:
        log_format = "text" if sys.stderr.isatty() else "json"
    logger = logging.getLogger("zametano")
    for handler in [h for h in logger.handlers if isinstance(h, _Stderr)]:
        logger.removeHandler(handler)
    handler = _Stderr()
    handler.setFormatter(JsonLines() if log_format == "json" else Text())
    handler.addFilter(_WithRequestId())
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)


def register(app: Flask) -> None:
    """Request ids and the request's line. Register before every other hook: a hook that answers early (a
    rate limit, a missing token) skips the hooks after it, and its answer needs the id too."""

    @app.before_request
    def start() -> None:
        g.started = perf_counter()
        request_id()

    @app.after_request
    def finish(response: Any) -> Any:
        # Registered first, so run last: the response is the one the client gets.
        rid = request_id()
        if rid is not None:
            response.headers[HEADER] = rid
        role, name = principal()
        fields = {"request_id": rid, "role": role, "principal": name, "method": method(), "route": route(),
                  "status": response.status_code, "table_id": table_id()}
        if g.get("streaming"):
            # Written once the server has sent the last of it (or the client went), outside the request.
            started = g.get("started", perf_counter())
            response.call_on_close(lambda: _request_line(fields, perf_counter() - started))
        else:
            seconds = elapsed()
            edge.after_response(response, lambda: _request_line(fields, seconds))
        return response


def _request_line(fields: dict[str, Any], seconds: float) -> None:
    status, duration = fields["status"], round(seconds * 1000, 1)
    level = logging.ERROR if status >= 500 else logging.INFO
    if log.isEnabledFor(level):
        # Made and handed over directly: the line names no source, so the caller's frame is not searched for
        # one (a tenth of the line's cost, and the line is written for every request).
        log.handle(log.makeRecord(log.name, level, __file__, 0, "%s %s %d %.1f ms",
                                  (fields["method"], fields["route"], status, duration), None,
                                  extra={**fields, "duration_ms": duration}))
