"""The read model's follower: it indexes what is recorded as it is recorded, so that queries find the read
model up to date instead of indexing first; it outlives its failures, and stops with the service."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable

import pytest

from service.readmodel import follower as follower_module
from service.application import TablesService
from service.config import load
from tests.helpers import pick
from tests.service.test_read_model import assert_answers_in_full, first_of, stored_as, table_with_a_round

PLAYERS = ["anna", "boris", "vera"]


def eventually(condition: Callable[[], bool], what: str, limit: float = 60.0) -> None:
    """Waits for something a background thread does; the limit only keeps a broken follower from hanging
    the suite (no test depends on how fast it is)."""
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.01)


def following(make_service) -> TablesService:  # type: ignore[no-untyped-def]
    service = make_service(follow=True)
    service.index.follower_wait = 60.0  # a slow machine waits longer; the test is about who does the work
    eventually(lambda: service.index.follower.running, "the follower subscribed")
    return service


def forbid_catching_up(service: TablesService, monkeypatch: pytest.MonkeyPatch) -> None:
    def catch_up() -> None:
        raise AssertionError("a query indexed the log itself")

    monkeypatch.setattr(service.index, "catch_up", catch_up)


def play_a_round(service: TablesService, table_id: str, seed: int = 3) -> None:
    rng = random.Random(seed)
    while service.current_state(table_id)["round"] < 2:
        service.execute(table_id, *pick(service.current_state(table_id), rng))


def test_the_follower_indexes_what_is_recorded_and_queries_only_wait_for_it(make_service, monkeypatch):
    service = following(make_service)
    forbid_catching_up(service, monkeypatch)
    table_id = service.open_table("chemin-de-fer", PLAYERS, {})["table_id"]
    play_a_round(service, table_id)

    # right after the round's last command: the audit finds the round without indexing anything itself
    audit = service.round_audit(table_id, 1)
    assert audit["problems"] == [] and audit["checks"]["rules"] is True
    assert [t["table_id"] for t in service.list_tables()["tables"]] == [table_id]
    assert service.list_rounds(table_id)["rounds"][0]["round"] == 1
    status = service.read_model_status()
    assert status["lag"] == 0 and status["following"] is True and status["indexing"] is True
    assert status["position"] == status["head"] == service.recorder.max_notification_id()


def test_what_another_process_records_is_followed_too(make_service, shared_store, monkeypatch):
    reader, writer = following(make_service), make_service()
    forbid_catching_up(reader, monkeypatch)
    table_id = writer.open_table("chemin-de-fer", PLAYERS, {})["table_id"]
    play_a_round(writer, table_id)
    assert reader.round_audit(table_id, 1)["problems"] == []


def test_without_a_follower_the_query_indexes_what_it_needs_itself(service):
    table_id = service.open_table("chemin-de-fer", PLAYERS, {})["table_id"]
    play_a_round(service, table_id)
    assert service.read_model_status() == {"position": 0, "head": service.recorder.max_notification_id(),
                                           "lag": service.recorder.max_notification_id(), "following": False,
                                           "indexing": False}
    assert service.round_audit(table_id, 1)["problems"] == []
    assert service.read_model_status()["lag"] == 0


def test_the_follower_starts_again_after_a_failure_and_misses_nothing(make_service, monkeypatch):
    monkeypatch.setattr(follower_module, "RETRY", 0.01)
    service = following(make_service)
    take, failures = service.index.take, []

    def fails_once(notes, whole):  # type: ignore[no-untyped-def]
        if not failures:
            failures.append(len(notes))
            raise ConnectionError("the database went away")
        return take(notes, whole)

    monkeypatch.setattr(service.index, "take", fails_once)
    table_id = service.open_table("chemin-de-fer", PLAYERS, {})["table_id"]
    play_a_round(service, table_id)
    head = service.recorder.max_notification_id()
    eventually(lambda: service.index.position() == head, "the follower indexed the whole log after its failure")
    assert failures and service.list_rounds(table_id)["rounds"][0]["round"] == 1


def test_closing_the_service_stops_the_follower_and_every_thread_it_started(make_service):
    before = set(threading.enumerate())
    service = following(make_service)
    service.open_table("chemin-de-fer", PLAYERS, {})
    eventually(lambda: service.read_model_status()["lag"] == 0, "the follower indexed the table")
    assert set(threading.enumerate()) - before  # the follower and its subscription's threads
    service.close()
    assert set(threading.enumerate()) - before == set()
    assert service.index.follower.running is False


def test_an_event_the_follower_cannot_read_stops_only_its_own_table(make_service, monkeypatch):
    service = following(make_service)
    forbid_catching_up(service, monkeypatch)
    before = table_with_a_round(service)
    bad = table_with_a_round(service)
    service.list_tables()  # returns once the follower has indexed both tables
    held = service.current_state(bad)["version"]
    damaged: list[int] = []
    with stored_as(service, first_of(None, lambda state: b"\x00 not an event", damaged)):
        service.execute(bad, *pick(service.current_state(bad), random.Random(1)))
    after = table_with_a_round(service)

    rows = {t["table_id"]: t for t in service.list_tables(limit=100)["tables"]}
    assert list(rows) == [before, bad, after]
    assert rows[bad]["index_error"]["version"] == damaged[0] == held + 1
    assert "the stored event cannot be read" in rows[bad]["index_error"]["message"]
    assert rows[bad]["version"] == held  # what it held before, nothing half-written
    for table_id in (before, after):
        assert_answers_in_full(service, table_id)
    assert service.read_model_status()["following"] is True  # the follower goes on


def test_a_pool_of_one_postgresql_connection_is_not_given_to_a_follower(postgres_env, caplog):
    service = TablesService(load({**postgres_env, "POSTGRES_POOL_SIZE": "1", "POSTGRES_MAX_OVERFLOW": "0"}),
                            follow=True)
    try:
        table_id = service.open_table("chemin-de-fer", PLAYERS, {})["table_id"]
        assert service.index.follower is None and "POSTGRES_POOL_SIZE" in caplog.text
        assert [t["table_id"] for t in service.list_tables()["tables"]] == [table_id]  # the query indexes it
    finally:
        service.close()


def test_a_postgresql_follower_holds_no_connection_between_its_looks_at_the_log(postgres_env):
    # It polls instead of LISTENing: a LISTEN keeps its connection for good, and wakes at every commit.
    service = TablesService(load(postgres_env), follow=True)
    try:
        pool = service.factory.datastore.pool
        table_id = service.open_table("chemin-de-fer", PLAYERS, {})["table_id"]
        eventually(lambda: service.read_model_status()["lag"] == 0 and service.index.follower.indexing,
                   "the follower indexed the table")

        def in_use() -> int:
            stats = pool.get_stats()
            return stats["pool_size"] - stats["pool_available"]

        eventually(lambda: in_use() == 0, "every connection back in the pool", limit=5.0)
        assert service.read_model_status()["following"] is True
        assert [t["table_id"] for t in service.list_tables()["tables"]] == [table_id]
    finally:
        service.close()


def test_the_default_pool_serves_every_thread_of_a_worker_and_its_follower_at_once(postgres_env):
    from api.server import DEFAULT_THREADS

    service = TablesService(load(postgres_env), follow=True)
    try:
        # a request holds at most one connection at a time; the follower takes one for each look at the log
        assert service.factory.datastore.pool.max_size >= DEFAULT_THREADS + 1
        tables = [service.open_table("chemin-de-fer", PLAYERS, {})["table_id"] for _ in range(DEFAULT_THREADS)]
        start = threading.Barrier(DEFAULT_THREADS)
        failures: list[BaseException] = []

        def play(table_id: str) -> None:
            try:
                start.wait()
                rng = random.Random(table_id)
                for _ in range(5):
                    service.execute(table_id, *pick(service.current_state(table_id), rng))
            except BaseException as exc:  # reported by the test's thread
                failures.append(exc)

        threads = [threading.Thread(target=play, args=(t,)) for t in tables]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not failures, failures
        assert all(service.current_state(t)["version"] >= 6 for t in tables)
    finally:
        service.close()
