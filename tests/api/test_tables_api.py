"""The HTTP contract of docs/api.md: paths, bodies, status codes, the one error body."""

from __future__ import annotations

import json
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ERROR_KEYS = {"code", "status", "message"}


def assert_error(response, code, *words):
    assert response.status_code == code, response.json
    body = response.json
    assert ERROR_KEYS <= set(body) and body["code"] == code
    for word in words:
        assert word in body["message"], body["message"]
    return body


def test_opening_a_table_answers_201_with_its_location_and_state(client):
    r = client.post("/tables", json={"game": "chemin-de-fer", "players": ["anna", "boris"], "rules": {"decks": 4}})
    assert r.status_code == 201
    assert r.headers["Location"] == f"/tables/{r.json['table_id']}"
    state = r.json
    for key in ("table_id", "game", "version", "digest", "rules", "players", "seats", "banker", "phase",
                "balances", "round", "expects", "bank", "stakes", "punter", "hands", "shoe"):
        assert key in state
    assert state["rules"]["decks"] == 4 and state["shoe"] == {"number": None, "dealt": 0, "remaining": 0}


@pytest.mark.parametrize(
    "body,words",
    [
        ({"game": "poker", "players": ["a", "b"]}, ["game"]),
        ({"game": "chemin-de-fer", "players": ["a"]}, ["2 to 12 players"]),
        ({"game": "chemin-de-fer", "players": ["a", "a"]}, ["listed twice: a"]),
        ({"game": "chemin-de-fer", "players": ["a", "house"]}, ["reserved"]),
        ({"game": "chemin-de-fer", "players": ["anna", "аnna"]}, ["'anna' and 'аnna' look alike", "CYRILLIC"]),
        ({"game": "card-lottery", "players": ["Anna", "boris", "anna"], "banker": "boris", "dealer": "Anna"},
         ["'Anna' and 'anna' are one name"]),
        ({"game": "punto-banco", "players": ["marta", "ﬁona", "fiona"], "croupier": "marta"}, ["'ﬁona' and 'fiona'"]),
        ({"game": "chemin-de-fer", "players": ["a", "b"], "rules": {"stop_card": 3}}, ["stop_card", "6 to 52"]),
        ({"game": "chemin-de-fer", "players": ["a", "b"], "rules": {"jokers": True}}, ["Unknown rules option 'jokers'"]),
        ({"game": "chemin-de-fer", "players": ["a", "b"], "banker": "a"}, ["not an opening field of Chemin de fer"]),
        ({"players": ["a", "b"]}, ["game"]),
        ({"game": "chemin-de-fer", "players": "anna"}, ["players"]),
    ],
)
def test_a_table_the_rules_refuse_is_a_422_saying_what_is_allowed(client, body, words):
    assert_error(client.post("/tables", json=body), 422, *words)


def test_the_current_state_of_an_unknown_table_is_a_404(client):
    assert_error(client.get(f"/tables/{uuid.uuid4()}"), 404, "No table")
    assert_error(client.get("/tables/zzz/events"), 404, "No table")
    assert_error(client.get("/no/such/path"), 404)


def test_a_command_returns_the_receipt_new_head_digest_events_and_state(play):
    r = play.command("draw_seats", "boris")
    assert r.status_code == 200
    body = r.json
    assert body["version"] == body["events"][-1]["version"] == body["state"]["version"]
    assert body["digest"] == body["events"][-1]["digest"] == body["state"]["digest"]
    assert [e["type"] for e in body["events"]][-2:] == ["SeatsDrawn", "ShoeRevealed"]
    assert set(body["events"][0]) >= {"version", "type", "timestamp", "actor", "data", "digest"}


def test_malformed_json_is_a_400_and_appends_nothing(client, play, table):
    r = client.post(f"/tables/{table['table_id']}/commands", data="{not json", content_type="application/json")
    assert_error(r, 400, "not valid JSON")
    assert play.state()["version"] == 1


@pytest.mark.parametrize(
    "fields,code,words",
    [
        ({"command": "place_stake", "player": "@banker", "amount": 10}, 422, ["holds the bank"]),
        ({"command": "place_stake", "player": "zoya", "amount": 10}, 422, ["not a player"]),
        ({"command": "place_stake", "player": "@second", "amount": 10}, 422, ["not", "turn", "place_stake by"]),
        ({"command": "place_stake", "player": "@first", "amount": 101}, 422, ["largest stake allowed is 100"]),
        ({"command": "place_stake", "player": "@first", "amount": 2.5}, 422, ["amount"]),
        ({"command": "place_stake", "player": "@first"}, 422, ["needs the field 'amount'"]),
        ({"command": "place_stake", "player": "@first", "amount": 5, "tip": 1}, 422, ["tip"]),
        ({"command": "deal", "player": "@banker"}, 422, ["waits for place_stake"]),
        ({"command": "reveal", "player": "@banker"}, 422, ["not a command of chemin-de-fer"]),
        ({"player": "@first"}, 422, ["command"]),
    ],
)
def test_illegal_commands_get_a_422_that_says_why_and_append_nothing(play, fields, code, words):
    state = play.to_stakes(bank=100)
    names = {"@banker": state["banker"], "@first": state["seats"][1], "@second": state["seats"][2]}
    fields = {k: names.get(v, v) if isinstance(v, str) else v for k, v in fields.items()}
    command = fields.pop("command", None)
    r = play.client.post(f"/tables/{play.table_id}/commands", json={**({"command": command} if command else {}), **fields})
    assert_error(r, code, *words)
    assert play.state() == state


def test_a_stake_above_the_bank_names_the_largest_allowed_in_the_body(play):
    state = play.to_stakes(bank=80)
    body = assert_error(play.command("place_stake", state["seats"][1], amount=81), 422)
    assert body["max_allowed"] == 80


def test_a_command_to_an_unknown_table_is_a_404(client):
    assert_error(client.post(f"/tables/{uuid.uuid4()}/commands", json={"command": "deal", "player": "a"}), 404)


def test_if_match_with_a_stale_version_is_a_409_and_the_head_is_accepted(play):
    assert_error(play.command("draw_seats", "anna", headers={"If-Match": '"7"'}), 409,
                 "If-Match names version 7, but the table is at version 1")
    assert play.command("draw_seats", "anna", headers={"If-Match": '"1"'}).status_code == 200


@pytest.mark.parametrize("tag", ['W/"1"', "1", "*", ' "1" '])
def test_if_match_takes_a_weak_tag_a_bare_number_or_a_star(play, tag):
    assert play.command("draw_seats", "anna", headers={"If-Match": tag}).status_code == 200


@pytest.mark.parametrize("tag", ["x", '"1", "2"', '"-1"', '"1.0"', 'W/"', '"99999999999999999999"', '"1'])
def test_an_if_match_that_names_no_single_version_is_a_400_and_changes_nothing(play, tag):
    body = assert_error(play.command("draw_seats", "anna", headers={"If-Match": tag}), 400, 'e.g. "7" or W/"7"')
    assert list(body["errors"]) == ["If-Match"]
    assert play.state()["version"] == 1


def test_a_repeated_idempotency_key_returns_the_first_response(play):
    first = play.command("draw_seats", "anna", headers={"Idempotency-Key": "abc"})
    again = play.command("draw_seats", "anna", headers={"Idempotency-Key": "abc"})
    assert again.status_code == 200 and again.json == first.json
    assert play.state()["version"] == first.json["version"]
    assert_error(play.command("draw_seats", "vera", headers={"Idempotency-Key": "abc"}), 422, "different request body")


def test_the_state_at_a_version_or_a_moment_mirrors_the_table_then(play):
    first = play.command("draw_seats", "anna").json
    play.command("shuffle", first["state"]["banker"])
    r = play.client.get(f"/tables/{play.table_id}/state?version={first['version']}")
    assert r.status_code == 200
    body = r.json
    assert body.pop("as_of") == {"version": first["version"], "timestamp": first["events"][-1]["timestamp"]}
    assert body == first["state"]
    at = first["events"][-1]["timestamp"]
    r = play.client.get(f"/tables/{play.table_id}/state", query_string={"at": at})
    assert r.json["version"] == first["version"]


@pytest.mark.parametrize(
    "query,code,words",
    [
        ("version=99", 404, ["no version 99"]),
        ("at=2001-01-01T00:00:00%2B00:00", 404, ["did not exist"]),
        ("version=1&at=2030-01-01T00:00:00%2B00:00", 422, ["exactly one"]),
        ("", 422, ["exactly one"]),
        ("version=abc", 422, ["version"]),
        ("at=yesterday", 422, ["at"]),
        ("at=2030-01-01T00:00:00", 422, ["at"]),
    ],
)
def test_bad_or_out_of_range_history_queries_are_refused_clearly(play, query, code, words):
    assert_error(play.client.get(f"/tables/{play.table_id}/state?{query}"), code, *words)


def test_events_page_by_after_and_limit_and_stream_as_json_lines(play):
    play.to_stakes()
    page = play.client.get(f"/tables/{play.table_id}/events?limit=3").json
    assert [e["version"] for e in page["events"]] == [1, 2, 3] and page["next_after"] == 3
    stream = play.client.get(f"/tables/{play.table_id}/events?after=2", headers={"Accept": "application/x-ndjson"})
    assert stream.status_code == 200 and stream.mimetype == "application/x-ndjson"
    lines = [json.loads(line) for line in stream.data.decode().splitlines()]
    assert lines[0]["version"] == 3 and lines[-1]["version"] == play.state()["version"]
    assert_error(play.client.get(f"/tables/{uuid.uuid4()}/events", headers={"Accept": "application/x-ndjson"}), 404)


def test_no_response_shows_an_unrevealed_seed(play, app):
    play.to_stakes()
    service = app.extensions["zametano"]
    table = service.repository.get(uuid.UUID(play.table_id))
    seed = table.shoe["seed"]
    assert not table.shoe["revealed"]
    for path in ("", "/events?limit=1000", "/state?version=5"):
        assert seed not in play.client.get(f"/tables/{play.table_id}{path}").data.decode()
    assert seed not in play.client.get(
        f"/tables/{play.table_id}/events", headers={"Accept": "application/x-ndjson"}
    ).data.decode()


def test_the_openapi_document_describes_every_endpoint(client):
    spec = client.get("/openapi.json").json
    for path in ("/tables", "/tables/{table_id}", "/tables/{table_id}/state", "/tables/{table_id}/commands",
                 "/tables/{table_id}/events", "/healthz", "/readyz", "/metrics"):
        assert path in spec["paths"], path
    assert spec["paths"]["/tables/{table_id}/commands"]["post"]["description"]


def test_operations_endpoints_answer(client, play):
    play.command("draw_seats", "anna")
    assert client.get("/healthz").json == {"status": "ok"}
    ready = client.get("/readyz").json
    assert ready["status"] == "ready" and ready["read_model"]["head"] >= 2
    assert set(ready["read_model"]) == {"position", "head", "lag", "following", "indexing"}
    text = client.get("/metrics").data.decode()
    assert 'zametano_command_duration_seconds_count{command="draw_seats",outcome="ok"} ' in text


def test_a_method_the_path_does_not_take_is_a_405(client, table):
    assert_error(client.delete(f"/tables/{table['table_id']}"), 405, "allowed")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.dictionaries(
    st.sampled_from(["command", "player", "amount", "position", "cards", "card", "deck", "amounts", "x"]),
    json_values | st.sampled_from(["draw_seats", "cut", "place_stake", "anna", "boris"]),
))
def test_no_body_a_client_sends_gets_a_500(client, table, body):
    r = client.post(f"/tables/{table['table_id']}/commands", json=body)
    assert r.status_code < 500, r.data
    assert ERROR_KEYS <= set(r.json) or r.status_code == 200


def test_a_card_lottery_table_opens_with_banker_dealer_and_holders(client):
    body = {"game": "card-lottery", "players": ["olga", "ivan", "anna"], "banker": "olga", "dealer": "ivan",
            "rules": {"stage2": "tricks"}}
    r = client.post("/tables", json=body)
    assert r.status_code == 201
    state = r.json
    assert state["banker"] == "olga" and state["dealer"] == "ivan" and state["holders"] == ["anna"]
    deck = {"kind": "choice", "optional": False}
    assert state["expects"] == [
        {"command": "shuffle", "player": "olga", "fields": {"deck": {**deck, "choices": ["banker"]}}, "deck": "banker"},
        {"command": "shuffle", "player": "ivan", "fields": {"deck": {**deck, "choices": ["dealer"]}}, "deck": "dealer"},
    ]
    assert state["pot"] == 0 and state["kitty"] == 0 and state["stage"] == 1
    assert_error(client.post("/tables", json={**body, "dealer": "zoya"}), 422, "not among the players")
    assert_error(client.post("/tables", json={**body, "rules": {"stage2": "poker"}}), 422, "'beating' or 'tricks'")


def test_rounds_round_audits_and_verify_answer_over_http(client, play):
    import random

    from tests.helpers import pick

    rng = random.Random(2)
    for _ in range(120):
        name, player, fields = pick(play.state(), rng)
        play.command(name, player, **fields)
    rounds = play.client.get(f"/tables/{play.table_id}/rounds?limit=2").json
    assert [r["round"] for r in rounds["rounds"]] == [1, 2] and rounds["next_cursor"] == "2"
    audit = play.client.get(f"/tables/{play.table_id}/rounds/1").json
    assert set(audit) >= {"round", "events", "state_before", "state_after", "cards", "decisions", "payments", "checks"}
    assert audit["checks"]["chain"] is True and audit["checks"]["rules"] is True
    report = play.client.get(f"/tables/{play.table_id}/verify").json
    assert report["ok"] is True and report["problems"] == []
    assert_error(play.client.get(f"/tables/{play.table_id}/rounds/9999"), 404, "no finished round 9999")
    assert_error(play.client.get(f"/tables/{play.table_id}/rounds?cursor=abc"), 422, "next_cursor")
    listing = client.get("/tables?game=chemin-de-fer").json
    assert [t["table_id"] for t in listing["tables"]] == [play.table_id]
    assert client.get("/tables?game=card-lottery").json["tables"] == []


@pytest.fixture
def lottery_in_stage_2(client):
    import random

    from tests.helpers import pick

    body = {"game": "card-lottery", "players": ["olga", "ivan"] + [f"h{i}" for i in range(12)],
            "banker": "olga", "dealer": "ivan"}
    state = client.post("/tables", json=body).json
    rng = random.Random(4)
    while state["stage"] == 1:  # 12 holders: one stage-1 round
        name, player, fields = pick(state, rng)
        state = client.post(f"/tables/{state['table_id']}/commands", json={"command": name, "player": player, **fields}).json["state"]
    return state


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.dictionaries(
    st.sampled_from(["command", "player", "cards", "card", "deck", "amounts", "amount"]),
    json_values | st.sampled_from(["lead", "beat", "take", "play", "distribute", "h0", "h1", "olga", "Ts", "2c"])
    | st.lists(st.sampled_from(["Ts", "2c", "Ah", "Ah", "zz", 5]), max_size=4),
))
def test_no_body_sent_to_a_card_lottery_in_stage_2_gets_a_500(client, lottery_in_stage_2, body):
    r = client.post(f"/tables/{lottery_in_stage_2['table_id']}/commands", json=body)
    assert r.status_code < 500, r.data


@pytest.mark.parametrize(
    "path,code",
    [
        ("/rounds/119140875472865214464", 404),
        ("/events?after=119140875472865214464", 200),
        ("/state?version=119140875472865214464", 404),
        ("/rounds?cursor=119140875472865214464", 422),
    ],
)
def test_numbers_too_large_for_any_table_are_answered_not_crashed_on(client, table, path, code):
    r = client.get(f"/tables/{table['table_id']}{path}")
    assert r.status_code == code, r.data
    r = client.get(f"/tables/{table['table_id']}{path.split('?')[0]}?{path.split('?')[1]}", headers={"Accept": "application/x-ndjson"}) if "?" in path else r
    assert r.status_code < 500
    assert client.get("/tables?cursor=119140875472865214464").status_code == 422


def test_a_finished_rounds_audit_carries_a_digest_of_its_bytes_and_is_a_304_while_it_is_unchanged(client, play):
    import hashlib
    import random
    import re

    from tests.helpers import pick

    rng = random.Random(2)
    while play.state()["round"] < 2:
        name, player, fields = pick(play.state(), rng)
        play.command(name, player, **fields)
    first = play.client.get(f"/tables/{play.table_id}/rounds/1")
    tag = first.headers["ETag"]
    assert first.status_code == 200 and re.fullmatch(r'"[0-9a-f]{32}"', tag)
    assert tag.strip('"') == hashlib.sha256(first.get_data()).hexdigest()[:32]

    again = play.client.get(f"/tables/{play.table_id}/rounds/1", headers={"If-None-Match": tag})
    assert again.status_code == 304 and again.get_data() == b"" and again.headers["ETag"] == tag
    other = play.client.get(f"/tables/{play.table_id}/rounds/1", headers={"If-None-Match": '"0123"'})
    assert other.status_code == 200 and other.get_data() == first.get_data()
