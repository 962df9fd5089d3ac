"""Signed receipts from the service, on every persistence module: each names the head it was given for."""

from __future__ import annotations

import random

import pytest

from service.idempotency import IdempotencyRecord
from service.errors import TableNotFound
from tests.helpers import pick
from tests.signatures import verify_receipt

PLAYERS = ["anna", "boris", "vera"]


def keys(service):
    return service.signing_keys()["keys"]


def assert_receipt_names_head(service, table_id, receipt):
    (last,) = service.events_page(table_id, after=receipt["version"] - 1, limit=1)["events"]
    assert (receipt["table_id"], receipt["version"], receipt["digest"], receipt["timestamp"]) == (
        table_id, last["version"], last["digest"], last["timestamp"]
    )
    assert service.events_page(table_id, after=receipt["version"])["events"] == []  # it was the head
    verify_receipt(receipt, keys(service))


def test_opening_and_every_command_return_a_verifying_receipt_of_the_new_head(service):
    opened = service.open_table("chemin-de-fer", PLAYERS, {"decks": 2})
    table_id = opened["table_id"]
    assert opened["receipt"]["version"] == 1
    assert_receipt_names_head(service, table_id, opened["receipt"])
    rng = random.Random(4)
    for _ in range(40):
        command, player, args = pick(service.current_state(table_id), rng)
        result = service.execute(table_id, command, player, args)
        receipt = result["receipt"]
        assert (receipt["version"], receipt["digest"]) == (result["version"], result["digest"])
        assert receipt["timestamp"] == result["events"][-1]["timestamp"]
        assert_receipt_names_head(service, table_id, receipt)


def test_the_head_is_the_last_event_with_a_receipt_for_it(service):
    table_id = service.open_table("chemin-de-fer", PLAYERS, {})["table_id"]
    result = service.execute(table_id, "draw_seats", "anna", {})
    head = service.head(table_id)
    last = result["events"][-1]
    assert {k: head[k] for k in ("table_id", "version", "digest", "timestamp")} == {
        "table_id": table_id, "version": last["version"], "digest": last["digest"], "timestamp": last["timestamp"],
    }
    assert head["receipt"] == result["receipt"]  # the same head signed again is the same receipt
    assert_receipt_names_head(service, table_id, head["receipt"])


def test_an_idempotent_repeat_returns_the_identical_receipt(service):
    table_id = service.open_table("chemin-de-fer", PLAYERS, {})["table_id"]
    first = service.execute(table_id, "draw_seats", "anna", {}, idempotency_key="k-1")
    state = service.current_state(table_id)
    service.execute(table_id, "shuffle", state["banker"], {})
    again = service.execute(table_id, "draw_seats", "anna", {}, idempotency_key="k-1")
    assert again["receipt"] == first["receipt"]
    assert service.head(table_id)["receipt"] != first["receipt"]  # the table moved on since


def test_two_services_on_one_store_sign_with_one_key(make_service, shared_store):
    one, two = make_service(), make_service()
    table_id = one.open_table("chemin-de-fer", PLAYERS, {})["table_id"]
    assert two.head(table_id)["receipt"] == one.head(table_id)["receipt"]
    assert keys(one) == keys(two)


def test_there_is_no_head_of_a_table_that_does_not_exist(service):
    table_id = service.open_table("chemin-de-fer", PLAYERS, {})["table_id"]
    service.execute(table_id, "draw_seats", "anna", {}, idempotency_key="k")
    for unknown in ("nope", "00000000-0000-0000-0000-000000000000", str(IdempotencyRecord.id_for(table_id, "k"))):
        with pytest.raises(TableNotFound):
            service.head(unknown)
