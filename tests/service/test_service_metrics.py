"""What only the service sees, counted and logged: a command decided again after losing a race, a race lost
while expecting a version, and the PostgreSQL connections a worker's pool has handed out."""

from __future__ import annotations

import logging
from datetime import datetime

import pytest
from prometheus_client import REGISTRY

from domain.errors import DomainError
from service.errors import ConcurrentWrite
from tests.service.test_tables_service import open_table


def sample(name, **labels):
    return REGISTRY.get_sample_value(name, labels) or 0.0


def racing(winner, table_id, command, player):
    """A clock that lets another process write to the table between the loser's read and its save."""

    def clock():
        clock.calls += 1
        if clock.calls == 1:
            winner.execute(table_id, command, player, {})
        return datetime.now().astimezone()

    clock.calls = 0
    return clock


def test_a_command_decided_again_after_losing_a_race_is_a_retry_counted_and_logged(make_service, shared_store, caplog):
    winner = make_service()
    table_id = open_table(winner)
    loser = make_service(clock=racing(winner, table_id, "draw_seats", "boris"))
    retries = sample("zametano_command_retries_total", command="draw_seats")
    with caplog.at_level(logging.INFO, logger="zametano"):
        with pytest.raises(DomainError):  # decided again on the fresh table: the seats are drawn already
            loser.execute(table_id, "draw_seats", "anna", {})
    assert sample("zametano_command_retries_total", command="draw_seats") == retries + 1
    lines = [r for r in caplog.records if r.name == "zametano.commands"]
    assert len(lines) == 1 and "retry 1" in lines[0].getMessage() and lines[0].table_id == table_id


def test_a_race_lost_while_expecting_a_version_counts_as_a_concurrent_write(make_service, shared_store):
    winner = make_service()
    table_id = open_table(winner)
    loser = make_service(clock=racing(winner, table_id, "draw_seats", "boris"))
    conflicts = sample("zametano_conflicts_total", kind="concurrent_write")
    with pytest.raises(ConcurrentWrite):
        loser.execute(table_id, "draw_seats", "anna", {}, expected_version=1)
    assert sample("zametano_conflicts_total", kind="concurrent_write") == conflicts + 1


def test_an_idempotent_repeat_is_logged_with_its_table_and_command(service, caplog):
    table_id = open_table(service)
    service.execute(table_id, "draw_seats", "anna", {}, idempotency_key="k")
    with caplog.at_level(logging.INFO, logger="zametano"):
        service.execute(table_id, "draw_seats", "anna", {}, idempotency_key="k")
    lines = [r for r in caplog.records if r.name == "zametano.commands"]
    assert len(lines) == 1 and "idempotent repeat of draw_seats" in lines[0].getMessage()
    assert lines[0].table_id == table_id


def test_the_connections_a_pool_hands_out_are_counted_while_in_use(postgres_env):
    from service.application import TablesService
    from service.config import load

    service = TablesService(load(postgres_env))
    try:
        pool = service.factory.datastore.pool
        before = sample("zametano_db_pool_connections_in_use")
        with pool.connection() as conn:
            conn.execute("SELECT 1")
            with pool.connection():
                assert sample("zametano_db_pool_connections_in_use") == before + 2
        assert sample("zametano_db_pool_connections_in_use") == before
    finally:
        service.close()
