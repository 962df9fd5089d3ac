"""Signed receipts over HTTP: GET /keys, GET /tables/<id>/head, and the receipt of every command."""

from __future__ import annotations

import random

import pytest
from cryptography.exceptions import InvalidSignature

from api.app import create_app
from service.application import TablesService
from service.config import load
from tests.helpers import pick
from tests.signatures import RECEIPT_FIELDS, verify_receipt


def keys(client, headers=None):
    r = client.get("/keys", headers=headers or {})
    assert r.status_code == 200
    return r.json["keys"]


def test_get_keys_lists_the_current_signing_key(client, app):
    (key,) = keys(client)
    assert set(key) == {"key_id", "algorithm", "public_key", "not_before", "not_after"}
    assert key["key_id"] == app.extensions["zametano"].signer.key_id
    assert key["algorithm"] == "Ed25519" and key["not_after"] is None and key["not_before"]


def test_opening_a_table_answers_with_a_receipt_of_its_first_event(client):
    r = client.post("/tables", json={"game": "chemin-de-fer", "players": ["anna", "boris"]})
    receipt = r.json["receipt"]
    (opened,) = client.get(f"/tables/{r.json['table_id']}/events").json["events"]
    assert (receipt["table_id"], receipt["version"], receipt["digest"], receipt["timestamp"]) == (
        r.json["table_id"], 1, opened["digest"], opened["timestamp"]
    )
    verify_receipt(receipt, keys(client))


def test_every_command_response_carries_a_receipt_of_its_new_head_that_verifies(client, play):
    rng = random.Random(11)
    trusted = keys(client)
    for _ in range(60):
        command, player, args = pick(play.state(), rng)
        r = play.command(command, player, **args)
        assert r.status_code == 200, r.json
        body = r.json
        receipt = body["receipt"]
        assert receipt["table_id"] == play.table_id
        assert (receipt["version"], receipt["digest"]) == (body["version"], body["digest"])
        assert receipt["timestamp"] == body["events"][-1]["timestamp"]
        verify_receipt(receipt, trusted)


def test_a_receipt_altered_in_any_field_no_longer_verifies(client, play):
    receipt = play.command("draw_seats", "anna").json["receipt"]
    for field, value in [("version", receipt["version"] - 1), ("digest", "0" * 64), ("table_id", "x"),
                         ("timestamp", "2026-01-01T00:00:00.000000+00:00")]:
        with pytest.raises(InvalidSignature):
            verify_receipt({**receipt, field: value}, keys(client))


def test_get_head_is_the_latest_event_with_a_receipt_that_verifies(client, play):
    play.command("draw_seats", "anna")
    head = client.get(f"/tables/{play.table_id}/head")
    assert head.status_code == 200
    body = head.json
    last = client.get(f"/tables/{play.table_id}/events", query_string={"limit": 1000}).json["events"][-1]
    assert list(body) == ["table_id", "version", "digest", "timestamp", "receipt"]
    assert (body["table_id"], body["version"], body["digest"], body["timestamp"]) == (
        play.table_id, last["version"], last["digest"], last["timestamp"]
    )
    assert {k: body["receipt"][k] for k in ("table_id", "version", "digest", "timestamp")} == {
        k: body[k] for k in ("table_id", "version", "digest", "timestamp")
    }
    verify_receipt(body["receipt"], keys(client))


def test_the_head_of_an_unknown_table_is_a_404(client):
    r = client.get("/tables/00000000-0000-0000-0000-000000000000/head")
    assert r.status_code == 404 and "No table" in r.json["message"]


def test_an_idempotent_repeat_returns_the_identical_receipt(play):
    first = play.command("draw_seats", "anna", headers={"Idempotency-Key": "seat-1"})
    again = play.command("draw_seats", "anna", headers={"Idempotency-Key": "seat-1"})
    assert first.status_code == again.status_code == 200
    assert again.json["receipt"] == first.json["receipt"]
    assert again.json == first.json


def test_a_receipt_holds_the_six_fields_and_nothing_else_wherever_it_appears(client, play):
    receipts = [
        client.post("/tables", json={"game": "chemin-de-fer", "players": ["a", "b"]}).json["receipt"],
        play.command("draw_seats", "anna").json["receipt"],
        client.get(f"/tables/{play.table_id}/head").json["receipt"],
    ]
    for receipt in receipts:
        assert set(receipt) == RECEIPT_FIELDS
        assert isinstance(receipt["version"], int) and all(isinstance(receipt[k], str) for k in RECEIPT_FIELDS - {"version"})


def test_the_openapi_document_describes_keys_head_and_receipts(client):
    spec = client.get("/openapi.json").json
    assert "/keys" in spec["paths"] and "/tables/{table_id}/head" in spec["paths"]
    assert set(spec["components"]["schemas"]["Receipt"]["properties"]) == RECEIPT_FIELDS


@pytest.fixture
def secured(tmp_path):
    settings = load({
        "PERSISTENCE_MODULE": "eventsourcing.sqlite",
        "SQLITE_DBNAME": str(tmp_path / "secured.sqlite"),
        "ZAMETANO_DATA_DIR": str(tmp_path),
        "ZAMETANO_TOKENS": "operator:op-secret-0f3a9c2e,auditor:au-secret-7b1d4e86",
    })
    service = TablesService(settings)
    yield create_app(settings, service=service).test_client()
    service.close()


def test_keys_need_no_token_while_the_head_needs_a_reader(secured):
    assert secured.get("/keys").status_code == 200
    opened = secured.post("/tables", json={"game": "chemin-de-fer", "players": ["a", "b"]},
                          headers={"Authorization": "Bearer op-secret-0f3a9c2e"})
    table_id = opened.json["table_id"]
    assert secured.get(f"/tables/{table_id}/head").status_code == 401
    for token in ("au-secret-7b1d4e86", "op-secret-0f3a9c2e"):
        head = secured.get(f"/tables/{table_id}/head", headers={"Authorization": f"Bearer {token}"})
        assert head.status_code == 200 and head.json["receipt"] == opened.json["receipt"]
    verify_receipt(opened.json["receipt"], keys(secured))
