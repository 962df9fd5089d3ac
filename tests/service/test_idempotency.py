"""A repeated Idempotency-Key gets the first response, also while the first request is still in flight:
never a refusal for a command that was recorded, never a second recording."""

from __future__ import annotations

import threading

import pytest

from service.errors import VersionMismatch
from service.application import utc_now

PLAYERS = ["anna", "boris", "vera"]
CLIENTS = 16
ROUNDS = 4


@pytest.fixture(params=[False, True], ids=["one-by-one", "group-commit"])
def group_commit(request: pytest.FixtureRequest) -> bool:
    """Every test here runs with and without group commit (service/groupcommit.py)."""
    return request.param


def seatings(service, table_id):
    return sum(e["type"] == "SeatsDrawn" for e in service.events_page(table_id, limit=1000)["events"])


@pytest.mark.parametrize("expected_version", [None, 1])
def test_a_repeat_that_reads_the_table_after_the_first_commits_gets_the_first_response(service, monkeypatch, expected_version):
    """The repeat looks for the key before the first request commits and reads the table after: the command
    is no longer legal there (or the version it expected is no longer the head), yet it was recorded under this key."""
    table_id = service.open_table("chemin-de-fer", PLAYERS, {})["table_id"]
    look_up = service.earlier_response
    first: list[dict] = []

    def first_commits_right_after_the_repeat_looked(*args):  # type: ignore[no-untyped-def]
        found = look_up(*args)
        if not first:
            first.append({})  # the first request, in flight: it commits now
            first[0] = service.execute(table_id, "draw_seats", "anna", {}, expected_version=expected_version, idempotency_key="k")
        return found

    monkeypatch.setattr(service, "earlier_response", first_commits_right_after_the_repeat_looked)
    again = service.execute(table_id, "draw_seats", "anna", {}, expected_version=expected_version, idempotency_key="k")
    assert again == first[0]
    assert seatings(service, table_id) == 1


def test_a_refusal_for_a_key_never_recorded_is_still_a_refusal(service):
    table_id = service.open_table("chemin-de-fer", PLAYERS, {})["table_id"]
    service.execute(table_id, "draw_seats", "anna", {}, idempotency_key="first")
    with pytest.raises(VersionMismatch):
        service.execute(table_id, "draw_seats", "anna", {}, expected_version=1, idempotency_key="second")


def race(services, table_id, key):
    """CLIENTS threads, spread over the services, send the same keyed command at once; returns the answers."""
    start = threading.Barrier(CLIENTS)
    answers: list = [None] * CLIENTS

    def client(i: int) -> None:
        try:
            start.wait()
            answers[i] = services[i % len(services)].execute(table_id, "draw_seats", "anna", {}, idempotency_key=key)
        except BaseException as exc:  # noqa: BLE001 - every answer is compared below
            answers[i] = exc

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers


def assert_one_recording_one_answer(services, rounds):
    for n in range(rounds):
        table_id = services[0].open_table("chemin-de-fer", PLAYERS, {})["table_id"]
        answers = race(services, table_id, f"key-{n}")
        refused = [a for a in answers if isinstance(a, BaseException)]
        assert refused == [], f"round {n}: {refused[0]!r}" if refused else ""
        assert all(a == answers[0] for a in answers), f"round {n}: the answers differ"
        assert seatings(services[0], table_id) == 1


def test_many_clients_repeating_a_key_at_once_all_get_the_one_recorded_response(make_service):
    assert_one_recording_one_answer([make_service(clock=utc_now)], ROUNDS)


def test_two_server_processes_repeating_a_key_at_once_all_get_the_one_recorded_response(make_service, shared_store):
    assert_one_recording_one_answer([make_service(clock=utc_now), make_service(clock=utc_now)], ROUNDS)
