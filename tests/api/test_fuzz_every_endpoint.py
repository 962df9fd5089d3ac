"""Whatever arrives, the service answers: arbitrary text and JSON thrown at every endpoint of the app
(deep nesting, lone surrogates, control and bidi characters, huge numbers, NaN, bytes that are not UTF-8)
is never a 5xx, and every 4xx carries the one error body."""

from __future__ import annotations

import json
import re
from urllib.parse import quote, urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api.app import create_app
from service.application import TablesService
from service.config import load
from tests.helpers import Seeds, StepClock

ERROR_KEYS = {"code", "status", "message"}
FUZZ = settings(
    max_examples=250,
    deadline=None,
    derandomize=True,  # the same cases on every run: CI never flakes on a case found by chance
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)

WORDS = [
    "chemin-de-fer", "card-lottery", "anna", "boris", "vera", "olga", "ivan", "h0", "draw_seats", "shuffle",
    "cut", "post_bank", "place_stake", "deal", "lead", "play", "banker", "dealer", "Ts", "2c", "classic",
    "\x00", "a\x00", "\ud800", "a\udfff", "\u202e", "\u2066x\u2069", "\u200b", "\ufeff", "\n", "\u2028", "\ue000",
    "Zoe\u0308", "house", " anna", "x" * 65, "9" * 30, "-1", "0", "1e400", "NaN", "",
]
any_text = st.text(st.characters(exclude_categories=()), max_size=12)  # every code point, surrogates too
texts = st.sampled_from(WORDS) | any_text
numbers = st.integers() | st.sampled_from([0, 1, -1, 2**53, -(2**53), 2**63, 10**400]) | st.floats()
json_values = st.recursive(
    st.none() | st.booleans() | numbers | texts,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(texts, children, max_size=4),
    max_leaves=12,
)
FIELDS = ["game", "players", "rules", "banker", "dealer", "command", "player", "position", "amount", "deck",
          "amounts", "cards", "card", "x"]
bodies = st.dictionaries(st.sampled_from(FIELDS) | texts, json_values, max_size=6)
RULE_OPTIONS = ["decks", "stop_card", "draw_rule", "auto_forced", "commission_percent", "contribution", "unclaimed",
                "stage2", "fine_per_card", "banker_plays", "dealer_plays"]
opening_bodies = st.fixed_dictionaries(  # near enough to a real opening that many tables open and get stored
    {"game": st.sampled_from(["chemin-de-fer", "card-lottery"]), "players": st.lists(texts, min_size=2, max_size=5)},
    optional={
        "rules": st.dictionaries(st.sampled_from(RULE_OPTIONS) | texts, json_values, max_size=2),
        "banker": texts,
        "dealer": texts,
        "x": json_values,
    },
)


@st.composite
def raw_bodies(draw) -> bytes:  # type: ignore[no-untyped-def]
    """What a client may put on the wire: JSON (with NaN and surrogates as Python writes them), JSON
    nested deeper than any parser's stack, duplicate keys, numbers of thousands of digits, or any bytes."""
    kind = draw(st.sampled_from(["object", "object", "object", "value", "deep", "duplicate", "digits", "bytes"]))
    if kind == "object":
        return json.dumps(draw(bodies)).encode()
    if kind == "value":
        return json.dumps(draw(json_values)).encode()
    if kind == "deep":
        depth = draw(st.integers(min_value=20, max_value=5000))
        opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}"), ('{"rules":{"a":[', "]}}")]))
        inner = json.dumps(draw(json_values))
        return (opener * depth + inner + closer * draw(st.sampled_from([depth, 0, depth // 2]))).encode()
    if kind == "duplicate":
        key = json.dumps(draw(st.sampled_from(FIELDS)))
        return f"{{{key}: 1, {key}: {json.dumps(draw(json_values))}}}".encode()
    if kind == "digits":
        return ('{"command": "cut", "player": "anna", "position": ' + "9" * draw(st.integers(1, 6000)) + "}").encode()
    return draw(st.binary(max_size=64))


def encode_text(value: str) -> bytes:
    return value.encode("utf-8", "surrogatepass")


@pytest.fixture
def fuzzed(request, tmp_path):
    """An app (on SQLite unless the test asks for PostgreSQL) with one table of each game, and every route
    of its URL map."""
    if getattr(request, "param", "sqlite") == "postgres":
        env = request.getfixturevalue("postgres_env")
    else:
        env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "fuzz.sqlite")}
    settings_ = load(env)
    service = TablesService(settings_, clock=StepClock(), new_seed=Seeds())
    try:
        app = create_app(settings_, service=service)
        client = app.test_client()
        tables = [
            client.post("/tables", json={"game": "chemin-de-fer", "players": ["anna", "boris", "vera"]}).json["table_id"],
            client.post("/tables", json={"game": "card-lottery", "players": ["olga", "ivan", "h0"],
                                         "banker": "olga", "dealer": "ivan"}).json["table_id"],
        ]
        routes = sorted(
            (rule.rule, method)
            for rule in app.url_map.iter_rules()
            for method in sorted(rule.methods - {"HEAD", "OPTIONS"})
            if rule.endpoint != "static"
        )
        yield client, tables, routes
    finally:
        service.close()


def fill(rule: str, draw, tables: list[str]) -> str:  # type: ignore[no-untyped-def]
    """The rule's path with its parameters: a real table most of the time, anything otherwise."""

    def value(match: re.Match[str]) -> str:
        if match.group(1) == "int:":
            return str(draw(st.integers(min_value=0, max_value=10**30)))
        choice = draw(st.sampled_from(tables) | any_text.filter(bool))
        return quote(encode_text(choice), safe="")

    return re.sub(r"<(int:)?[a-z_]+>", value, rule)


def assert_answered(response) -> None:  # type: ignore[no-untyped-def]
    body = response.get_data()  # a streamed answer is read to its end: it must not break half-way
    assert response.status_code < 500, body[:500]
    if response.status_code >= 400:
        error = json.loads(body)
        assert ERROR_KEYS <= set(error) and error["code"] == response.status_code, error


@FUZZ
@given(data=st.data())
def test_no_request_to_any_endpoint_is_answered_with_a_5xx(fuzzed, data):
    client, tables, routes = fuzzed
    rule, method = data.draw(st.sampled_from(routes))
    path = fill(rule, data.draw, tables)
    query = data.draw(st.dictionaries(
        st.sampled_from(["version", "at", "after", "limit", "cursor", "game"]) | texts, texts | numbers.map(str), max_size=3
    ))
    headers = {"Accept": data.draw(st.sampled_from(["application/json", "application/x-ndjson", "*/*", "text/html"]))}
    if data.draw(st.booleans()):
        headers["If-Match"] = data.draw(st.sampled_from(['"1"', '"2"', "W/\"1\"", "*", "x", '"99999999999999999999"']))
    if data.draw(st.booleans()):
        headers["Idempotency-Key"] = data.draw(st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF), max_size=40))
    kwargs = {"query_string": urlencode(query, encoding="utf-8", errors="surrogatepass"), "headers": headers}
    if method != "GET" or data.draw(st.booleans()):
        kwargs["data"] = data.draw(raw_bodies())
        kwargs["content_type"] = data.draw(st.sampled_from(["application/json"] * 4 + ["text/plain", "application/x-www-form-urlencoded"]))
    assert_answered(client.open(path, method=method, **kwargs))


@pytest.mark.parametrize("fuzzed", ["sqlite", "postgres"], indirect=True)
@FUZZ
@given(body=opening_bodies)
def test_opening_a_table_with_any_json_object_is_never_a_5xx_and_what_opens_reads_back(fuzzed, body):
    client, _, _ = fuzzed
    r = client.post("/tables", data=encode_text(json.dumps(body)), content_type="application/json")
    assert_answered(r)
    if r.status_code == 201:  # what was stored reads back, through the log and through the read model
        for path in (f"/tables/{r.json['table_id']}", f"/tables/{r.json['table_id']}/events", "/tables?limit=1000"):
            assert client.get(path).status_code == 200, path
        assert client.get(f"/tables/{r.json['table_id']}/verify").json["ok"] is True


@FUZZ
@given(body=bodies, which=st.integers(0, 1))
def test_any_json_object_as_a_command_is_never_a_5xx(fuzzed, body, which):
    client, tables, _ = fuzzed
    r = client.post(f"/tables/{tables[which]}/commands", data=encode_text(json.dumps(body)), content_type="application/json")
    assert_answered(r)
    assert client.get(f"/tables/{tables[which]}/verify").json["ok"] is True
