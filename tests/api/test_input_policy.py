"""The input policy at the edge (docs/api.md, "Input policy and limits"): strings, numbers, moments, bodies."""

from __future__ import annotations

import io
import json
import unicodedata

import pytest
from marshmallow import ValidationError

from api.app import create_app
from api.policy import MAX_DEPTH, BodyRefused, clean_text, loads, nesting_depth
from service.application import TablesService
from service.config import load
from tests.helpers import Seeds, StepClock

ERROR_KEYS = {"code", "status", "message"}


def assert_error(response, code, *words):
    assert response.status_code == code, response.data
    body = response.json
    assert ERROR_KEYS <= set(body) and body["code"] == code, body
    for word in words:
        assert word in body["message"], body["message"]
    return body


def post_raw(client, path, text, content_type="application/json"):
    """A body exactly as written: the test client's json= cannot send lone surrogates or NaN."""
    return client.post(path, data=text.encode("utf-8", "surrogatepass"), content_type=content_type)


OPEN = "/tables"
REFUSED = [
    ("\x00", "U+0000"),
    ("\n", "U+000A"),
    ("\x7f", "U+007F"),
    ("\u202e", "RIGHT-TO-LEFT OVERRIDE"),
    ("\u202a", "LEFT-TO-RIGHT EMBEDDING"),
    ("\u2066", "LEFT-TO-RIGHT ISOLATE"),
    ("\u2069", "POP DIRECTIONAL ISOLATE"),
    ("\u200e", "LEFT-TO-RIGHT MARK"),
    ("\u200f", "RIGHT-TO-LEFT MARK"),
    ("\u061c", "ARABIC LETTER MARK"),
    ("\u200b", "ZERO WIDTH SPACE"),
    ("\u200d", "ZERO WIDTH JOINER"),
    ("\u2060", "WORD JOINER"),
    ("\ufeff", "ZERO WIDTH NO-BREAK SPACE"),
    ("\u00ad", "SOFT HYPHEN"),
    ("\u2028", "LINE SEPARATOR"),
    ("\ue000", "U+E000"),
    ("\ud800", "U+D800"),
    ("\udfff", "lone surrogate"),
]


def names(errors, field):
    """Whether ``errors`` names ``field`` or a part of it (``cards.1``, ``rules.draw_rule``)."""
    return any(key == field or key.startswith(field + ".") for key in errors)


# --- strings -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("char,named", REFUSED)
def test_a_player_name_holding_a_refused_character_is_a_422_naming_the_field_and_the_character(client, char, named):
    body = json.dumps({"game": "chemin-de-fer", "players": ["anna", f"bo{char}ris", "vera"]})
    r = assert_error(post_raw(client, OPEN, body), 422, "players", named, "letters, marks, digits")
    assert "character 3" in r["errors"]["players.1"][0]
    assert client.get("/tables").json["tables"] == []  # nothing was opened


def test_a_nul_in_a_name_never_reaches_the_store(client):
    r = client.post(OPEN, json={"game": "chemin-de-fer", "players": ["a\x00", "b", "c"]})
    assert_error(r, 422, "U+0000")
    assert client.get("/tables").json == {"tables": [], "next_cursor": None}


@pytest.mark.postgres
def test_on_postgresql_a_nul_in_a_name_is_refused_and_the_tables_still_list(postgres_env):
    settings = load(postgres_env)
    service = TablesService(settings, clock=StepClock(), new_seed=Seeds())
    try:
        client = create_app(settings, service=service).test_client()
        assert_error(client.post(OPEN, json={"game": "chemin-de-fer", "players": ["a\x00", "b", "c"]}), 422, "U+0000")
        assert client.post(OPEN, json={"game": "chemin-de-fer", "players": ["a", "b", "c"]}).status_code == 201
        listing = client.get("/tables")
        assert listing.status_code == 200 and [t["players"] for t in listing.json["tables"]] == [["a", "b", "c"]]
    finally:
        service.close()


@pytest.mark.parametrize("field", ["banker", "dealer"])
def test_banker_and_dealer_are_names_under_the_policy(client, field):
    body = {"game": "card-lottery", "players": ["olga", "ivan", "anna"], "banker": "olga", "dealer": "ivan"}
    body[field] = "olga\u202e"
    r = assert_error(client.post(OPEN, json=body), 422, field)
    assert list(r["errors"]) == [field]


@pytest.mark.parametrize("char,named", [("\ud800", "U+D800"), ("\x00", "U+0000"), ("\u202e", "OVERRIDE")])
def test_command_and_player_and_every_string_argument_are_under_the_policy(client, table, char, named):
    path = f"/tables/{table['table_id']}/commands"
    for field, body in [
        ("command", {"command": f"cut{char}", "player": "anna"}),
        ("player", {"command": "draw_seats", "player": f"anna{char}"}),
        ("deck", {"command": "shuffle", "player": "anna", "deck": f"banker{char}"}),
        ("card", {"command": "play", "player": "anna", "card": f"T{char}"}),
        ("cards", {"command": "lead", "player": "anna", "cards": ["Ts", f"2{char}"]}),
    ]:
        r = assert_error(post_raw(client, path, json.dumps(body)), 422, field, named)
        assert names(r["errors"], field), r["errors"]
    assert client.get(f"/tables/{table['table_id']}").json["version"] == 1


@pytest.mark.parametrize("rules", [{"draw_rule": "classic\x00"}, {"draw\u202erule": "classic"}, {"decks": ["\ud800"]}])
def test_strings_inside_rules_keys_and_values_are_under_the_policy(client, rules):
    body = json.dumps({"game": "chemin-de-fer", "players": ["anna", "boris"], "rules": rules})
    r = assert_error(post_raw(client, OPEN, body), 422, "rules")
    assert names(r["errors"], "rules"), r["errors"]


def test_huge_numbers_inside_rules_are_refused_by_the_policy(client):
    body = '{"game": "chemin-de-fer", "players": ["anna", "boris"], "rules": {"decks": 1' + "0" * 400 + "}}"
    assert_error(post_raw(client, OPEN, body), 422, "rules", "Whole numbers are from")


@pytest.mark.parametrize("query", ["cursor=1%00", "cursor=%E2%80%AE1", "game=chemin-de-fer%00", "cursor=" + "1" * 65])
def test_query_strings_are_under_the_policy(client, table, query):
    assert_error(client.get(f"/tables?{query}"), 422, query.split("=")[0])
    assert_error(client.get(f"/tables/{table['table_id']}/rounds?{query.replace('game', 'cursor')}"), 422, "cursor")


def test_names_are_normalised_to_nfc_so_two_spellings_of_one_name_are_one_player(client):
    composed, decomposed = "Zo\u00eb", "Zoe\u0308"
    assert composed != decomposed and unicodedata.normalize("NFC", decomposed) == composed
    r = client.post(OPEN, json={"game": "chemin-de-fer", "players": [decomposed, "anna"]})
    assert r.status_code == 201 and r.json["players"] == [composed, "anna"]
    r = client.post(f"/tables/{r.json['table_id']}/commands", json={"command": "draw_seats", "player": decomposed})
    assert r.status_code == 200, r.json  # the decomposed spelling names the same player
    assert composed in r.json["state"]["seats"]
    assert_error(client.post(OPEN, json={"game": "chemin-de-fer", "players": [composed, decomposed]}), 422, "listed twice")


def test_names_allow_letters_of_any_script_marks_digits_punctuation_symbols_and_inner_spaces(client):
    players = ["Анна", "李 雷", "O'Brien-2", "Zoë ♠", "\u0915\u094d\u0937"]
    r = client.post(OPEN, json={"game": "chemin-de-fer", "players": players})
    assert r.status_code == 201, r.json
    assert r.json["players"] == players


def test_a_name_longer_than_the_domain_allows_is_refused_at_the_edge_with_the_same_limit(client):
    assert client.post(OPEN, json={"game": "chemin-de-fer", "players": ["a" * 40, "b"]}).status_code == 201
    assert_error(client.post(OPEN, json={"game": "chemin-de-fer", "players": ["a" * 41, "b"]}), 422, "At most 40")


def test_other_strings_are_at_most_64_characters(client, table):
    r = client.post(f"/tables/{table['table_id']}/commands", json={"command": "x" * 65, "player": "anna"})
    assert_error(r, 422, "command", "At most 64")


def test_clean_text_says_what_is_allowed_and_where_the_refused_character_is():
    assert clean_text("Zoe\u0308") == "Zo\u00eb"
    with pytest.raises(ValidationError, match=r"character 4 is U\+202E RIGHT-TO-LEFT OVERRIDE"):
        clean_text("abc\u202edef")
    with pytest.raises(ValidationError, match="lone surrogate"):
        clean_text("a\ud800")


def test_the_openapi_document_states_the_string_limits(client):
    spec = client.get("/openapi.json").json
    schema = spec["components"]["schemas"]["OpenTableArgs"]["properties"]
    assert schema["players"]["items"]["maxLength"] == 40 and schema["game"]["maxLength"] == 64


# --- moments and numbers in the query ---------------------------------------------------------------


@pytest.mark.parametrize(
    "at,code",
    [
        ("0001-01-01T00:00:00%2B01:00", 422),  # before year 1 in UTC: no such moment
        ("9999-12-31T23:59:59-01:00", 422),  # after year 9999 in UTC
        ("0001-01-01T00:00:00Z", 404),  # before the table existed
        ("0001-01-01T00:00:00-23:59", 404),
        ("9999-12-31T23:59:59.999999Z", 200),  # after the last event: the current state
        ("9999-12-31T23:59:59%2B23:59", 200),
        ("2026-11-29T20:15:03%2B24:00", 422),  # offsets are less than a day
        ("2026-11-29T20:15:03%2B99:99", 422),
        ("2026-11-29T20:15:03", 422),  # no offset
        ("10000-01-01T00:00:00Z", 422),
        ("-0001-01-01T00:00:00Z", 422),
    ],
)
def test_a_moment_outside_what_a_table_can_have_is_a_4xx_never_a_500(client, table, at, code):
    r = client.get(f"/tables/{table['table_id']}/state?at={at}")
    assert r.status_code == code, r.json
    if code != 200:
        assert_error(r, code)


@pytest.mark.parametrize(
    "path",
    [
        "/state?version=0",
        "/state?version=-1",
        "/state?version=1.5",
        "/state?version=1" + "0" * 5000,
        "/events?after=-1",
        "/events?limit=0",
        "/events?limit=1001",
        "/events?limit=" + "9" * 30,
        "/events?after=1e3",
        "/rounds?limit=-5",
        "/rounds?cursor=-1",
    ],
)
def test_numbers_out_of_range_in_the_query_are_a_422(client, table, path):
    assert_error(client.get(f"/tables/{table['table_id']}{path}"), 422)


def test_listing_tables_refuses_limits_out_of_range(client):
    for query in ("limit=0", "limit=1001", "limit=" + "9" * 5000, "cursor=" + "9" * 40):
        assert_error(client.get(f"/tables?{query}"), 422)


# --- bodies -----------------------------------------------------------------------------------------


def test_a_body_nested_a_thousand_levels_is_a_400_naming_the_limit_not_a_recursion_error(client, table):
    for path in (OPEN, f"/tables/{table['table_id']}/commands", "/nowhere"):
        for text in ("[" * 1000 + "]" * 1000, '{"a":' * 1000 + "1" + "}" * 1000, "[" * 60_000):
            assert_error(post_raw(client, path, text), 400, f"at most {MAX_DEPTH}")


def test_nesting_up_to_the_limit_reaches_the_schema_and_brackets_inside_strings_do_not_count(client):
    deep = "[" * (MAX_DEPTH - 2) + "]" * (MAX_DEPTH - 2)  # inside the body and its rules: MAX_DEPTH in all
    r = post_raw(client, OPEN, '{"game": "chemin-de-fer", "players": ["anna", "boris"], "rules": {"decks": ' + deep + "}}")
    assert_error(r, 422, "decks")  # the rules refuse it, the parser did not
    r = post_raw(client, OPEN, '{"game": "chemin-de-fer", "players": ["anna", "boris"], "rules": {"decks": [' + deep + "]}}")
    assert_error(r, 400, f"at most {MAX_DEPTH}")
    name = "[{" * 20
    r = client.post(OPEN, json={"game": "chemin-de-fer", "players": [name, "anna"]})
    assert r.status_code == 201 and r.json["players"][0] == name


def test_nesting_depth_is_measured_outside_strings_and_stops_past_the_limit():
    assert nesting_depth('{"a": [1, {"b": "]]]]"}]}') == 3
    assert nesting_depth('"[[[" ') == 0
    assert nesting_depth('["\\"[[["]') == 1
    assert nesting_depth("[" * 10_000, limit=32) == 33
    assert nesting_depth('["\\\\", "\\"]"]') == 1  # escaped backslashes and quotes end no string early
    # Quotes and backslashes by the ten thousand: one pass, never a rescan from every quote.
    assert nesting_depth('["' + '\\"' * 30_000 + '"]') == 1
    assert nesting_depth('"' + '\\"' * 30_000) == 0


@pytest.mark.parametrize(
    "text,words",
    [
        ('{"command": "cut", "player": "anna", "position": NaN}', ["NaN"]),
        ('{"command": "cut", "player": "anna", "position": Infinity}', ["Infinity"]),
        ('{"command": "cut", "player": "anna", "position": -Infinity}', ["-Infinity"]),
        ('{"command": "cut", "player": "anna", "player": "boris"}', ['"player" twice']),
        ('{"command": "cut", "player": "anna", "position": 1' + "0" * 5000 + "}", ["at most 1000"]),
        ('{"command": "cut",', ["not valid JSON"]),
        ("\ufeff{}", ["not valid JSON"]),
    ],
)
def test_bodies_json_cannot_represent_or_python_cannot_parse_safely_are_a_400(client, table, text, words):
    assert_error(post_raw(client, f"/tables/{table['table_id']}/commands", text), 400, *words)


def test_a_body_that_is_not_utf_8_is_a_400(client, table):
    r = client.post(f"/tables/{table['table_id']}/commands", data=b'{"command": "\xff"}', content_type="application/json")
    assert_error(r, 400, "UTF-8")


@pytest.mark.parametrize(
    "text,field",
    [
        ('{"command": "cut", "player": "anna", "position": 1' + "0" * 400 + "}", "position"),
        ('{"command": "cut", "player": "anna", "position": 1e400}', "position"),
        ('{"command": "cut", "player": "anna", "position": 2.0}', "position"),
        ('{"command": "cut", "player": "anna", "position": "7"}', "position"),
        ('{"command": "cut", "player": "anna", "position": true}', "position"),
        ('{"command": "post_bank", "player": "anna", "amount": 9007199254740992}', "amount"),
        ('{"command": "distribute", "player": "anna", "amounts": [1, -9007199254740992]}', "amounts"),
        ('{"command": 7, "player": "anna"}', "command"),
    ],
)
def test_numbers_of_the_wrong_kind_or_size_are_a_422_naming_the_field(client, table, text, field):
    r = assert_error(post_raw(client, f"/tables/{table['table_id']}/commands", text), 422, field)
    assert names(r["errors"], field), r["errors"]


@pytest.mark.parametrize("text,kind", [("[1]", "an array"), ('"x"', "a string"), ("7", "a number"), ("null", "null"), ("true", "true or false")])
def test_a_body_that_is_json_but_not_an_object_is_a_422(client, table, text, kind):
    for path in (OPEN, f"/tables/{table['table_id']}/commands"):
        r = assert_error(post_raw(client, path, text), 422, "JSON object", kind)
        assert r["errors"] == {"body": [r["message"]]}


def test_a_body_sent_as_another_content_type_is_a_415(client):
    r = post_raw(client, OPEN, '{"game": "chemin-de-fer", "players": ["a", "b"]}', content_type="text/plain")
    assert_error(r, 415, "application/json")


def test_an_empty_body_is_answered_with_the_fields_it_lacks(client):
    r = assert_error(client.post(OPEN, data=b"", content_type="application/json"), 422, "game")
    assert "players" in r["errors"]


def test_strict_loads_reads_ordinary_json_unchanged():
    text = '{"a": [1, -2, 3.5, "x", null, true, {"b": {}}], "c": "\\u00e9"}'
    assert loads(text.encode()) == json.loads(text)
    with pytest.raises(BodyRefused):
        loads(b'{"a": 1, "a": 2}')


# --- the body size limit ----------------------------------------------------------------------------


class HugeBody(io.RawIOBase):
    """A client sending 16 MiB of JSON whitespace: counts what the server reads. (Finite, so that a server
    without a limit fails this test instead of reading until the machine runs out of memory.)"""

    SIZE = 16 * 1024 * 1024

    def __init__(self) -> None:
        self.read_bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        n = min(len(buffer), self.SIZE - self.read_bytes)
        buffer[:n] = b" " * n
        self.read_bytes += n
        return n


@pytest.fixture
def small_limit_client(tmp_path):
    settings = load({
        "PERSISTENCE_MODULE": "eventsourcing.sqlite",
        "SQLITE_DBNAME": str(tmp_path / "limit.sqlite"),
        "ZAMETANO_MAX_BODY_BYTES": "2048",
    })
    service = TablesService(settings, clock=StepClock(), new_seed=Seeds())
    try:
        yield create_app(settings, service=service).test_client()
    finally:
        service.close()


def test_a_body_over_the_limit_is_a_413_with_the_error_body_and_the_limit(client, table):
    big = json.dumps({"game": "chemin-de-fer", "players": ["anna", "boris"], "pad": "x" * 70_000})
    for path in (OPEN, f"/tables/{table['table_id']}/commands", "/nowhere"):
        r = assert_error(post_raw(client, path, big), 413, "at most 65536 bytes")
        assert r["max_bytes"] == 65536


def test_the_limit_is_configurable(small_limit_client):
    body = {"game": "chemin-de-fer", "players": ["anna", "boris"]}
    assert small_limit_client.post(OPEN, json=body).status_code == 201
    r = small_limit_client.post(OPEN, json={**body, "rules": {"x": "y" * 3000}})
    assert_error(r, 413, "at most 2048 bytes")


@pytest.mark.parametrize("path", [OPEN, "/tables/00000000-0000-0000-0000-000000000000/commands", "/nowhere"])
def test_a_streamed_body_without_content_length_is_cut_off_at_the_limit_and_refused(small_limit_client, path):
    # What a WSGI server hands on for a chunked body: no Content-Length, the stream ends where the client stops.
    client_stream = HugeBody()
    r = small_limit_client.post(
        path,
        content_type="application/json",
        headers={"Transfer-Encoding": "chunked"},
        environ_overrides={"wsgi.input": client_stream, "wsgi.input_terminated": True},
    )
    assert_error(r, 413, "at most 2048 bytes")
    assert client_stream.read_bytes <= 2048 + 64 * 1024  # the limit, plus at most one read buffer


def test_a_streamed_body_under_the_limit_is_read(small_limit_client):
    body = json.dumps({"game": "chemin-de-fer", "players": ["anna", "boris"]}).encode()
    r = small_limit_client.post(
        OPEN,
        content_type="application/json",
        headers={"Transfer-Encoding": "chunked"},
        environ_overrides={"wsgi.input": io.BytesIO(body), "wsgi.input_terminated": True},
    )
    assert r.status_code == 201, r.json


def metric(client, command, outcome):
    line = f'zametano_command_duration_seconds_count{{command="{command}",outcome="{outcome}"}} '
    found = [row for row in client.get("/metrics").data.decode().splitlines() if row.startswith(line)]
    return int(float(found[0].rsplit(" ", 1)[1])) if found else 0


def test_a_refused_body_to_the_commands_endpoint_never_breaks_the_metrics(client, table):
    path = f"/tables/{table['table_id']}/commands"
    others, draws = metric(client, "other", "refused"), metric(client, "draw_seats", "ok")
    post_raw(client, path, json.dumps({"pad": "x" * 70_000}))
    post_raw(client, path, '{"command": "a\\ud800", "player": "anna"}')
    post_raw(client, path, '{"command": "x\\"} 1\\n# evil", "player": "anna"}')
    client.post(path, json={"command": "draw_seats", "player": "anna"})
    r = client.get("/metrics")
    assert r.status_code == 200
    assert "evil" not in r.data.decode()
    assert metric(client, "other", "refused") == others + 2
    assert metric(client, "draw_seats", "ok") == draws + 1


def test_responses_are_written_as_flasks_own_json_would_write_them_including_what_orjson_cannot():
    import dataclasses
    import uuid
    from datetime import datetime, timezone

    from flask.json.provider import DefaultJSONProvider

    @dataclasses.dataclass
    class Pair:
        left: int
        right: str

    app = create_app(load({"PERSISTENCE_MODULE": "eventsourcing.popo"}), service=object())
    flask_json = DefaultJSONProvider(app)
    flask_json.sort_keys = False  # as the app sets it
    values = [
        {"name": "Žofie ☘", "amount": 100, "nested": [1, 2.5, None, True], "order": {"z": 1, "a": 2}},
        {"at": datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc), "id": uuid.UUID(int=7), "pair": Pair(1, "x")},
        {"past 64 bits": 2**70, 3: "a key that is not a string"},
    ]
    with app.app_context():
        for value in values:
            written = app.json.response(value)
            assert written.mimetype == "application/json" and written.data.endswith(b"\n")
            assert json.loads(written.data) == json.loads(flask_json.dumps(value))
            assert list(json.loads(written.data)) == [str(k) for k in value]  # the order given, not sorted


@pytest.mark.parametrize("sent", ["true", "1e2", "2.50", "-0.0"])
def test_a_refusal_quotes_a_value_as_the_client_wrote_it_in_json_not_in_pythons_spelling(client, table, sent):
    body = '{"game": "chemin-de-fer", "players": ["anna", "boris"], "rules": {"decks": ' + sent + "}}"
    r = assert_error(post_raw(client, OPEN, body), 422, "decks")
    assert r["message"].endswith(f"got {sent}."), r["message"]
    command = '{"command": "cut", "player": "anna", "position": ' + sent + "}"
    r = assert_error(post_raw(client, f"/tables/{table['table_id']}/commands", command), 422, "position")
    assert r["message"].endswith(f"got {sent}."), r["message"]
