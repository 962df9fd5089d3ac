"""The indexing lease: of the processes on one store one indexes the read model and the others only tell their
streams; a query where another process indexes indexes what it needs itself; the lease passes on when its
holder stops or loses its connection, and nothing read meanwhile is missed or counted twice."""

from __future__ import annotations

import logging
import stat
import time
import uuid
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from service.application import TablesService
from service.config import load
from service.readmodel.follower import IDLE_RETRY
from service.readmodel.lease import AdvisoryLease, lease_for
from tests.conftest import PG
from tests.service.test_follower import eventually, following
from tests.service.test_read_model import assert_answers_in_full, table_with_a_round


def two_processes(make_service: Callable[..., TablesService]) -> tuple[TablesService, TablesService]:
    """Two services following one store, as two server processes do: (the one that indexes, the other)."""
    services = [following(make_service), following(make_service)]
    indexing = [s for s in services if s.read_model_status()["indexing"]]
    assert len(indexing) == 1, [s.read_model_status() for s in services]
    leader = indexing[0]
    return leader, next(s for s in services if s is not leader)


def counted(owner: Any, name: str, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The calls of ``owner.name`` from now on (their first argument), the method still doing its work."""
    calls: list[Any] = []
    method = getattr(owner, name)

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[0] if args else None)
        return method(*args, **kwargs)

    monkeypatch.setattr(owner, name, counting)
    return calls


def heard_by(service: TablesService, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The positions of the notifications the service's follower tells its streams of, from now on."""
    heard: list[int] = []
    publisher = service.index.follower.publisher
    read = publisher.read

    def hearing(notes: Any) -> None:
        heard.extend(n.id for n in notes)
        read(notes)

    monkeypatch.setattr(publisher, "read", hearing)
    return heard


def stream_opened(service: TablesService) -> Any:
    """A live stream's place in the service's process (release it to close the stream), once the process's
    follower reads the log for it."""
    slot = service.hub.admit("table")
    eventually(lambda: service.index.follower._subscription is not None, "the follower subscribed for the stream")
    return slot


def logged_ids(service: TablesService) -> list[int]:
    head = service.recorder.max_notification_id() or 0
    return [n.id for n in service.recorder.select_notifications(1, head + 1)]


def assert_indexed_as_logged(service: TablesService, tables: list[str]) -> None:
    """Each table answers in full (its audit and /verify check the read model against the log), with as many
    rounds listed as its log has finished."""
    for table_id in tables:
        assert_answers_in_full(service, table_id)
        finished = service.current_state(table_id)["round"] - 1
        row = next(t for t in service.list_tables(limit=1000)["tables"] if t["table_id"] == table_id)
        assert row["rounds"] == finished
        assert [r["round"] for r in service.list_rounds(table_id)["rounds"]] == list(range(1, finished + 1))


def test_of_two_processes_on_one_store_one_indexes_and_the_other_only_tells_its_streams(
    make_service, shared_store, monkeypatch
):
    leader, other = two_processes(make_service)
    taken = counted(other.index, "take", monkeypatch)
    projected = counted(other.index.projection, "process", monkeypatch)
    heard = heard_by(other, monkeypatch)
    stream_opened(other)

    tables = [table_with_a_round(leader), table_with_a_round(other)]  # commands through either process
    head = other.recorder.max_notification_id()
    eventually(lambda: leader.index.position() == head, "the indexing process indexed the whole log")
    eventually(lambda: bool(heard) and heard[-1] == head, "the other process's streams heard of every event")

    assert heard == logged_ids(other)  # each event once, in order
    assert taken == [] and projected == []  # the other decoded and projected nothing for the read model
    assert leader.read_model_status()["indexing"] is True and other.read_model_status()["indexing"] is False
    assert_indexed_as_logged(other, tables)
    assert projected == []  # its queries found the read model up to date


def test_a_process_that_neither_indexes_nor_has_a_stream_open_reads_nothing_until_a_stream_opens(
    make_service, shared_store, monkeypatch
):
    leader, other = two_processes(make_service)
    heard = heard_by(other, monkeypatch)
    eventually(lambda: other.index.follower._subscription is None, "the other process stopped reading")
    first = table_with_a_round(leader)
    head = leader.recorder.max_notification_id()
    eventually(lambda: leader.index.position() == head, "the indexing process indexed the table")
    assert heard == [] and other.index.follower._subscription is None
    assert other.read_model_status() | {"position": 0, "head": 0, "lag": 0} == {
        "position": 0, "head": 0, "lag": 0, "following": True, "indexing": False}

    slot = stream_opened(other)  # reads from the read model's position on: what its stream may still need
    second = table_with_a_round(leader)
    head = leader.recorder.max_notification_id()
    eventually(lambda: bool(heard) and heard[-1] == head, "the other process's stream heard of the second table")
    assert set(logged_ids(other)) - set(heard) <= set(range(1, leader.index.position() + 1))
    slot.release()  # its last stream closed: it stops reading at the next list it reads
    third = table_with_a_round(leader)
    eventually(lambda: other.index.follower._subscription is None, "the other process stopped reading again")
    del heard[:]
    fourth = table_with_a_round(leader)
    assert heard == []
    assert_indexed_as_logged(other, [first, second, third, fourth])


def test_a_query_in_a_process_that_does_not_index_indexes_what_it_needs_at_once(make_service, shared_store, monkeypatch):
    leader, other = two_processes(make_service)
    monkeypatch.setattr(leader.index, "take", lambda notes, whole: [])  # the indexing process is behind

    def waits(position: int, timeout: float) -> bool:
        raise AssertionError("the query waited for its own follower, which does not index")

    monkeypatch.setattr(other.index, "wait_for", waits)
    table_id = table_with_a_round(leader)

    assert_indexed_as_logged(other, [table_id])
    assert other.read_model_status()["lag"] == 0


def test_when_the_indexing_process_stops_the_other_takes_over_and_misses_nothing(
    make_service, shared_store, monkeypatch
):
    leader, other = two_processes(make_service)
    writer = make_service()  # records, following nothing
    taken = counted(other.index, "take", monkeypatch)
    heard = heard_by(other, monkeypatch)
    stream_opened(other)  # it reads what the indexing process reads
    first = table_with_a_round(writer)
    head = writer.recorder.max_notification_id()
    eventually(lambda: leader.index.position() == head, "the indexing process indexed the first table")

    # The indexing process reads the second table's events but stops before it indexes them; the other
    # process has read them too, and left them to it.
    monkeypatch.setattr(leader.index, "take", lambda notes, whole: [])
    second = table_with_a_round(writer)
    head = writer.recorder.max_notification_id()
    eventually(lambda: bool(heard) and heard[-1] == head, "the other process read the second table's events")
    assert leader.index.position() < head and taken == []
    leader.close()

    third = table_with_a_round(writer)
    head = writer.recorder.max_notification_id()
    # Taking over, it indexes from the read model's position first, then the list it read: both done.
    eventually(lambda: other.index.position() == head and bool(taken), "the other process indexed the whole log")
    assert other.read_model_status()["indexing"] is True
    assert_indexed_as_logged(other, [first, second, third])


def test_when_the_indexing_process_stops_a_process_with_nothing_to_read_takes_over_within_a_second_or_so(
    make_service, shared_store, monkeypatch
):
    leader, other = two_processes(make_service)
    writer = make_service()
    heard = heard_by(other, monkeypatch)
    monkeypatch.setattr(leader.index, "take", lambda notes, whole: [])  # reads, but stops before it indexes
    first = table_with_a_round(writer)
    leader.close()
    started = time.monotonic()
    head = writer.recorder.max_notification_id()
    eventually(lambda: other.index.position() == head, "the other process indexed the whole log")
    assert time.monotonic() - started < 30 * IDLE_RETRY  # tried again at every IDLE_RETRY; a slow machine may lag
    assert other.read_model_status()["indexing"] is True and heard[-1] == head
    second = table_with_a_round(writer)
    eventually(lambda: other.index.position() == writer.recorder.max_notification_id(), "it indexes what follows")
    assert_indexed_as_logged(other, [first, second])


def test_a_postgresql_lease_is_lost_with_its_connection_and_another_takes_it(postgres_env, caplog):
    service = TablesService(load(postgres_env))
    first, second = lease_for(service, "tracking"), lease_for(service, "tracking")
    try:
        assert isinstance(first, AdvisoryLease)
        assert first.hold() is True and second.hold() is False
        assert first.hold() is True  # kept while its connection stands
        with psycopg.connect(**PG, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (second._conn.info.backend_pid,))
            eventually(lambda: second.hold() is False and "lease" not in caplog.text,
                       "the process that tries for the lease tries again on a new connection")
            admin.execute("SELECT pg_terminate_backend(%s)", (first._conn.info.backend_pid,))
        eventually(second.hold, "the server dropped the lock with its connection")
        assert first.hold() is False  # it notices, and finds the lease taken
        assert "indexing lease was lost with its connection" in caplog.text
        second.release()
        assert first.hold() is True
    finally:
        first.release()
        second.release()
        service.close()


def test_stores_in_two_schemas_of_one_database_do_not_exclude_each_other(postgres_env):
    schema = f"zametano_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(**PG, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    services = [TablesService(load(postgres_env)), TablesService(load({**postgres_env, "POSTGRES_SCHEMA": schema}))]
    leases = [lease_for(s, "tracking") for s in services]
    try:
        assert [lease.hold() for lease in leases] == [True, True]
    finally:
        for lease in leases:
            lease.release()
        for service in services:
            service.close()
        with psycopg.connect(**PG, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def test_the_sqlite_lease_is_a_private_file_beside_the_database_held_by_one_at_a_time(tmp_path):
    service = TablesService(load({"PERSISTENCE_MODULE": "eventsourcing.sqlite",
                                  "SQLITE_DBNAME": str(tmp_path / "events.sqlite"), "ZAMETANO_DATA_DIR": str(tmp_path)}))
    first, second = lease_for(service, ""), lease_for(service, "")
    try:
        assert first.hold() is True and second.hold() is False
        lock_file = tmp_path / "events.sqlite.zametano-read-model-v3.lock"
        assert stat.S_IMODE(lock_file.stat().st_mode) == 0o600
        first.release()
        assert second.hold() is True and first.hold() is False
    finally:
        first.release()
        second.release()
        service.close()


IN_MEMORY = {
    "memory": {"PERSISTENCE_MODULE": "eventsourcing.popo"},
    "sqlite-in-memory": {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": "file:lease?mode=memory&cache=shared"},
}


@pytest.mark.parametrize("store", list(IN_MEMORY))
def test_a_store_in_memory_belongs_to_one_process_which_always_holds_the_lease(store, tmp_path):
    service = TablesService(load({**IN_MEMORY[store], "ZAMETANO_DATA_DIR": str(tmp_path)}))
    try:
        assert [lease_for(service, "").hold() for _ in range(2)] == [True, True]
    finally:
        service.close()


def test_a_lease_out_of_reach_leaves_the_process_indexing_as_if_it_held_it(tmp_path, caplog):
    service = TablesService(load({"PERSISTENCE_MODULE": "eventsourcing.sqlite",
                                  "SQLITE_DBNAME": str(tmp_path / "events.sqlite"), "ZAMETANO_DATA_DIR": str(tmp_path)}))
    lease = lease_for(service, "")
    lease.path = tmp_path / "gone" / "the.lock"  # type: ignore[attr-defined]
    try:
        with caplog.at_level(logging.WARNING, "zametano.read_model"):
            assert lease.hold() is True and lease.hold() is True
        assert caplog.text.count("indexing lease cannot be reached") == 1
    finally:
        lease.release()
        service.close()
