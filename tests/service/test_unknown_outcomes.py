"""A save that fails in a way that may have committed: the command is looked up by its identity (its key, or
one made for the request) before anything is decided again. Committed, it is answered with its own
response and recorded once; not committed, it is decided again and recorded once; never known, a 503
that says so and names the key that finds it out."""

from __future__ import annotations

import pytest
from eventsourcing.persistence import OperationalError

from service import idempotency
from service.errors import OutcomeUnknown, StoreUnavailable, VersionMismatch

PLAYERS = ["anna", "boris", "vera"]


@pytest.fixture(params=[False, True], ids=["one-by-one", "group-commit"])
def group_commit(request: pytest.FixtureRequest) -> bool:
    return request.param


def failing_saves(service, monkeypatch, *, commit: bool, times: int = 1) -> list[int]:
    """The next ``times`` saves fail as a lost connection does; ``commit``: after committing. Returns the
    count of saves that failed."""
    real = service.save
    failed: list[int] = []

    def save(*aggregates):  # type: ignore[no-untyped-def]
        if len(failed) < times:
            failed.append(1)
            if commit:
                real(*aggregates)
            raise OperationalError("consuming input failed: server closed the connection unexpectedly")
        return real(*aggregates)

    monkeypatch.setattr(service, "save", save)
    return failed


def types(service, table_id):
    return [e["type"] for e in service.events_page(table_id, limit=1000)["events"]]


@pytest.mark.parametrize("key", [None, "terminal-7"])
def test_a_save_that_committed_before_failing_is_answered_with_its_own_response_and_recorded_once(
    service, monkeypatch, key
):
    table_id = service.open_table("chemin-de-fer", PLAYERS, {})["table_id"]
    failed = failing_saves(service, monkeypatch, commit=True)
    answer = service.execute(table_id, "draw_seats", "anna", {}, idempotency_key=key)
    assert failed == [1]
    assert types(service, table_id).count("SeatsDrawn") == 1
    assert answer["version"] == service.current_state(table_id)["version"]
    assert answer["events"] == service.events_page(table_id, after=answer["events"][0]["version"] - 1)["events"]


@pytest.mark.parametrize("key", [None, "terminal-7"])
def test_a_save_that_failed_without_committing_is_decided_again_and_recorded_once(service, monkeypatch, key):
    table_id = service.open_table("chemin-de-fer", PLAYERS, {})["table_id"]
    failed = failing_saves(service, monkeypatch, commit=False, times=2)
    answer = service.execute(table_id, "draw_seats", "anna", {}, idempotency_key=key)
    assert failed == [1, 1]
    assert types(service, table_id).count("SeatsDrawn") == 1
    assert answer["version"] == service.current_state(table_id)["version"]


def test_a_save_whose_outcome_the_store_never_tells_is_a_503_naming_the_key_that_finds_it_out(
    service, monkeypatch
):
    table_id = service.open_table("chemin-de-fer", PLAYERS, {})["table_id"]
    failing_saves(service, monkeypatch, commit=True)
    look_up = service.earlier_response

    def store_away(*args):  # type: ignore[no-untyped-def]
        raise StoreUnavailable("the database is down")

    monkeypatch.setattr(service, "earlier_response", store_away)
    monkeypatch.setattr(idempotency, "SETTLE_WITHIN", 0.3)
    with pytest.raises(OutcomeUnknown) as unknown:
        service.execute(table_id, "draw_seats", "anna", {})
    assert isinstance(unknown.value, StoreUnavailable)  # a 503 with Retry-After, as every outage
    key = unknown.value.message.split("idempotency key ")[1].split(":")[0]
    # the store is back: the key the answer named gives the command's own response, recorded once
    monkeypatch.setattr(service, "earlier_response", look_up)
    again = service.execute(table_id, "draw_seats", "anna", {}, idempotency_key=key)
    assert "SeatsDrawn" in [e["type"] for e in again["events"]]
    assert types(service, table_id).count("SeatsDrawn") == 1


def test_every_command_saves_a_record_of_its_own_with_its_events(service):
    table_id = service.open_table("chemin-de-fer", PLAYERS, {})["table_id"]
    first = service.execute(table_id, "draw_seats", "anna", {})
    # the record is found by the key the service made: here, by reading every record of the store
    records = [n for n in service.recorder.select_notifications(1, 1000)
               if n.topic.endswith("IdempotencyRecord.Created")]
    assert len(records) == 1
    assert first["version"] == service.current_state(table_id)["version"]


def to_the_stakes(service):
    """A punto banco table whose next command may be a stake: shuffled and cut."""
    table_id = service.open_table("punto-banco", ["marta", *PLAYERS], {}, croupier="marta")["table_id"]
    state = service.current_state(table_id)
    while not any(e["command"] == "place_stake" for e in state["expects"]):
        entry = state["expects"][0]
        fields = {"position": entry["fields"]["position"]["min"]} if "position" in entry["fields"] else {}
        state = service.execute(table_id, entry["command"], entry["player"], fields)["state"]
    return table_id, state["version"]


STAKE = {"spot": "banker", "amount": 100}


@pytest.mark.parametrize("resend", ["if-match", "idempotency-key"])
def test_a_stake_resent_after_its_answer_was_lost_is_never_recorded_twice_when_the_client_says_so(service, resend):
    """The client lost the connection before the answer and sends the stake again: with the version it
    decided on (If-Match) the resend is refused, with its key it gets the first answer; one stake either way."""
    table_id, version = to_the_stakes(service)
    said = {"expected_version": version} if resend == "if-match" else {"idempotency_key": "stake-1"}
    first = service.execute(table_id, "place_stake", "anna", STAKE, **said)  # its answer never arrived
    if resend == "if-match":
        with pytest.raises(VersionMismatch):
            service.execute(table_id, "place_stake", "anna", STAKE, **said)
    else:
        assert service.execute(table_id, "place_stake", "anna", STAKE, **said) == first
    assert types(service, table_id).count("StakePlaced") == 1
