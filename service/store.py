"""The event store under outages: every wait is bounded, an outage is a typed error, recovery needs nobody.

Left to itself, the eventsourcing PostgreSQL recorder waits for a pooled connection up to its connect
timeout and then retries the whole call ten times; psycopg's pool meanwhile reconnects with an exponential
backoff (1, 2, 4, 8... seconds). With the database stopped for ten seconds a request hung until the next
reconnection attempt (12-15 s); stopped longer, gunicorn killed the stuck workers. Here instead:

- the pool hands out no connection once it knows the database is down (a connection attempt failed and
  none has succeeded since): the request fails at once with ``StoreUnavailable``, which the recorder's
  retry loop does not catch, so no worker is tied up while the database is away;
- otherwise it waits at most the connect timeout (``POSTGRES_CONNECT_TIMEOUT``) for a connection;
- a statement runs at most ``ZAMETANO_STATEMENT_TIMEOUT`` seconds (server side), and a dead network
  peer is noticed by TCP keepalives;
- lost connections are re-established about every second for as long as it takes, so the service
  serves again within a second or so of the database coming back, without a restart.
"""

from __future__ import annotations

import logging
import random
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from time import monotonic
from typing import Any
from uuid import UUID

import psycopg
import psycopg.errors
from eventsourcing.persistence import InterfaceError, OperationalError
from eventsourcing.postgres import ConnectionPool, PostgresFactory
from psycopg_pool import PoolTimeout, TooManyRequests
from psycopg_pool.base import AttemptWithBackoff

from service import embedded, metrics
from service.config import ConfigError
from service.errors import StoreUnavailable

RECONNECT_EVERY = 1.0  # seconds between attempts to replace a lost connection
PING_TIMEOUT = 2.0  # seconds /readyz waits for the store, below the 3 s a load balancer may allow
WAIT_SLICE = 0.25  # a waiting request looks this often whether the database has been found down
# TCP keepalives: a peer that vanished without closing (network cut) is noticed after about 25 s.
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3}
# SQLite's errors that mean "busy or unreachable", as opposed to a broken schema or a bug; the faults of its
# file (full, read-only, gone) are service/embedded.py's.
SQLITE_OUTAGES = ("locked", "busy", "unable to open", "disk i/o")
# The exceptions among which as_outage() finds the outages.
STORE_ERRORS = (OperationalError, InterfaceError, psycopg.OperationalError, psycopg.InterfaceError, sqlite3.Error)

log = logging.getLogger("zametano.store")


def one_line(exc: BaseException) -> str:
    """An error's text on one line (libpq's messages run over several)."""
    return " ".join(str(exc).split()) or type(exc).__name__


class SteadyReconnection(AttemptWithBackoff):
    """Tries again every ``RECONNECT_EVERY`` seconds and never gives up (psycopg's pool doubles the delay
    each time and stops after five minutes, leaving the service down long after the database is back)."""

    def __init__(self) -> None:
        super().__init__(timeout=0)

    def update_delay(self, now: float) -> None:
        self.delay = RECONNECT_EVERY * random.uniform(0.9, 1.1)  # noqa: S311 - jitter, not secrecy

    def time_to_give_up(self, now: float) -> bool:
        return False


class StorePool(ConnectionPool):  # type: ignore[type-arg]
    """eventsourcing's connection pool, failing fast while the database is known to be down."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.down_since: float | None = None
        super().__init__(*args, **kwargs)

    @classmethod
    def replacing(cls, pool: ConnectionPool, statement_timeout: float,  # type: ignore[type-arg]
                  target_session_attrs: str = "any") -> StorePool:
        """A pool like the (not yet opened) one eventsourcing built from its settings, with bounded waits,
        connecting only to a server of ``target_session_attrs`` among the hosts given (libpq's option: after a
        failover, the promoted standby rather than a former primary back as a standby)."""
        kwargs = dict(pool.kwargs) if isinstance(pool.kwargs, dict) else {}
        kwargs.update(KEEPALIVES)
        kwargs["target_session_attrs"] = target_session_attrs
        # libpq's own connect timeout (whole seconds, at least 2) also bounds the pool's reconnections.
        kwargs["connect_timeout"] = max(2, round(pool.timeout))
        if statement_timeout > 0:
            kwargs["options"] = f"-c statement_timeout={int(statement_timeout * 1000)}"
        return cls(
            get_password_func=pool.get_password_func,
            connection_class=pool.connection_class,
            kwargs=kwargs,
            min_size=pool.min_size,
            max_size=pool.max_size,
            open=False,
            configure=pool._configure,  # eventsourcing's: autocommit and the idle-in-transaction timeout
            check=pool._check,  # POSTGRES_PRE_PING
            timeout=pool.timeout,
            max_waiting=pool.max_waiting,
            max_lifetime=pool.max_lifetime,
        )

    def _connect(self, timeout: float | None = None) -> Any:
        try:
            conn = super()._connect(timeout=timeout)
        except BaseException as exc:
            metrics.database_error("connect")
            if self.down_since is None:
                self.down_since = monotonic()
                log.warning("the database is down: %s", one_line(exc))
            raise
        if self.down_since is not None:
            log.warning("the database answers again, after %.1f s", monotonic() - self.down_since)
        self.down_since = None
        return conn

    def _add_connection(self, attempt: AttemptWithBackoff | None, growing: bool = False) -> None:
        super()._add_connection(attempt or SteadyReconnection(), growing=growing)

    def getconn(self, timeout: float | None = None) -> Any:
        deadline = monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            if self.down_since is not None and not self.get_stats().get("pool_available"):
                raise StoreUnavailable("the database is down: the last attempt to connect failed")
            remaining = deadline - monotonic()
            if remaining <= 0:
                raise StoreUnavailable(f"no database connection within {self.timeout:g} s")
            try:
                conn = super().getconn(timeout=min(remaining, WAIT_SLICE))
            except PoolTimeout:
                continue
            except TooManyRequests as exc:
                raise StoreUnavailable(str(exc)) from exc
            metrics.POOL_IN_USE.inc()
            return conn

    def putconn(self, conn: Any) -> None:
        metrics.POOL_IN_USE.dec()
        super().putconn(conn)

    @contextmanager
    def connection(self, timeout: float | None = None) -> Iterator[Any]:
        with super().connection(timeout=timeout) as conn:
            try:
                yield conn
            except psycopg.errors.QueryCanceled as exc:
                # statement_timeout: the recorder would run the statement nine more times
                metrics.database_error("statement_timeout")
                raise StoreUnavailable(f"a statement ran out of time: {exc}") from exc


def harden(factory: Any, statement_timeout: float) -> None:
    """Gives a PostgreSQL factory's datastore a StorePool (before anything has opened its pool), an SQLite
    factory's a pool that makes its file's faults outages (service/embedded.py)."""
    embedded.guard(factory)
    if isinstance(factory, PostgresFactory) and not isinstance(factory.datastore.pool, StorePool):
        attrs = factory.env.get("POSTGRES_TARGET_SESSION_ATTRS") or "any"
        factory.datastore.pool = StorePool.replacing(factory.datastore.pool, statement_timeout, attrs)


def ping(app: Any, timeout: float = PING_TIMEOUT) -> None:
    """Raises StoreUnavailable unless the event store answers within ``timeout`` seconds."""
    pool = getattr(getattr(app.factory, "datastore", None), "pool", None)
    if isinstance(pool, embedded.GuardedPool) and (problem := pool.gate.problem()) is not None:
        raise StoreUnavailable(problem, retry_after=embedded.RETRY_AFTER)  # a write now would fail
    if not isinstance(pool, StorePool):
        try:
            app.recorder.select_events(UUID(int=0), limit=1)
        except Exception as exc:
            outage = as_outage(exc)
            if outage is None:
                raise
            raise outage from exc
        return
    deadline = monotonic() + timeout
    while True:
        try:
            with pool.connection(timeout=max(0.0, deadline - monotonic())) as conn:
                conn.execute("SELECT 1")
            return
        except (psycopg.OperationalError, psycopg.InterfaceError):
            # A pooled connection the database closed while it was down: the pool replaces it. Try the
            # next one; past the deadline the pool itself raises StoreUnavailable.
            continue


def as_outage(exc: BaseException) -> StoreUnavailable | None:
    """The typed error for an exception that means the store is unreachable or busy, else None."""
    if isinstance(exc, StoreUnavailable):
        return exc
    if isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout)):
        return StoreUnavailable(str(exc))
    if embedded.is_file_fault(exc):
        return StoreUnavailable(one_line(exc), retry_after=embedded.RETRY_AFTER)
    if isinstance(exc, sqlite3.Error) and any(s in str(exc).lower() for s in SQLITE_OUTAGES):
        return StoreUnavailable(one_line(exc))  # raised as SQLite raises it, outside the library's wrapping
    if isinstance(exc, (OperationalError, InterfaceError)):
        cause = exc.__cause__
        if isinstance(cause, sqlite3.Error) and not any(s in str(cause).lower() for s in SQLITE_OUTAGES):
            return None  # e.g. a syntax error: a broken store, not an outage
        if isinstance(cause, StoreUnavailable):
            return cause
        return StoreUnavailable(str(exc))
    return None


class LazyService:
    """Stands in for the service until the event store first answers.

    A worker that starts while the database is down (gunicorn replaces workers at any time) cannot build
    the service, which reads the store's types when it is built; gunicorn would take that for a boot
    failure and stop the whole server. This way the worker serves /healthz, answers 503 otherwise, and
    builds the service on the first request after the database is back."""

    def __init__(self, build: Callable[[], Any]) -> None:
        self._build = build
        self._service: Any = None
        self._failed_at: float | None = None
        self._lock = threading.Lock()
        try:
            self._get()
        except StoreUnavailable:
            pass

    def _get(self) -> Any:
        if self._service is None:
            with self._lock:
                if self._service is None:
                    if self._failed_at is not None and monotonic() - self._failed_at < RECONNECT_EVERY:
                        raise StoreUnavailable("the service could not be built: the event store is down")
                    try:
                        self._service = self._build()
                    except Exception as exc:
                        outage = as_outage(exc)
                        if outage is None:
                            raise
                        self._failed_at = monotonic()
                        raise outage from exc
        return self._service

    def __getattr__(self, name: str) -> Any:
        return getattr(self._get(), name)

    def close(self) -> None:
        if self._service is not None:
            self._service.close()


def probe_postgres(persistence: dict[str, str]) -> None:
    """One direct connection with the settings, before anything else: a ConfigError naming where it tried
    and why it failed, within one connect timeout. Through the pool the same failure is a StoreUnavailable
    that names neither the host nor the database (and the library's own pool would wait out its retries,
    ten attempts of up to the connect timeout each, then end in a traceback)."""
    where = (f"PostgreSQL {persistence.get('POSTGRES_HOST')}:{persistence.get('POSTGRES_PORT', '5432')}/"
             f"{persistence.get('POSTGRES_DBNAME')} as user {persistence.get('POSTGRES_USER')}")
    given = persistence.get("POSTGRES_CONNECT_TIMEOUT") or "3"
    try:
        timeout = max(2, round(float(given)))  # libpq's own limit: whole seconds, at least 2
    except ValueError:
        raise ConfigError(f"POSTGRES_CONNECT_TIMEOUT is a number of seconds, not {given!r}") from None
    try:
        with psycopg.connect(
            host=persistence.get("POSTGRES_HOST"),
            port=persistence.get("POSTGRES_PORT", "5432"),
            dbname=persistence.get("POSTGRES_DBNAME"),
            user=persistence.get("POSTGRES_USER"),
            password=persistence.get("POSTGRES_PASSWORD", ""),
            connect_timeout=timeout,
            target_session_attrs=persistence.get("POSTGRES_TARGET_SESSION_ATTRS") or "any",
        ) as conn:
            schema = persistence.get("POSTGRES_SCHEMA") or "public"
            if conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone() is None:
                raise ConfigError(f"POSTGRES_SCHEMA {schema} does not exist in {where}: create it first "
                                  f"(CREATE SCHEMA {schema}), or name one that does")
            return
    except psycopg.Error as exc:
        # libpq says "connection to server at "h", port p failed: FATAL:  <reason>": the reason is the news.
        lines = str(exc).rpartition(" failed: ")[2].splitlines()
        reason = "; ".join(" ".join(line.split()) for line in lines if line.strip()).removeprefix("FATAL: ")
        raise ConfigError(f"Cannot connect to {where}: {reason}") from None
