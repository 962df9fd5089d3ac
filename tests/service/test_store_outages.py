"""Bounded waits on the event store: what counts as an outage, statements that run out of time, a service
built once the database answers."""

from __future__ import annotations

import sqlite3
import threading

import psycopg
import pytest
from eventsourcing.persistence import InterfaceError, OperationalError, ProgrammingError
from psycopg_pool import PoolTimeout

from service import store
from service.application import TablesService
from service.config import ConfigError, load
from service.errors import StoreUnavailable
from service.store import LazyService, StorePool, as_outage
from tests.conftest import PG
from tests.helpers import Seeds, StepClock


def wrapped(error_class, cause):  # type: ignore[no-untyped-def]
    """The library's error for ``cause``, as its recorders raise it."""
    try:
        raise error_class(str(cause)) from cause
    except error_class as exc:
        return exc


@pytest.mark.parametrize(
    "exc",
    [
        psycopg.OperationalError("connection refused"),
        PoolTimeout("couldn't get a connection after 3.00 sec"),
        wrapped(OperationalError, psycopg.OperationalError("server closed the connection unexpectedly")),
        wrapped(InterfaceError, psycopg.InterfaceError("the connection is closed")),
        wrapped(OperationalError, sqlite3.OperationalError("database is locked")),
        StoreUnavailable("down"),
    ],
)
def test_a_store_down_locked_or_busy_is_an_outage(exc):
    outage = as_outage(exc)
    assert isinstance(outage, StoreUnavailable) and outage.retry_after >= 1


@pytest.mark.parametrize(
    "exc",
    [
        wrapped(OperationalError, sqlite3.OperationalError("no such table: stored_events")),
        wrapped(ProgrammingError, psycopg.ProgrammingError("syntax error")),
        ValueError("a bug"),
    ],
)
def test_a_broken_store_or_a_bug_is_not_an_outage(exc):
    assert as_outage(exc) is None


def test_postgres_waits_are_bounded_by_default_and_configurable():
    base = {"PERSISTENCE_MODULE": "eventsourcing.postgres", "POSTGRES_HOST": "db", "POSTGRES_DBNAME": "z", "POSTGRES_USER": "z"}
    settings = load(base)
    assert settings.persistence["POSTGRES_CONNECT_TIMEOUT"] == "3"
    assert settings.statement_timeout == 10
    chosen = load({**base, "POSTGRES_CONNECT_TIMEOUT": "5", "ZAMETANO_STATEMENT_TIMEOUT": "0"})
    assert chosen.persistence["POSTGRES_CONNECT_TIMEOUT"] == "5" and chosen.statement_timeout == 0
    for bad in ("soon", "-1", "nan"):
        with pytest.raises(ConfigError, match="ZAMETANO_STATEMENT_TIMEOUT"):
            load({**base, "ZAMETANO_STATEMENT_TIMEOUT": bad})


@pytest.mark.postgres
def test_the_postgres_pool_is_the_bounded_one_and_keeps_the_librarys_connection_setup(postgres_env):
    service = TablesService(load(postgres_env), clock=StepClock(), new_seed=Seeds())
    try:
        pool = service.factory.datastore.pool
        assert isinstance(pool, StorePool) and pool.timeout == 3
        assert pool.kwargs["connect_timeout"] == 3 and "statement_timeout=10000" in pool.kwargs["options"]
        table_id = service.open_table("chemin-de-fer", ["anna", "boris"], {})["table_id"]
        service.execute(table_id, "draw_seats", "anna", {})  # the library's writes need its autocommit setup
        service.ping()
    finally:
        service.close()


@pytest.mark.postgres
def test_a_statement_that_runs_out_of_time_is_an_outage_at_once_not_retried(postgres_env):
    service = TablesService(load({**postgres_env, "ZAMETANO_STATEMENT_TIMEOUT": "0.5", "AGGREGATE_CACHE_MAXSIZE": ""}))
    locker = psycopg.connect(**PG, options=f"-c search_path={postgres_env['POSTGRES_SCHEMA']}")
    # Whatever happens the lock is let go in the end: without a statement timeout the read below would
    # otherwise wait for good.
    release = threading.Timer(30, locker.close)
    try:
        table_id = service.open_table("chemin-de-fer", ["anna", "boris"], {})["table_id"]
        locker.execute("LOCK TABLE zametano_events IN ACCESS EXCLUSIVE MODE")  # a writer that hangs
        release.start()
        with pytest.raises(StoreUnavailable) as refused:
            service.current_state(table_id)
        assert "ran out of time" in refused.value.reason  # the first time, not after the recorder's retries
    finally:
        release.cancel()
        locker.close()
        service.close()


def test_the_service_is_built_once_the_store_answers_and_not_retried_more_than_once_a_second(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(store, "monotonic", lambda: now[0])
    attempts = []

    class Built:
        def ping(self):
            return "pong"

        def close(self):
            attempts.append("closed")

    def build():
        attempts.append("build")
        if len(attempts) == 1:
            raise wrapped(OperationalError, psycopg.OperationalError("connection refused"))
        return Built()

    lazy = LazyService(build)  # the store is down while the worker boots: no exception, no service
    assert attempts == ["build"]
    now[0] += 0.5
    with pytest.raises(StoreUnavailable):
        lazy.ping()
    assert attempts == ["build"]  # too soon to try again
    now[0] += 1
    assert lazy.ping() == "pong"
    assert lazy.ping() == "pong" and attempts == ["build", "build"]
    lazy.close()
    assert attempts[-1] == "closed"
