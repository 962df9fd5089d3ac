"""A save on PostgreSQL is one statement (service/onetrip.py): the same rows as the library's recorder writes,
a version taken first still refused, nothing written of a refused save, and a store without the function
still written (the library's way)."""

from __future__ import annotations

import dataclasses

import psycopg
import pytest
from eventsourcing.persistence import IntegrityError

from service.application import TablesService
from service.config import load
from service.onetrip import OneTripRecorder
from tests.helpers import Seeds, StepClock, pick, play_service, postgres_location

OPENING = ("chemin-de-fer", ["anna", "boris", "vera"], {"decks": 4})


@pytest.fixture
def make(postgres_env):
    made = []

    def build(**env):
        service = TablesService(load({**postgres_env, **env}), clock=StepClock(), new_seed=Seeds(), group_commit=False)
        made.append(service)
        return service

    yield build
    for service in made:
        service.close()


def test_postgres_saves_go_through_the_one_statement_recorder(make):
    service = make()
    assert isinstance(service.recorder, OneTripRecorder) and not service.recorder.function_missing


def test_a_table_played_in_one_trip_saves_reads_back_as_the_librarys_recorder_reads_it(make):
    import random

    service = make()
    table_id = service.open_table(*OPENING)["table_id"]
    state = play_service(service, table_id, 30, random.Random(3))
    library = make(APPLICATION_RECORDER_TOPIC="eventsourcing.postgres:PostgresApplicationRecorder")
    assert not isinstance(library.recorder, OneTripRecorder)
    assert library.current_state(table_id) == state
    assert library.verify(table_id)["ok"]
    notes = library.recorder.select_notifications(1, 1000)
    ids = [n.id for n in notes]
    # each command saved its record in the same statement as its events: one row more per command
    table_rows = [n for n in notes if n.originator_id == library._uuid(table_id)]
    records = [n for n in notes if n.topic.endswith("IdempotencyRecord.Created")]
    assert ids == sorted(ids) and len(table_rows) == state["version"] and len(records) == 30
    assert len(ids) == len(table_rows) + len(records)


def test_a_version_taken_first_is_refused_and_nothing_of_that_save_is_written(make):
    service = make()
    table_id = service.open_table(*OPENING)["table_id"]
    stored = service.recorder.select_events(service._uuid(table_id))
    again = dataclasses.replace(stored[0], originator_version=2), stored[0]
    with pytest.raises(IntegrityError):
        service.recorder.insert_events(list(again))  # version 2 is new, version 1 is taken: neither is written
    assert [e.originator_version for e in service.recorder.select_events(service._uuid(table_id))] == [1]


def test_a_store_without_the_function_is_written_the_librarys_way(make, postgres_env):
    import random

    service = make()
    table_id = service.open_table(*OPENING)["table_id"]
    with psycopg.connect(**postgres_location(postgres_env), autocommit=True) as conn:
        conn.execute(f"DROP FUNCTION {postgres_env['POSTGRES_SCHEMA']}.{service.recorder.save_function}")
    older = make(CREATE_TABLE="n")
    state = play_service(older, table_id, 5, random.Random(5))
    assert older.recorder.function_missing
    assert state["version"] == len(older.recorder.select_events(older._uuid(table_id)))


def test_a_save_over_a_gap_in_the_log_is_refused_and_nothing_is_written(make):
    service = make()
    table_id = service.open_table(*OPENING)["table_id"]
    stored = service.recorder.select_events(service._uuid(table_id))
    with pytest.raises(IntegrityError):
        service.recorder.insert_events([dataclasses.replace(stored[0], originator_version=3)])  # version 2 missing
    assert [e.originator_version for e in service.recorder.select_events(service._uuid(table_id))] == [1]


def test_a_command_on_a_table_this_process_holds_at_its_head_reads_nothing_before_its_save(make):
    import random

    service = make()
    table_id = service.open_table(*OPENING)["table_id"]
    state = play_service(service, table_id, 3, random.Random(2))
    reads = []
    select = service.recorder.select_events
    service.recorder.select_events = lambda *a, **k: reads.append(a) or select(*a, **k)
    command, player, args = pick(state, random.Random(4))
    assert service.execute(table_id, command, player, args)["version"] > state["version"]
    assert reads == []


def test_a_command_on_a_table_another_process_moved_on_is_decided_on_the_log_not_refused(make):
    import random

    first, second = make(), make()
    table_id = first.open_table(*OPENING)["table_id"]
    play_service(first, table_id, 3, random.Random(2))  # first holds the table in its cache
    moved = play_service(second, table_id, 4, random.Random(8))  # second moves it on: first's copy is stale
    command, player, args = pick(moved, random.Random(9))
    # If-Match the version only the log knows: not refused as a mismatch on the stale copy
    result = first.execute(table_id, command, player, args, expected_version=moved["version"])
    assert result["version"] > moved["version"]
    assert second.current_state(table_id) == first.current_state(table_id) == result["state"]
    assert first.verify(table_id)["ok"]


def test_a_store_made_when_the_function_took_the_librarys_composite_rows_gets_the_new_one_beside_it(make, postgres_env):
    import random

    service = make()
    schema, function = postgres_env["POSTGRES_SCHEMA"], service.recorder.save_function
    table_id = service.open_table(*OPENING)["table_id"]
    with psycopg.connect(**postgres_location(postgres_env), autocommit=True) as conn:
        # As an earlier version left it: the function of one array of the library's composite type, alone.
        conn.execute(f"DROP FUNCTION {schema}.{function}")
        conn.execute(f"CREATE FUNCTION {schema}.{function}(events {schema}.{service.recorder.stored_event_type_name}[]) "
                     "RETURNS SETOF bigint LANGUAGE sql AS 'SELECT 0::bigint WHERE false'")
    upgraded = make()  # creates its tables (CREATE_TABLE), the function of four arrays with them
    state = play_service(upgraded, table_id, 5, random.Random(6))
    assert not upgraded.recorder.function_missing
    assert state["version"] == len(upgraded.recorder.select_events(upgraded._uuid(table_id)))
    assert upgraded.verify(table_id)["ok"]
