"""Slow clients: every request's line, headers and body read within a deadline, each connection on a thread of its own.

gunicorn's threaded worker reads a request in the thread that will serve it, with no deadline once the first
byte has come: a client that sends its headers (or the body it announced) a byte at a time, or stops half way,
holds a thread for as long as it likes, and a few dozen such clients held every thread of a worker, so that not
even /healthz was answered. Here (``Worker``, gunicorn's threaded worker with these changes):

- a worker has a thread for every connection it accepts (``ZAMETANO_MAX_CONNECTIONS``, gunicorn's
  ``worker_connections``), so that a slow client only ever holds its own; past that many the worker accepts no
  more, and the kernel hands new connections to the other workers (or keeps them waiting in its backlog);
- a watchdog thread gives each request ``ZAMETANO_READ_TIMEOUT`` seconds for its line and headers, then as
  long again for its body: past it the connection's reading side is shut, the request is answered 408 (JSON)
  and the connection closed. Answers and live streams are never cut: the deadline ends once the body is read;
- requests are handled ``slots`` at a time once their bodies are read (``gate``): as many as the worker had
  threads before (WEB_THREADS, plus one for each of its live streams), so the database sees no more at once;
- gunicorn's own refusals (400, 414, 431, ...: a request it cannot parse) are the service's JSON error body;
- the group committer (service/groupcommit.py) is told whether another request of the worker may bring a
  command soon (``InFlight``), so that a batch about to be written can wait for it.
"""

from __future__ import annotations

import os
import select
import socket
import threading
import time
import uuid
from collections.abc import Callable
from concurrent import futures
from http import HTTPStatus
from typing import Any

import orjson
from flask import Flask, g, request
from gunicorn import util
from gunicorn.workers.gthread import ThreadWorker
from werkzeug.exceptions import RequestTimeout

from service import groupcommit
from service.config import ConfigError

DEFAULT_MAX_CONNECTIONS = 256
MAX_MAX_CONNECTIONS = 10_000
DEFAULT_READ_TIMEOUT = 10.0
WATCH_INTERVAL = 0.25  # how late past its deadline a connection may be cut
BODY_METHODS = ("POST", "PUT", "PATCH", "DELETE")
LIVENESS = "/healthz"
COMMANDS = "/commands"  # the end of a command's path: the only requests a batch waits for
RECENT = groupcommit.WAIT_FOR_COMPANY  # seconds a connection answered a command counts as company
ANSWERED_KEPT = 256  # connections remembered before the old ones are forgotten


def max_connections(environ: Any = None) -> int:
    return _number(environ, "ZAMETANO_MAX_CONNECTIONS", DEFAULT_MAX_CONNECTIONS, int, 1, MAX_MAX_CONNECTIONS,
                   "the number of connections each worker holds at once, a whole number")


def read_timeout(environ: Any = None) -> float:
    return _number(environ, "ZAMETANO_READ_TIMEOUT", DEFAULT_READ_TIMEOUT, float, 0.1, 3600,
                   "the seconds a client has to send a request's headers, and again its body,")


def _number(environ: Any, name: str, default: float, kind: Any, low: float, high: float, meaning: str) -> Any:
    """A number setting within its bounds (empty: the default), else a ConfigError that says what is allowed."""
    text = (os.environ if environ is None else environ).get(name) or str(default)
    try:
        value = kind(text)
    except ValueError:
        value = low - 1
    if not low <= value <= high:
        raise ConfigError(f"{name} is {meaning} from {low} to {high}, not {text!r}")
    return value


class _Reading:
    __slots__ = ("sock", "deadline", "phase", "expired")

    def __init__(self, sock: Any, deadline: float, phase: str) -> None:
        self.sock, self.deadline, self.phase, self.expired = sock, deadline, phase, False


class Deadlines:
    """This process's connections being read, each with the moment its reading must end (one lock, one
    watchdog). Without a watchdog (another server, the tests' client) nothing is ever cut. Connections are
    known by their descriptor, the same for a socket and its TLS wrapper; one is never reused while the
    connection's thread, which removes its entry, still runs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reading: dict[int, _Reading] = {}
        self.timeout: float | None = None  # set by the worker, with the watchdog
        self.slots: threading.BoundedSemaphore | None = None

    def start(self, sock: Any, phase: str) -> None:
        if self.timeout is None or sock is None:
            return
        with self._lock:
            self._reading[sock.fileno()] = _Reading(sock, time.monotonic() + self.timeout, phase)

    def finish(self, sock: Any) -> str | None:
        """Reading is over (``sock``: the socket, or its descriptor); the phase it was cut in, if it was."""
        with self._lock:
            reading = self._reading.pop(sock if isinstance(sock, int) else _descriptor(sock), None)
        return reading.phase if reading is not None and reading.expired else None

    def expired(self, sock: Any) -> bool:
        with self._lock:
            reading = self._reading.get(_descriptor(sock))
            return reading is not None and reading.expired

    def cut_overdue(self) -> None:
        now = time.monotonic()
        with self._lock:
            for reading in self._reading.values():
                if not reading.expired and reading.deadline <= now:
                    reading.expired = True
                    try:
                        reading.sock.shutdown(socket.SHUT_RD)  # the blocked read returns at once; writing still works
                    except OSError:
                        pass

    def watch(self) -> None:
        while True:
            time.sleep(WATCH_INTERVAL)
            self.cut_overdue()


DEADLINES = Deadlines()


class InFlight:
    """The group committer's company (service/groupcommit.py): whether a request of this worker may bring a
    command soon. A request counts from the moment the worker hands its connection to a thread until that
    thread's request turns out not to be a command (``deadlined``), hands its command over, or ends (a count
    taken by the worker's main thread, given back once by the thread that handles the request). A connection
    counts for RECENT seconds after it was answered a command (a client playing a table sends its next
    command at once: meanwhile its connection is on its way back to the worker's poller, then idle), and
    while an idle one has a request waiting. The asking thread's own connection never counts."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0
        self._answered: dict[int, float] = {}  # connections answered a command lately: when
        self._owner = threading.local()
        self.idle: Callable[[], list[Any]] | None = None  # the worker's idle connections

    def taken(self) -> None:
        """A connection handed to a thread for its next request (the worker's main thread)."""
        with self._lock:
            self._count += 1

    def own(self, conn: Any) -> None:
        """The calling thread handles the request just taken on ``conn``."""
        owner = self._owner
        owner.counted, owner.command, owner.conn = True, False, id(conn)

    def command(self) -> None:
        """The calling thread's request is a command."""
        self._owner.command = True

    def arrived(self) -> None:
        """The calling thread's request is no longer one to wait for: not a command, or handed over (again:
        nothing)."""
        self._give_back()
        if getattr(self._owner, "command", False):
            self._answered.pop(self._owner.conn, None)  # in the batch now: no leader waits for it

    def resumed(self) -> None:
        """The calling thread's command is written: its connection counts for RECENT seconds, as its client
        will likely send the next command once answered."""
        if getattr(self._owner, "command", False):
            self._recent(self._owner.conn)

    def answered(self) -> None:
        """The calling thread is done with its request; a command's connection counts for RECENT seconds more."""
        self._give_back()
        if getattr(self._owner, "command", False):
            self._owner.command = False
            self._recent(self._owner.conn)

    def _give_back(self) -> None:
        """The calling thread's count, once."""
        if getattr(self._owner, "counted", False):
            self._owner.counted = False
            with self._lock:
                self._count -= 1

    def _recent(self, key: int) -> None:
        now = time.monotonic()
        with self._lock:
            if len(self._answered) >= ANSWERED_KEPT:  # connections come and go: only the recent matter
                self._answered = {k: t for k, t in self._answered.items() if t > now - RECENT}
            self._answered[key] = now

    def expected(self) -> bool:
        if self._count > 0:
            return True
        mine, recent = getattr(self._owner, "conn", None), time.monotonic() - RECENT
        if any(when > recent and key != mine for key, when in list(self._answered.items())):
            return True
        return self._idle_waiting()

    def _idle_waiting(self) -> bool:
        """Whether an idle connection has a request waiting that the worker has not taken yet."""
        if self.idle is None:
            return False
        try:
            connections = self.idle()
        except RuntimeError:  # changed by the main thread while copied: it is taking one, likely
            return True
        return _readable(*(conn.sock for conn in connections))


IN_FLIGHT = InFlight()


def _readable(*socks: Any) -> bool:
    """Whether any of ``socks`` has bytes waiting (or its client closed it), without waiting."""
    poll = select.poll()
    for sock in socks:
        descriptor = _descriptor(sock)
        if descriptor >= 0:
            poll.register(descriptor, select.POLLIN)
    return bool(poll.poll(0))


def _descriptor(sock: Any) -> int:
    try:
        return int(sock.fileno())
    except (OSError, ValueError):
        return -1  # closed: it has no entry


class TimedInput:
    """The request's body stream: reading it ends its deadline; a read cut by the deadline is a 408."""

    def __init__(self, stream: Any, sock: Any, length: int | None) -> None:
        self.stream, self.sock, self.left = stream, sock, length

    def read(self, size: int = -1) -> bytes:
        try:
            data = self.stream.read() if size is None or size < 0 else self.stream.read(size)
        except Exception:
            if DEADLINES.expired(self.sock):
                raise _timeout("body") from None
            raise
        if self.left is not None:
            self.left -= len(data)
        if not data or (self.left is not None and self.left <= 0):
            cut = DEADLINES.finish(self.sock)
            if cut and (not data or (self.left or 0) > 0):
                raise _timeout("body")
        return data

    def readline(self, size: int = -1) -> bytes:
        return self.read(size)  # the API reads bodies whole; lines never matter

    def __iter__(self) -> Any:
        return iter(lambda: self.read(65536), b"")


def _timeout(part: str) -> RequestTimeout:
    return RequestTimeout(f"The request's {part} did not arrive within {DEADLINES.timeout:g} seconds "
                          "(ZAMETANO_READ_TIMEOUT); send it whole, at once.")


def deadlined(app: Any) -> Any:
    """WSGI middleware: the headers' deadline gives way to the body's (or none, with no body), and ends with
    the answer at the latest."""

    def wsgi(environ: dict[str, Any], start_response: Any) -> Any:
        sock = environ.get("gunicorn.socket")
        if DEADLINES.timeout is None or sock is None:
            return app(environ, start_response)
        if environ.get("REQUEST_METHOD") != "POST" or not environ.get("PATH_INFO", "").endswith(COMMANDS):
            IN_FLIGHT.arrived()  # no command: no batch waits for it
        else:
            IN_FLIGHT.command()
        DEADLINES.finish(sock)
        length = environ.get("CONTENT_LENGTH")
        chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
        if environ.get("REQUEST_METHOD") in BODY_METHODS and (chunked or (length and length != "0")):
            DEADLINES.start(sock, "body")
            environ["wsgi.input"] = TimedInput(environ["wsgi.input"], sock, None if chunked else _int(length))
        try:
            return app(environ, start_response)
        finally:
            DEADLINES.finish(sock)

    return wsgi


def after_response(response: Any, work: Callable[[], None]) -> None:
    """Does ``work`` once the answer has left: under gunicorn after its last byte is written (the server closes
    what it was answered, PEP 3333), so that no client waits for a request's log line or its metrics; elsewhere
    (the test client, which never closes what it is answered) at once. ``work`` runs outside the request."""
    if request.environ.get("gunicorn.socket") is None:
        work()
    else:
        response.call_on_close(work)


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def register(app: Flask) -> None:
    """The gate: a request is handled once its body is read, at most ``slots`` at a time in this worker.
    Register last, so that every check before it (and the body's reading) happens outside the gate."""
    app.wsgi_app = deadlined(app.wsgi_app)  # type: ignore[method-assign]

    @app.before_request
    def enter() -> None:
        # /healthz reads nothing: liveness is answered even while every place waits on the event store
        if DEADLINES.slots is not None and request.path != LIVENESS:
            DEADLINES.slots.acquire()
            g.slot = DEADLINES.slots

    @app.teardown_request
    def leave(exc: BaseException | None) -> None:
        slot = g.pop("slot", None)
        if slot is not None:
            slot.release()


class Worker(ThreadWorker):  # type: ignore[misc]
    """gunicorn's threaded worker, with a thread for each connection and the deadlines above. ``threads``
    (the setting) is how many requests it handles at once."""

    @classmethod
    def check_config(cls, cfg: Any, log: Any) -> None:
        pass  # its warning counts keep-alive connections against `threads`, not against the connections here

    def init_process(self) -> None:
        DEADLINES.timeout = read_timeout()
        DEADLINES.slots = threading.BoundedSemaphore(self.cfg.threads)
        IN_FLIGHT.idle = lambda: list(self.keepalived_conns)
        groupcommit.company = IN_FLIGHT
        threading.Thread(target=DEADLINES.watch, name="zametano-deadlines", daemon=True).start()
        super().init_process()

    def get_thread_pool(self) -> futures.ThreadPoolExecutor:
        # Threads are made as connections need them, up to one for each connection the worker may hold.
        return futures.ThreadPoolExecutor(max_workers=max(self.worker_connections, self.cfg.threads))

    def enqueue_req(self, conn: Any) -> None:
        IN_FLIGHT.taken()
        super().enqueue_req(conn)

    def handle(self, conn: Any) -> Any:
        IN_FLIGHT.own(conn)
        if not conn.initialized and not _readable(conn.sock):
            IN_FLIGHT.arrived()  # a new connection that has sent nothing yet: no batch waits for it
        descriptor = _descriptor(conn.sock)  # gunicorn may close the socket before this thread is done
        DEADLINES.start(conn.sock, "headers")
        try:
            result = super().handle(conn)
        finally:
            IN_FLIGHT.answered()
            cut = DEADLINES.finish(descriptor)
        if cut == "headers":
            write_error(conn.sock, 408, "Request Timeout", str(_timeout("line and headers").description))
            return False
        return result


def write_error(sock: Any, status: int, reason: str, message: str) -> None:
    """gunicorn's own answers (a request it could not parse, or the headers' deadline) in the service's error
    body (docs/api.md "Errors"), in place of its HTML page."""
    body = orjson.dumps({"code": status, "status": HTTPStatus(status).phrase, "message": _explained(status, message),
                         "errors": {}, "request_id": uuid.uuid4().hex}) + b"\n"
    head = (f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode("latin-1")
    util.write_nonblock(sock, head + body)


def _explained(status: int, message: str) -> str:
    if status == 414:
        return f"The request line is too long ({message}); send a shorter URL."
    if status == 431:
        return f"The request's headers are too many or too large ({message}); send fewer or shorter headers."
    if status == 400:
        return f"The request is not HTTP this server reads: {message}."
    return message


def install_error_pages() -> None:
    """In a worker process: gunicorn writes its own refusals through ``util.write_error``."""
    util.write_error = write_error
