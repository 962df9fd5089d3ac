"""Live streams over HTTP as Server-Sent Events.

Live streams over HTTP as Server-Sent Events (``text/event-stream``): one table's events
(``GET /tables/{table_id}/events`` with that Accept, negotiated in api/tables.py) and every table's head
(``GET /events``). The service's feeds (service/streams/) say what to send and when; here they become
messages:

    id: <version, or position in the log>
    event: table-event | head
    data: <one line of compact JSON>

A comment line ``: heartbeat`` opens every stream (so a client has the response's headers at once) and follows
every ZAMETANO_STREAM_HEARTBEAT seconds of silence. Each message is handed to the server as soon as it is
known, and gunicorn writes every piece of a response to the socket as it comes: nothing is buffered. A stream
ends when its client goes (the next write fails: at the latest one heartbeat later), when the worker stops, or
when a read fails (the client resumes with Last-Event-ID); its request's log line is written then.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import orjson
from flask import Response, current_app, request
from flask.views import MethodView
from flask_smorest import Blueprint

from api import auth, logs
from api.auth import current_principal
from api.holders import opened
from api.http import RequestRefused
from api.openapi import SSE, answers
from service import metrics
from service.errors import ServiceError, StreamRefused
from service.limits import MAX_NUMBER
from service.store import as_outage

blp = Blueprint("streams", __name__, description="Live streams of the event log, as Server-Sent Events.")
HEARTBEAT = b": heartbeat\n\n"
# No cache may keep a stream, and a reverse proxy (nginx) must pass each message on at once.
STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}

log = logging.getLogger("zametano.streams")


def service() -> Any:
    return current_app.extensions["zametano"]


def asked_for() -> bool:
    """Whether the request names text/event-stream in Accept. A wildcard never opens a stream: a client that
    did not ask for one would wait for the end of an answer that has none."""
    return any(value == SSE and quality > 0 for value, quality in request.accept_mimetypes)


def table_events(table_id: str, after: int) -> Response:
    """The stream of one table's events after ``Last-Event-ID`` (a version), else after ``after``."""
    refuse_unless_threaded()
    resume = last_event_id("a version")
    feed = held(lambda: service().table_feed(table_id, resume if resume is not None else after, heartbeat(),
                                             auth.viewer(), table_event))
    # The feed gives each message made (table_event): bytes() takes it as it is.
    return streamed(feed, bytes, {"table_id": logs.table_id()})


def table_event(event: dict[str, Any]) -> bytes:
    """A table event's message; one function for every stream, so that the streams of one viewer share it."""
    return message(event["version"], b"table-event", event)


def held(open_feed: Callable[[], Any]) -> Any:
    """The feed, counted against its credential's share of this worker's streams (api/holders.py)."""
    principal = current_principal()
    holder = None if principal is None or principal.name is None else (principal.role, principal.name)
    return opened(current_app.extensions["zametano_stream_holders"], holder, open_feed)


def last_event_id(what: str) -> int | None:
    """The ``Last-Event-ID`` a resuming client sends (EventSource does it by itself): None without it (or
    empty, as the SSE standard says), else the number, or a 400 saying what it must be."""
    text = request.headers.get("Last-Event-ID", "").strip()
    if not text:
        return None
    if not text.isascii() or not text.isdigit() or len(text) > 19 or int(text) > MAX_NUMBER:
        raise RequestRefused(400, "Last-Event-ID", f"Last-Event-ID is the id of the last message received ({what}): "
                                                   "a whole number.")
    return int(text)


def refuse_unless_threaded() -> None:
    """gunicorn's sync workers (WEB_THREADS=1) serve one request at a time: a stream would hold a worker whole."""
    environ = request.environ
    if "gunicorn.socket" in environ and not environ.get("wsgi.multithread"):
        metrics.stream_refused("one_thread")
        raise StreamRefused("Live streams need threaded workers: this server runs one request at a time in each "
                            "worker (WEB_THREADS=1), which a stream would hold for as long as it lasts; start it "
                            "with WEB_THREADS of 2 or more.")


def heartbeat() -> float:
    return float(current_app.config["ZAMETANO_STREAM_HEARTBEAT"])


def message(ident: int, event: bytes, data: Any) -> bytes:
    # orjson writes the compact JSON the JSON answers are written in (api/policy.py): never a line break.
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (ident, event, orjson.dumps(data))


def streamed(feed: Any, write: Callable[[Any], bytes], about: dict[str, Any] | None = None) -> Response:
    """The response that sends what ``feed`` gives (None: a heartbeat) until it ends, closing the feed (its
    place among the worker's streams) however the response ends, even unsent."""
    if request.method == "HEAD":
        # A HEAD is answered as its GET would be (200, or 503 with no place left), but it follows nothing:
        # its place is given back before the answer leaves, so a client that goes on to open a stream never
        # finds it still held (the server closes an answer only after its last byte is sent). An empty
        # iterable, not empty bytes: the headers stay a stream's, with no Content-Length: 0.
        feed.close()
        return current_app.response_class(iter(()), mimetype=SSE, headers=STREAM_HEADERS)
    extra = {"request_id": logs.request_id(), **(about or {})}

    def body() -> Iterator[bytes]:
        try:
            yield HEARTBEAT
            for batch in feed.batches():  # what one read brought, in one write
                yield HEARTBEAT if batch is None else b"".join(write(item) for item in batch)
        except Exception as exc:  # noqa: BLE001 - the stream ends; the client resumes with Last-Event-ID
            log.warning("a live stream ended early: %s", ended_by(exc), extra=extra)
        finally:
            feed.close()

    response = current_app.response_class(body(), mimetype=SSE, headers=STREAM_HEADERS)
    response.call_on_close(feed.close)
    logs.streaming()
    return response


def ended_by(exc: Exception) -> str:
    """Why a stream ended, in words fit for the log: the service's message (which never holds what the
    service keeps hidden), else only the kind of failure."""
    outage = as_outage(exc)
    if outage is not None:
        return f"the event store is not reachable ({outage.reason})"
    if isinstance(exc, ServiceError):
        return exc.message
    return type(exc).__name__


HEADS = ("Server-Sent Events: `id:` a position in the log (send it back as Last-Event-ID to resume), "
         "`event: head`, `data:` a HeadChange; a comment `: heartbeat` after each ZAMETANO_STREAM_HEARTBEAT "
         "seconds of silence.")


@blp.route("/events")
class Heads(MethodView):
    @blp.response(200, {"type": "string", "description": "Server-Sent Events: one HeadChange a message."},
                  content_type=SSE, description=HEADS)
    @answers(400, 406, 503, reads=("Last-Event-ID",))
    def get(self) -> Any:
        """Every table's head, live: a message each time a table moves (or opens), for listings.

        Send `Accept: text/event-stream` (anything else is a 406). Without `Last-Event-ID` the stream starts
        from now; with it (the `id` of the last message received) it first sends the latest head of every
        table that changed since that position, then follows. A 503 with `Retry-After` when this worker
        already holds its ZAMETANO_MAX_STREAMS streams, or this credential its share of them (a quarter).
        """
        if not asked_for():
            raise RequestRefused(406, "Accept", "GET /events is a live stream of every table's head: send "
                                                "Accept: text/event-stream.")
        refuse_unless_threaded()
        resume = last_event_id("a position in the log")
        feed = held(lambda: service().heads_feed(resume, heartbeat()))
        return streamed(feed, lambda item: message(item[0], b"head", item[1]))
