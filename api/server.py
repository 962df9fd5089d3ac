"""Serving under gunicorn: tables created before the workers fork, one service per worker.

Serving under gunicorn: the event store's tables are created once, before workers fork, and each
worker builds its own service through the app factory.

    python -m api.server [--host H] [--port P] [--workers N] [--threads T]

The gunicorn hooks below serve both this entry point and `gunicorn -c python:api.gunicorn_conf`, so the
two cannot disagree: the master refuses, before it listens, any address that is not loopback unless
tokens are set (it reads the addresses gunicorn really binds, whatever set them), and every worker dies
with its master, so a master killed outright leaves no worker holding the port.

Threaded workers get WEB_THREADS threads for ordinary requests plus one for each live stream they may hold
(ZAMETANO_MAX_STREAMS), so open streams never take a thread a command needs; a stopping worker ends its
streams at once (post_worker_init), so a graceful stop does not wait gunicorn's graceful timeout for them.

Both give the workers one folder for their metrics (PROMETHEUS_MULTIPROC_DIR, emptied at start) before any
of them forks, so /metrics shows the whole server's counts whichever worker answers.

Whatever stops the start (a setting, the database, the data directory, the signing key) is one line on
stderr, ``error: <what is wrong>``, and exit code 2 (docs/operations.md, "Exit codes").
"""

from __future__ import annotations

import argparse
import ctypes
import errno
import functools
import ipaddress
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
from collections.abc import Iterable
from typing import Any, NoReturn

from gunicorn.util import parse_address

from api.edge import DEFAULT_MAX_CONNECTIONS, max_connections, read_timeout
from service.config import ALL_VARIABLES, ConfigError, load, max_streams
from service.startup_checks import check_named_files

# Exit codes (docs/operations.md, "Exit codes"): gunicorn's own are 1 (an unexpected failure, with a traceback), 3 (a
# worker failed to boot) and 4 (the app could not be loaded).
EXIT_REFUSED = 2

PR_SET_PDEATHSIG = 1  # linux/prctl.h
# Requests each worker serves at once. A command spends most of its time waiting for PostgreSQL, so a few
# threads keep a worker's CPU busy where one request at a time left it idle (docs/benchmarks.md).
DEFAULT_THREADS = 4
# Whatever the server creates (the store, keys, metrics files) is its owner's alone, whatever umask it was
# started under (service/files.py also sets each file's mode itself).
PRIVATE_UMASK = 0o077
# Seconds an idle client's connection stays open (threaded workers only): a client sending command after
# command does not connect again for each one.
KEEPALIVE = 5
DEFAULT_WORKERS = 2


def web_threads(environ: Any = None, source: str = "WEB_THREADS") -> int:
    """The threads per worker ``source`` (WEB_THREADS, or --threads through ``environ``) names: 1 or more."""
    value = (os.environ if environ is None else environ).get("WEB_THREADS") or str(DEFAULT_THREADS)
    try:
        threads = int(value)
    except ValueError:
        raise ConfigError(f"{source} must be a whole number of threads per worker (1 or more), not {value!r}") from None
    if threads < 1:
        raise ConfigError(f"{source} must be 1 or more threads per worker, not {threads}")
    return threads


def worker_settings(threads: int, streams: int = 0, connections: int = DEFAULT_MAX_CONNECTIONS) -> dict[str, Any]:
    """gunicorn's threaded workers with keep-alive and the deadlines of api/edge.py, handling ``threads``
    requests at once and one more for each of the ``streams`` live streams a worker may hold, each of its
    ``connections`` read by a thread of its own; with one thread gunicorn's sync worker, which closes every
    connection, refuses streams (api/streams.py) and has no deadlines: it belongs behind a front that buffers
    requests (docs/deploy.md)."""
    if threads == 1:
        return {"worker_class": "sync", "threads": 1}
    return {"worker_class": "api.edge.Worker", "threads": threads + streams, "keepalive": KEEPALIVE,
            "worker_connections": connections}


def worker_count(text: str | None, source: str) -> int:
    """The number of workers ``source`` (--workers, WEB_CONCURRENCY) names: a whole number, 1 or more; an
    unset or empty WEB_CONCURRENCY is the default."""
    value = (text or "").strip()
    if not value and source == "WEB_CONCURRENCY":
        return DEFAULT_WORKERS
    if not value.isdigit() or int(value) < 1:
        raise ConfigError(f"{source} is the number of worker processes, a whole number of 1 or more, not {text!r}")
    return int(value)


def check_bind(bind: str) -> None:
    """ConfigError for a BIND gunicorn cannot read (it would stop with a traceback)."""
    try:
        address = parse_address(bind)
        if isinstance(address, tuple) and not 0 <= address[1] <= 65535:
            raise ValueError(f"{address[1]} is not a port")
    except (RuntimeError, ValueError) as exc:
        raise ConfigError(f"BIND is host:port, [ipv6]:port or unix:path, not {bind!r} ({exc})") from None


def check_free(binds: Iterable[str]) -> None:
    """ConfigError for an address another process already listens on: gunicorn would try five times over five
    seconds and stop with a dozen lines and exit code 1."""
    for bind in binds:
        address = parse_address(bind)
        if isinstance(address, (str, int)):
            continue  # a unix socket gunicorn replaces, or a descriptor it was handed
        family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn binds
            try:
                probe.bind(address)
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    raise ConfigError(f"{bind} is already in use by another process; stop it or choose another "
                                      "--port (PORT).") from None
                raise ConfigError(f"Cannot listen on {bind}: {exc.strerror or exc}") from None


@functools.lru_cache(maxsize=64)  # the few peers and Host values a server sees; bounded against those a client makes up
def is_loopback(host: str) -> bool:
    """``host`` (a name or an address, IPv6 with or without its brackets) is this machine's loopback."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def prepare_store() -> str:
    """Creates the event store's tables in this (master) process, then tells workers not to: several
    processes creating tables at once race in PostgreSQL ("tuple concurrently updated"). Makes the
    signing key here too (or records a new one in the keyring), so every worker reads the same key, and the
    players' key (and reads the external issuer's keys: a bad JWKS file stops the start, with the reason)."""
    from service.application import TablesService
    from service.credentials import load_credentials
    from service.seeds import load_seed_keys
    from service.signing import load_signer
    from service.store import probe_postgres

    settings = load(make_dirs=False)
    check_named_files(settings)  # every file a setting names read first: a wrong one leaves nothing written
    if settings.module == "eventsourcing.postgres":
        probe_postgres(settings.persistence)  # where the database is and why it does not answer, at once
    settings = load()
    signer = load_signer(settings)
    seed_keys = load_seed_keys(settings)  # made here, once, so that every worker reads the same keys
    credentials = load_credentials(settings)
    service = TablesService(settings, signer=signer, seed_keys=seed_keys)  # creates the tables unless CREATE_TABLE says not to
    try:
        service.check_store()  # a CIPHER_KEY that cannot read the store: a clear error, before any worker starts
        at_rest = service.at_rest.describe()  # the cipher key is made here, once, before workers read it
    finally:
        service.close()
    os.environ["CREATE_TABLE"] = "n"
    where = settings.persistence.get("SQLITE_DBNAME") or (
        f"PostgreSQL {settings.persistence.get('POSTGRES_HOST')}:{settings.persistence.get('POSTGRES_PORT')}/"
        f"{settings.persistence.get('POSTGRES_DBNAME')}"
    )
    players = f"players' tokens signed with key {credentials.key_id}"
    if settings.player_issuer:
        players += f", and {settings.player_issuer}'s accepted"
    return f"{settings.module} ({where}); {at_rest}; {signer.describe()}; {seed_keys.describe()}; {players}"


def check_binds(binds: Iterable[str]) -> str | None:
    """docs/api.md: with no tokens the service runs open, only on loopback; elsewhere it refuses to listen.
    For gunicorn's bind addresses (``host:port``, ``[v6]:port``, ``unix:path``, ``fd://n``): raises
    ConfigError for any that others could reach while no tokens are set, else returns the warning to log
    (None with tokens)."""
    if load(make_dirs=False).tokens:
        return None
    for bind in binds:
        address = parse_address(bind)
        if isinstance(address, str):
            continue  # a unix socket: only this machine reaches it, as with loopback
        if isinstance(address, int) or not is_loopback(address[0]):
            raise ConfigError(
                f"Refusing to listen on {bind} without tokens: set ZAMETANO_TOKENS (e.g. operator:<secret>) "
                "or listen on 127.0.0.1."
            )
    return "No tokens configured (ZAMETANO_TOKENS): the API is open to anyone on this machine, listening on loopback only."


def on_starting(server: Any) -> None:
    """gunicorn master, before it binds or forks: the exposure check on the real addresses, the metrics
    folder, then the tables."""
    os.umask(PRIVATE_UMASK)
    try:
        warning = check_binds(server.cfg.bind)
        check_free(server.cfg.bind)
        # scripts/run prepared the metrics folder and the store before gunicorn started (and said so): not twice
        store = getattr(server.app, "prepared", None)
        if store is None:
            prepare_metrics_dir()  # before the store: preparing it imports prometheus_client
            store = prepared_store()
    except ConfigError as exc:
        refuse(str(exc))
    if warning:
        server.log.warning(warning)
    # The app's modules imported once here, not in every worker: a forked worker finds them loaded (a
    # quarter of a second of CPU a worker, at every start and every restart of one). The app itself, its
    # connections and threads are still made in each worker (``load``).
    import api.app  # noqa: F401
    server.zametano_store = store  # said once the addresses are bound (when_ready)


def when_ready(server: Any) -> None:
    """gunicorn master, listening: the addresses it really listens on (``--port 0`` is a port the system
    chose, known only now) and where the events are."""
    listening = ", ".join(str(listener) for listener in server.LISTENERS) or ", ".join(server.cfg.bind)
    server.log.info("Zametano on %s, events in %s", listening, getattr(server, "zametano_store", "?"))


def prepared_store() -> str:
    """prepare_store once per master; an unreachable store is a ConfigError that names what is wrong."""
    from service.store import as_outage

    try:
        return prepare_store()
    except ConfigError:
        raise
    except Exception as exc:
        outage = as_outage(exc)
        if outage is None:
            raise
        raise ConfigError(f"The event store is not reachable ({outage.reason}); start the server once it is.") from None


def refuse(message: str) -> NoReturn:
    remove_metrics_dir()
    print(f"error: {message}", file=sys.stderr, flush=True)
    sys.exit(EXIT_REFUSED)


_made: list[str] = []  # the temporary metrics folder this process made, removed when it exits


def prepare_metrics_dir(environ: Any = None) -> str:
    """Points prometheus_client at one folder for every worker: PROMETHEUS_MULTIPROC_DIR when set (made and
    emptied of earlier runs' files), else a new temporary folder. Before any import of prometheus_client:
    it chooses how to keep its values when first imported."""
    environ = os.environ if environ is None else environ
    path = environ.get("PROMETHEUS_MULTIPROC_DIR")
    try:
        if path:
            os.makedirs(path, mode=0o700, exist_ok=True)
            for name in os.listdir(path):
                if name.endswith(".db"):  # the files of a run before this one; nothing else is ours to remove
                    os.remove(os.path.join(path, name))
        else:
            path = tempfile.mkdtemp(prefix="zametano-metrics-")
            _made.append(path)
    except OSError as exc:
        raise ConfigError(f"PROMETHEUS_MULTIPROC_DIR {path} cannot be made or emptied: {exc.strerror or exc}") from None
    environ["PROMETHEUS_MULTIPROC_DIR"] = path
    return path


def child_exit(server: Any, worker: Any) -> None:
    """gunicorn master, a worker gone: its gauges that only count while it lives (pool connections) go too;
    its counters stay, so no total ever goes down."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def on_exit(server: Any) -> None:
    """gunicorn master, stopping: the temporary metrics folder it made goes with it."""
    remove_metrics_dir()


def remove_metrics_dir() -> None:
    while _made:
        shutil.rmtree(_made.pop(), ignore_errors=True)


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT)


def post_worker_init(worker: Any) -> None:
    """gunicorn worker, app loaded: a signal that stops it ends its live streams first. gunicorn waits for
    every open request before a worker exits (SIGTERM: up to its graceful timeout, after which the master
    kills it), and a stream only ends when it is told to."""
    from api.edge import install_error_pages
    from service.streams import stop_all

    install_error_pages()
    for number in STOP_SIGNALS:
        previous = signal.getsignal(number)
        if callable(previous):
            signal.signal(number, _ending_streams(previous, stop_all))


def _ending_streams(previous: Any, stop_all: Any) -> Any:
    def handler(number: int, frame: Any) -> None:
        # In a thread of its own: the streams' lock may be held by whatever this signal interrupted.
        threading.Thread(target=stop_all, name="zametano-stop-streams", daemon=True).start()
        previous(number, frame)

    return handler


def post_fork(server: Any, worker: Any) -> None:
    """gunicorn worker, just forked: dies with its master. Without this a master killed with SIGKILL
    leaves its workers listening for up to half the worker timeout, and a new server cannot bind."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)  # SIGTERM: the current request is finished first
    if os.getppid() != server.pid:  # the master died before the line above took effect
        sys.exit(0)


@functools.cache
def server_class() -> type:
    """gunicorn's application for the options given. Imported only now: gunicorn reads WEB_CONCURRENCY as its
    settings module is imported, and a value that is not a number would stop it with a traceback before
    ``main`` could say so in one line. One class, made once: what is set on it (tests) holds for ``main``."""
    from gunicorn.app.base import BaseApplication

    class Server(BaseApplication):  # type: ignore[misc]
        def __init__(self, options: dict[str, Any], prepared: str | None = None) -> None:
            self.options = options
            self.prepared = prepared  # what prepare_store said, when it ran before gunicorn started
            super().__init__()

        def load_config(self) -> None:
            for key, value in self.options.items():
                self.cfg.set(key, value)
            if "control_socket_disable" in self.cfg.settings:
                # several servers (tests, benchmarks) may run at once; none needs gunicorn's control socket
                self.cfg.set("control_socket_disable", True)

        def load(self) -> Any:
            from api.app import create_app

            return create_app()

    return Server


def __getattr__(name: str) -> Any:
    if name == "Server":  # `from api.server import Server` (scripts/bench_http.py) still works
        return server_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def listening_port(text: str) -> int:
    if not text.strip().isdigit() or not 0 <= int(text) <= 65535:
        raise ConfigError(f"--port (PORT) is a port number from 0 to 65535, not {text!r}")
    return int(text)


class OneLineParser(argparse.ArgumentParser):
    """A mistake in the arguments is one line and exit 2, as every other refusal to start (not the usage)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_REFUSED, f"error: {message} (scripts/run --help shows the usage)\n")


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(
        prog="scripts/run", description="Serve the Zametano API under gunicorn.",
        epilog="Environment variables read (README, 'Configuration'): " + ", ".join(ALL_VARIABLES) + ".",
    )
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    parser.add_argument("--port", default=os.environ.get("PORT", "8000"), help="the port (PORT, default 8000)")
    parser.add_argument("--workers", help=f"worker processes (WEB_CONCURRENCY, default {DEFAULT_WORKERS})")
    parser.add_argument("--threads", help=f"requests each worker serves at once (WEB_THREADS, default {DEFAULT_THREADS})")
    args = parser.parse_args(argv)
    os.umask(PRIVATE_UMASK)
    try:
        port = listening_port(args.port)
        bind = f"[{args.host}]:{port}" if ":" in args.host else f"{args.host}:{port}"
        if args.workers is not None:
            workers = worker_count(args.workers, "--workers")
        else:
            workers = worker_count(os.environ.get("WEB_CONCURRENCY"), "WEB_CONCURRENCY")
        threads = (web_threads({"WEB_THREADS": args.threads}, "--threads") if args.threads is not None
                   else web_threads())
        streams, connections = max_streams(), max_connections()
        read_timeout()  # read again by each worker; a wrong one stops the start here
        check_named_files(load(make_dirs=False))  # every setting, and the files they name, before anything is made
        check_binds([bind])  # at once, before gunicorn starts; on_starting checks again what it binds
        check_free([bind])
        prepare_metrics_dir()  # before the store: preparing it imports prometheus_client
        store = prepared_store()  # a wrong CIPHER_KEY, a bad signing key or a store down: one line, before gunicorn
    except ConfigError as exc:
        remove_metrics_dir()
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    server_class()(
        {
            "bind": bind,
            "workers": workers,
            **worker_settings(threads, streams, connections),
            # No gunicorn access log: the app writes one line per request, with its request id (api/logs.py).
            "accesslog": None,
            "timeout": 60,
            "on_starting": on_starting,
            "when_ready": when_ready,
            "post_fork": post_fork,
            "post_worker_init": post_worker_init,
            "child_exit": child_exit,
            "on_exit": on_exit,
        },
        prepared=store,
    ).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
