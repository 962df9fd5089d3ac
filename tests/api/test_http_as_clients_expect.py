"""HTTP as clients expect it: a state carries its version as an ETag that If-Match takes back (and
If-None-Match turns into a 304; on a GET, an If-Match naming another version into a 412), If-Match: * only
asks that the table exist, a 401 names the scheme, a 405 the
methods, every error's `errors` has one shape, a JSON body without its Content-Type is a 415 that says which
header to send, and a count in a message takes the right number."""

from __future__ import annotations

import json
import random
import uuid

import pytest

from api.app import create_app
from service.application import TablesService
from service.config import load
from tests.helpers import Seeds, StepClock, pick


def etag(response):
    return response.headers.get("ETag")


# --- ETag, If-Match, If-None-Match ------------------------------------------------------------------------


def test_every_state_answer_carries_the_version_it_shows_as_its_etag(client, play):
    opened = client.post("/tables", json={"game": "chemin-de-fer", "players": ["anna", "boris"]})
    assert opened.status_code == 201 and etag(opened) == '"1"'
    command = play.command("draw_seats", "anna")
    version = command.json["version"]
    assert version > 1 and etag(command) == f'"{version}"'
    table = f"/tables/{play.table_id}"
    assert etag(client.get(table)) == f'"{version}"'
    assert etag(client.get(f"{table}/state?version=1")) == '"1"'
    assert etag(client.get(f"{table}/state?at=2999-01-01T00:00:00Z")) == f'"{version}"'


def test_the_etag_of_a_state_sent_back_as_if_match_lets_the_command_through_once(client, play):
    tag = etag(client.get(f"/tables/{play.table_id}"))
    first = play.command("draw_seats", "anna", headers={"If-Match": tag})
    assert first.status_code == 200
    second = play.command("shuffle", play.state()["banker"], headers={"If-Match": tag})
    assert second.status_code == 409 and "read the table again" in second.json["message"]


def test_if_none_match_with_the_current_etag_is_a_304_without_a_body_until_the_table_moves(client, play):
    table = f"/tables/{play.table_id}"
    tag = etag(client.get(table))
    unchanged = client.get(table, headers={"If-None-Match": tag})
    assert unchanged.status_code == 304 and unchanged.data == b"" and etag(unchanged) == tag
    assert client.get(table, headers={"If-None-Match": f"W/{tag}"}).status_code == 304
    play.command("draw_seats", "anna")
    moved = client.get(table, headers={"If-None-Match": tag})
    assert moved.status_code == 200 and moved.json["version"] > 1
    past = client.get(f"{table}/state?version=1", headers={"If-None-Match": '"1"'})
    assert past.status_code == 304


@pytest.mark.parametrize("tag,status", [('"1"', 200), ('W/"1"', 200), ("*", 200), ('"2"', 412), ("x", 400)])
def test_if_match_on_a_get_of_a_state_is_read_as_a_command_reads_it_and_another_version_is_a_412(client, table,
                                                                                                 tag, status):
    for path in (f"/tables/{table['table_id']}", f"/tables/{table['table_id']}/state?version=1"):
        response = client.get(path, headers={"If-Match": tag})
        assert response.status_code == status
        if status != 200:
            assert list(response.json["errors"]) == ["If-Match"]


def test_if_match_star_proceeds_on_any_version_of_a_table_and_is_a_404_for_a_missing_one(client, play):
    assert play.command("draw_seats", "anna", headers={"If-Match": "*"}).status_code == 200
    missing = client.post(f"/tables/{uuid.uuid4()}/commands", json={"command": "draw_seats", "player": "anna"},
                          headers={"If-Match": "*"})
    assert missing.status_code == 404 and "No table" in missing.json["message"]


@pytest.mark.parametrize("tag", ['"abc"', "abc", '"1", "2"', 'W/"x"', "**"])
def test_an_if_match_that_is_no_version_is_a_400_naming_the_header_not_a_409(play, tag):
    response = play.command("draw_seats", "anna", headers={"If-Match": tag})
    assert response.status_code == 400
    assert response.json["errors"] == {"If-Match": [response.json["message"]]}
    assert play.state()["version"] == 1


# --- 401, 403, 405 ---------------------------------------------------------------------------------------


@pytest.fixture
def secured(tmp_path):
    settings = load({"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "auth.sqlite"),
                     "ZAMETANO_TOKENS": "operator:op-secret-0f3a9c2e,auditor:au-secret-7b1d4e86"})
    service = TablesService(settings, clock=StepClock(), new_seed=Seeds())
    yield create_app(settings, service=service).test_client()
    service.close()


@pytest.mark.parametrize("authorization", [None, "Bearer nope", "Basic b3A6b3A="])
def test_a_401_names_the_bearer_scheme_in_www_authenticate(secured, authorization):
    headers = {"Authorization": authorization} if authorization else {}
    response = secured.get("/tables", headers=headers)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="zametano"'


def test_a_role_that_may_not_command_stays_a_403_without_a_challenge(secured):
    response = secured.post("/tables", json={"game": "chemin-de-fer", "players": ["a", "b"]},
                            headers={"Authorization": "Bearer au-secret-7b1d4e86"})
    assert response.status_code == 403 and "WWW-Authenticate" not in response.headers


@pytest.mark.parametrize("method,path,allowed", [
    ("DELETE", "/tables/{id}", {"GET", "HEAD", "OPTIONS"}),
    ("PUT", "/tables", {"GET", "HEAD", "OPTIONS", "POST"}),
    ("GET", "/tables/{id}/commands", {"OPTIONS", "POST"}),
])
def test_a_405_lists_the_methods_the_path_takes_in_allow(client, table, method, path, allowed):
    response = client.open(path.format(id=table["table_id"]), method=method)
    assert response.status_code == 405
    assert set(response.headers["Allow"].split(", ")) == allowed
    assert ", ".join(sorted(allowed)) in response.json["message"]


# --- one shape for errors ---------------------------------------------------------------------------------


def refusals(client, table):
    """One answer of each kind of refusal, by where it is made."""
    commands = f"/tables/{table}/commands"
    yield client.post("/tables", data="{", content_type="application/json")  # the input policy: 400
    yield client.post(commands, json={"command": "pass", "player": "a"}, headers={"If-Match": "x"})  # a header
    yield client.get(f"/tables/{uuid.uuid4()}")  # the service: 404
    yield client.get("/no/such/path")  # Flask: 404
    yield client.delete(f"/tables/{table}")  # Flask: 405
    yield client.post(commands, json={"command": "draw_seats", "player": "anna"}, headers={"If-Match": '"9"'})  # 409
    yield client.post("/tables", data="x", content_type="text/plain")  # 415
    yield client.post("/tables", json={"game": "chemin-de-fer", "players": ["anna", 1]})  # marshmallow, nested
    yield client.get("/tables?limit=0")  # marshmallow, a query parameter
    yield client.post("/tables", json={"game": "chemin-de-fer"})  # marshmallow, a missing field
    yield client.post("/tables", json=["not", "an", "object"])  # the policy's 422
    yield client.post(commands, json={"command": "fold", "player": "anna"})  # the rules, no field named
    yield client.post(commands, json={"command": "cut", "player": "anna"})  # the rules, a field named


def test_errors_is_always_an_object_of_lists_of_messages_whoever_refuses(client, table):
    seen = set()
    for response in refusals(client, table["table_id"]):
        body = response.json
        seen.add(body["code"])
        errors = body["errors"]
        assert isinstance(errors, dict), body
        for name, messages in errors.items():
            assert isinstance(name, str) and name not in ("json", "query"), body
            assert isinstance(messages, list) and all(isinstance(m, str) for m in messages), body
    assert seen == {400, 404, 405, 409, 415, 422}


def test_a_nested_field_is_named_by_its_path_and_a_missing_one_by_its_name(client):
    nested = client.post("/tables", json={"game": "chemin-de-fer", "players": ["anna", 1]}).json
    assert nested["errors"] == {"players.1": ["Not a valid string."]}
    assert "players.1: Not a valid string." in nested["message"]
    missing = client.post("/tables", json={"game": "chemin-de-fer"}).json
    assert missing["errors"] == {"players": ["Missing data for required field."]}
    query = client.get("/tables?limit=0").json
    assert list(query["errors"]) == ["limit"]


def test_a_refusal_without_a_field_at_fault_has_empty_errors(client):
    assert client.get(f"/tables/{uuid.uuid4()}").json["errors"] == {}


# --- a body without its Content-Type ---------------------------------------------------------------------


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded"])
def test_valid_json_sent_without_content_type_json_is_a_415_that_names_the_header(play, content_type):
    body = json.dumps({"command": "draw_seats", "player": "anna"})
    headers = {"Content-Type": content_type} if content_type else {}
    response = play.client.post(f"/tables/{play.table_id}/commands", data=body, headers=headers)
    assert response.status_code == 415
    assert "Content-Type: application/json" in response.json["message"]
    assert (content_type or "without a Content-Type") in response.json["message"]
    assert "Missing data" not in response.json["message"]
    assert play.state()["version"] == 1


# --- counts in words -------------------------------------------------------------------------------------


@pytest.mark.parametrize("players,words", [(["anna"], "1 player was listed"), ([], "0 players were listed")])
def test_a_count_of_players_takes_the_right_number(client, players, words):
    response = client.post("/tables", json={"game": "chemin-de-fer", "players": players})
    assert response.status_code == 422 and words in response.json["message"]


def test_a_table_of_one_version_says_it_has_only_that_one(client, table):
    response = client.get(f"/tables/{table['table_id']}/state?version=2")
    assert response.status_code == 404
    assert "has only version 1; there is no version 2" in response.json["message"]


def test_a_round_past_the_finished_ones_is_counted_right_with_none_and_with_one(app, client, table):
    service, table_id = app.extensions["zametano"], table["table_id"]
    none = client.get(f"/tables/{table_id}/rounds/1")
    assert none.status_code == 404 and none.json["message"].endswith("has no finished round 1; it has none yet.")
    rng = random.Random(5)
    while not service.list_rounds(table_id)["rounds"]:
        service.execute(table_id, *pick(service.current_state(table_id), rng))
    one = client.get(f"/tables/{table_id}/rounds/2")
    assert one.status_code == 404 and one.json["message"].endswith("its only finished round is 1.")
