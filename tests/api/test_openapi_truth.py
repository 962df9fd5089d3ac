"""/openapi.json tells the truth about every answer: each status of each operation is provoked through the test
client, and openapi-core validates the live response against the document (the status is listed for the
operation, the content type declared, the body fits its schema with no field the schema does not name, the
required headers are there and fit theirs). Every header a client acts on (ETag, Location, Retry-After,
WWW-Authenticate, Allow, X-Request-Id) that the service sends must be declared for that response, and every
status the document lists must be provoked by some case here.

Four apps: one with tokens and a small body limit, one rate-limited to one request an hour, one whose event
store is down, and one whose stored log and read model were damaged behind its back."""

from __future__ import annotations

import json
import random
import re
import sqlite3
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any

import pytest
from openapi_core import Config, OpenAPI
from openapi_core.testing import MockRequest, MockResponse
from openapi_schema_validator import OAS30Validator, validate
from werkzeug.test import TestResponse

from api.app import create_app
from service.application import TablesService
from service.config import load
from service.errors import StoreUnavailable
from service.readmodel.rows import ROUNDS
from service.store import LazyService
from tests.feeds import held_streams
from tests.helpers import Seeds, StepClock, pick, stacked_shoe
from tests.sse import SSE, messages, parse
from tests.tampering import Rows

OPERATOR, AUDITOR, CASHIER = "operator-token-0001", "auditor-token-0001", "cashier-token-00001"
NDJSON = "application/x-ndjson"
MAX_BODY = 1024
# The headers a client acts on: each one the service sends must be declared for the response it comes with.
MEANINGFUL = ("ETag", "Location", "Retry-After", "WWW-Authenticate", "Allow", "X-Request-Id")
UNKNOWN = "00000000-0000-4000-8000-000000000000"
CDF = {"game": "chemin-de-fer", "players": ["anna", "boris", "vera"]}
PUNTO = {"game": "punto-banco", "players": ["marta", "anna", "boris"], "croupier": "marta",
         "rules": {"min_stake": 10, "max_stake": 1010}}
LATER = "2999-01-01T00:00:00Z"


@dataclass
class World:
    """One app, its test client, and the tables its cases use."""

    client: Any
    token: str | None = None
    tables: dict[str, str] = field(default_factory=dict)
    services: list[Any] = field(default_factory=list)

    def call(self, method: str, path: str, *, token: Any = ..., headers: dict[str, str] | None = None,
             **kwargs: Any) -> Any:
        headers = dict(headers or {})
        token = self.token if token is ... else token
        if token:
            headers["Authorization"] = f"Bearer {token}"
        response = self.client.open(path, method=method, headers=headers, **kwargs)
        return first_pieces(response) if response.mimetype == SSE else response

    def open(self, body: dict[str, Any] | None = None) -> str:
        response = self.call("POST", "/tables", json=body or CDF)
        assert response.status_code == 201, response.json
        return response.json["table_id"]

    def command(self, table_id: str, command: str, player: str, headers: dict[str, str] | None = None,
                **fields: Any) -> Any:
        return self.call("POST", f"/tables/{table_id}/commands", headers=headers,
                         json={"command": command, "player": player, **fields})

    def done(self, table_id: str, command: str, player: str, **fields: Any) -> dict[str, Any]:
        response = self.command(table_id, command, player, **fields)
        assert response.status_code == 200, response.json
        return response.json["state"]

    def to_stakes(self, **rules: Any) -> tuple[str, dict[str, Any]]:
        """A fresh Chemin de fer table whose bank of 100 is posted: stakes are open."""
        table_id = self.open({**CDF, "rules": rules})
        state = self.done(table_id, "draw_seats", "anna")
        state = self.done(table_id, "shuffle", state["banker"])
        state = self.done(table_id, "cut", state["expects"][0]["player"], position=40)
        return table_id, self.done(table_id, "post_bank", state["banker"], amount=100)

    def punto_stakes(self) -> str:
        """A fresh punto banco table, shuffled and cut: stakes are open."""
        table_id = self.open(PUNTO)
        self.done(table_id, "shuffle", "marta")
        self.done(table_id, "cut", "anna", position=50)
        return table_id

    def close(self) -> None:
        for service in self.services:
            service.close()


def first_pieces(response: Any, pieces: int = 2) -> Any:
    """What a live stream sent first, as a response of its own; the stream is closed."""
    chunks = iter(response.response)
    data = b""
    for _ in range(pieces):
        data += next(chunks)
    response.close()
    return TestResponse([data], response.status, response.headers, request=response.request)


def played(service: TablesService, seed: int = 7) -> str:
    """A Chemin de fer table played with random legal commands until a round has finished."""
    table_id = service.open_table(CDF["game"], CDF["players"], {})["table_id"]
    rng = random.Random(seed)
    while not service.list_rounds(table_id)["rounds"]:
        service.execute(table_id, *pick(service.current_state(table_id), rng))
    return table_id


def env_of(path: Any, **extra: str) -> dict[str, str]:
    return {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(path / "store.sqlite"), **extra}


def world(env: dict[str, str], token: str | None = None) -> World:
    service = TablesService(load(env), clock=StepClock(), new_seed=Seeds())
    return World(create_app(load(env), service=service).test_client(), token, services=[service])


def damaged_world(path: Any) -> World:
    """A table whose last stored event cannot be read and whose read model's rounds were overwritten, served
    by a process started after the damage (nothing cached)."""
    env = env_of(path)
    first = TablesService(load(env), clock=StepClock(), new_seed=Seeds())
    try:
        table_id = played(first)
    finally:
        first.close()
    rows = Rows(env, table_id)
    rows.write(rows.versions()[-1], b"\xff\xfe not an event")
    with closing(sqlite3.connect(env["SQLITE_DBNAME"])) as db, db:
        db.execute(f"UPDATE {ROUNDS} SET sealed = 'not sealed' WHERE table_id = ?", (table_id,))
    damaged = world(env)
    damaged.tables["damaged"] = table_id
    return damaged


def down_world(path: Any) -> World:
    def build() -> Any:
        raise StoreUnavailable("the test's store is down")

    return World(create_app(load(env_of(path, ZAMETANO_MONEY="purses")), service=LazyService(build)).test_client())


@dataclass
class Worlds:
    main: World
    limited: World
    down: World
    damaged: World
    money: World  # with purses (docs/wallet.md); a cashier's token besides


@pytest.fixture(scope="module")
def worlds(tmp_path_factory):  # type: ignore[no-untyped-def]
    made: list[World] = []
    try:
        tokens = f"operator:{OPERATOR},auditor:{AUDITOR},cashier:{CASHIER}"
        main = world(env_of(tmp_path_factory.mktemp("main"), ZAMETANO_TOKENS=tokens,
                            ZAMETANO_MAX_BODY_BYTES=str(MAX_BODY), ZAMETANO_STREAM_HEARTBEAT="0.1"), OPERATOR)
        made.append(main)
        main.tables["played"] = played(main.services[0])
        limited = world(env_of(tmp_path_factory.mktemp("limited"), ZAMETANO_RATE_LIMIT="1/h"))
        made.append(limited)
        assert limited.call("GET", "/openapi.json").status_code == 200  # its one request of the hour
        made.append(down := down_world(tmp_path_factory.mktemp("down")))
        made.append(damaged := damaged_world(tmp_path_factory.mktemp("damaged")))
        made.append(money := world(env_of(tmp_path_factory.mktemp("money"), ZAMETANO_TOKENS=tokens,
                                          ZAMETANO_MONEY="purses", ZAMETANO_MAX_BODY_BYTES=str(MAX_BODY)), CASHIER))
        assert money.call("POST", "/players/anna/purse", json={"command": "deposit", "amount": 500}).status_code == 200
        money.token = OPERATOR
        staked = money.punto_stakes()
        money.done(staked, "place_stake", "anna", spot="player", amount=100)  # a transaction to list
        money.token = CASHIER
        yield Worlds(main, limited, down, damaged, money)
    finally:
        for each in made:
            each.close()


@pytest.fixture(scope="module")
def document(worlds):  # type: ignore[no-untyped-def]
    return worlds.main.call("GET", "/openapi.json", token=None).json


def text(data: bytes, charset: str = "utf-8") -> str:
    # openapi-core hands over the charset a content type names (text/event-stream; charset=utf-8)
    return data.decode(charset)


@pytest.fixture(scope="module")
def openapi(document):  # type: ignore[no-untyped-def]
    # NDJSON is text; each of its lines is checked against Event below. Where a schema does not say
    # whether it admits other properties, it does not.
    config = Config(extra_media_type_deserializers={NDJSON: lambda data: data.decode(), SSE: text},
                    additional_properties_default_policy="forbid")
    return OpenAPI.from_dict(document, config=config)


# --- the cases -------------------------------------------------------------------------------------------

Send = Callable[[Worlds], Any]


@dataclass(frozen=True)
class Case:
    method: str
    template: str
    status: int
    why: str
    send: Send

    @property
    def id(self) -> str:
        return f"{self.method} {self.template} {self.status} {self.why}"


def t(w: Worlds) -> str:
    return w.main.tables["played"]


def body_of(size: int) -> bytes:
    return json.dumps({**CDF, "x": "y" * size}).encode()


def stale(w: Worlds) -> Any:
    table_id = w.main.open()
    return w.main.command(table_id, "draw_seats", "anna", headers={"If-Match": '"0"'})


def idempotent_repeat(w: Worlds) -> Any:
    table_id = w.main.open()
    first = w.main.command(table_id, "draw_seats", "anna", headers={"Idempotency-Key": "k-1"})
    again = w.main.command(table_id, "draw_seats", "anna", headers={"Idempotency-Key": "k-1"})
    assert again.json == first.json and again.headers["ETag"] == first.headers["ETag"]
    return again


def key_reused(w: Worlds) -> Any:
    table_id = w.main.open()
    w.main.command(table_id, "draw_seats", "anna", headers={"Idempotency-Key": "k-2"})
    return w.main.command(table_id, "draw_seats", "boris", headers={"Idempotency-Key": "k-2"})


def not_allowed_now(w: Worlds) -> Any:
    return w.main.command(w.main.open(), "deal", "anna")


def above_the_bank(w: Worlds) -> Any:
    table_id, state = w.main.to_stakes()
    return w.main.command(table_id, "place_stake", state["expects"][0]["player"], amount=1000)


def illegal_draw(w: Worlds) -> Any:
    with stacked_shoe(["Ts", "2h", "7d", "5c"]):  # the punter's 7 must stand
        table_id, state = w.main.to_stakes(auto_forced=False)
    seats, banker = state["seats"], state["banker"]
    w.main.done(table_id, "place_stake", seats[1], amount=50)
    w.main.done(table_id, "pass", seats[2])
    w.main.done(table_id, "close_stakes", banker)
    dealt = w.main.done(table_id, "deal", banker)
    return w.main.command(table_id, "draw", dealt["punter"])


def over_the_spot_limit(w: Worlds) -> Any:
    return w.main.command(w.main.punto_stakes(), "place_stake", "anna", spot="player", amount=2000)


def banker_not_a_multiple(w: Worlds) -> Any:
    return w.main.command(w.main.punto_stakes(), "place_stake", "anna", spot="banker", amount=30)


def both_spots(w: Worlds) -> Any:
    table_id = w.main.punto_stakes()
    w.main.done(table_id, "place_stake", "anna", spot="player", amount=100)
    return w.main.command(table_id, "place_stake", "anna", spot="banker", amount=100)


def not_modified(w: Worlds) -> Any:
    etag = w.main.call("GET", f"/tables/{t(w)}").headers["ETag"]
    return w.main.call("GET", f"/tables/{t(w)}", headers={"If-None-Match": etag})


def moved_on(w: Worlds) -> Any:
    table_id = w.main.open()
    w.main.done(table_id, "draw_seats", "anna")
    return w.main.call("GET", f"/tables/{table_id}", headers={"If-None-Match": '"1"'})


def missing_field(w: Worlds) -> Any:
    table_id, state = w.main.to_stakes()
    return w.main.command(table_id, "place_stake", state["expects"][0]["player"])


def events_as_lines(w: Worlds) -> Any:
    return w.main.call("GET", f"/tables/{t(w)}/events", headers={"Accept": NDJSON})


def live(**headers: str) -> dict[str, Any]:
    return {"headers": {"Accept": SSE, **headers}}


def full_worker(path: Callable[[Worlds], str]) -> Send:
    """The request once the main app's worker holds every stream it may."""

    def send(w: Worlds) -> Any:
        hub = w.main.services[0].hub
        held = [hub.admit("table") for _ in range(hub.max_streams - held_streams(hub))]
        try:
            return w.main.call("GET", path(w), **live())
        finally:
            for slot in held:
                slot.release()

    return send


# One ordinary request per operation, answered 200 (or 201) by the main app; with another app or no token,
# the same request provokes that app's refusal.
PLAIN: dict[tuple[str, str], Callable[[Worlds], tuple[str, dict[str, Any]]]] = {
    ("GET", "/openapi.json"): lambda w: ("/openapi.json", {}),
    ("GET", "/games"): lambda w: ("/games", {}),
    ("GET", "/docs"): lambda w: ("/docs", {}),
    ("GET", "/tables"): lambda w: ("/tables", {}),
    ("POST", "/tables"): lambda w: ("/tables", {"json": CDF}),
    ("GET", "/tables/{table_id}"): lambda w: (f"/tables/{t(w)}", {}),
    ("GET", "/tables/{table_id}/state"): lambda w: (f"/tables/{t(w)}/state?version=1", {}),
    ("POST", "/tables/{table_id}/commands"): lambda w: (f"/tables/{w.main.open()}/commands", {"json": {"command": "draw_seats", "player": "anna"}}),
    ("GET", "/tables/{table_id}/head"): lambda w: (f"/tables/{t(w)}/head", {}),
    ("GET", "/tables/{table_id}/events"): lambda w: (f"/tables/{t(w)}/events", {}),
    ("GET", "/tables/{table_id}/rounds"): lambda w: (f"/tables/{t(w)}/rounds", {}),
    ("GET", "/tables/{table_id}/rounds/{number}"): lambda w: (f"/tables/{t(w)}/rounds/1", {}),
    ("GET", "/tables/{table_id}/verify"): lambda w: (f"/tables/{t(w)}/verify", {}),
    ("GET", "/tables/{table_id}/decisions"): lambda w: (f"/tables/{t(w)}/decisions", {}),
    ("GET", "/tables/{table_id}/roads"): lambda w: (f"/tables/{t(w)}/roads", {}),
    ("GET", "/events"): lambda w: ("/events", live()),
    ("GET", "/healthz"): lambda w: ("/healthz", {}),
    ("GET", "/readyz"): lambda w: ("/readyz", {}),
    ("GET", "/metrics"): lambda w: ("/metrics", {}),
    ("GET", "/keys"): lambda w: ("/keys", {}),
    ("GET", "/me"): lambda w: ("/me", {}),
    ("POST", "/players/{player}/tokens"): lambda w: ("/players/anna/tokens", {"json": {"ttl_seconds": 600}}),
    ("GET", "/players/{player}/rounds"): lambda w: ("/players/anna/rounds", {}),
    ("GET", "/adjustments"): lambda w: ("/adjustments", {}),
    ("GET", "/players/{player}/purse"): lambda w: ("/players/anna/purse", {}),
    ("POST", "/players/{player}/purse"): lambda w: ("/players/anna/purse", {"json": {"command": "deposit", "amount": 5}}),
    ("GET", "/wallet/transactions"): lambda w: ("/wallet/transactions", {}),
    ("GET", "/tables/{table_id}/movements"): lambda w: (f"/tables/{t(w)}/movements", {}),
}


def plain(op: tuple[str, str], app: str, token: Any = ...) -> Send:
    def send(w: Worlds) -> Any:
        path, kwargs = PLAIN[op](w)
        return getattr(w, app).call(op[0], path, token=token, **kwargs)

    return send


def on(app: str, method: str, path: Callable[[Worlds], str], token: Any = ..., **kwargs: Any) -> Send:
    return lambda w: getattr(w, app).call(method, path(w), token=token, **kwargs)


def main(method: str, path: Callable[[Worlds], str], **kwargs: Any) -> Send:
    return on("main", method, path, **kwargs)


def damaged(method: str, path: Callable[[Worlds], str], **kwargs: Any) -> Send:
    return on("damaged", method, lambda w: path(w).format(d=w.damaged.tables["damaged"]), **kwargs)


def same_document(path: str) -> Send:
    """The document asked for again with the ETag it was first answered with."""
    return same_answer(lambda w: path)


def same_answer(path: Callable[[Worlds], str]) -> Send:
    """The answer asked for again with the ETag it was first given with."""

    def send(w: Worlds) -> Any:
        tag = w.main.call("GET", path(w)).headers["ETag"]
        return w.main.call("GET", path(w), headers={"If-None-Match": tag})

    return send


TABLE, STATE, COMMANDS = "/tables/{table_id}", "/tables/{table_id}/state", "/tables/{table_id}/commands"
HEADS = "/events"
MINT, MINT_ANNA = "/players/{player}/tokens", "/players/anna/tokens"
CREATED = (("POST", "/tables"), ("POST", MINT))
EVENTS, ROUNDS_, ROUND = "/tables/{table_id}/events", "/tables/{table_id}/rounds", "/tables/{table_id}/rounds/{number}"
DECISIONS, ROADS = "/tables/{table_id}/decisions", "/tables/{table_id}/roads"
PLAYER_ROUNDS = "/players/{player}/rounds"
PURSE, TRANSACTIONS, MOVEMENTS = "/players/{player}/purse", "/wallet/transactions", "/tables/{table_id}/movements"
MONEY_PATHS = (PURSE, TRANSACTIONS)  # a service keeping money answers them (docs/wallet.md)


def commands(why: str, status: int, send: Send) -> Case:
    return Case("POST", COMMANDS, status, why, send)


CASES = [
    *(Case(*op, 201 if op in CREATED else 200, "plain", plain(op, "money" if op[1] in MONEY_PATHS else "main"))
      for op in PLAIN),
    Case("GET", "/tables", 422, "a limit of 0", main("GET", lambda w: "/tables?limit=0")),
    Case("GET", "/tables", 422, "a cursor no page gave", main("GET", lambda w: "/tables?cursor=x")),
    Case("POST", "/tables", 400, "not JSON", main("POST", lambda w: "/tables", data="{", content_type="application/json")),
    Case("POST", "/tables", 403, "an auditor", main("POST", lambda w: "/tables", token=AUDITOR, json=CDF)),
    Case("POST", "/tables", 413, "a large body", main("POST", lambda w: "/tables", data=body_of(2 * MAX_BODY),
                                                      content_type="application/json")),
    Case("POST", "/tables", 415, "text/plain", main("POST", lambda w: "/tables", data=json.dumps(CDF),
                                                    content_type="text/plain")),
    Case("POST", "/tables", 422, "a name that is not a string", main("POST", lambda w: "/tables",
                                                                    json={**CDF, "players": ["anna", 1]})),
    Case("POST", "/tables", 422, "an unknown option", main("POST", lambda w: "/tables", json={**CDF, "rules": {"x": 1}})),
    Case("POST", "/tables", 422, "one player", main("POST", lambda w: "/tables", json={**CDF, "players": ["anna"]})),
    Case("POST", "/tables", 422, "an array", main("POST", lambda w: "/tables", json=[CDF])),
    Case("GET", TABLE, 304, "If-None-Match its ETag", not_modified),
    *(Case("GET", doc, 304, "If-None-Match its ETag", same_document(doc)) for doc in ("/openapi.json", "/games")),
    Case("GET", TABLE, 200, "If-None-Match of a version it moved on from", moved_on),
    Case("GET", TABLE, 400, "If-Match names no version", main("GET", lambda w: f"/tables/{t(w)}",
                                                              headers={"If-Match": "x"})),
    Case("GET", TABLE, 404, "no such table", main("GET", lambda w: f"/tables/{UNKNOWN}")),
    Case("GET", TABLE, 412, "If-Match names another version", main("GET", lambda w: f"/tables/{t(w)}",
                                                                   headers={"If-Match": '"1"'})),
    Case("GET", TABLE, 409, "its last event unreadable", damaged("GET", lambda w: "/tables/{d}")),
    Case("GET", STATE, 200, "at a moment", main("GET", lambda w: f"/tables/{t(w)}/state?at={LATER}")),
    Case("GET", STATE, 304, "If-None-Match its ETag", main("GET", lambda w: f"/tables/{t(w)}/state?version=1",
                                                            headers={"If-None-Match": '"1"'})),
    Case("GET", STATE, 400, "If-Match names no version", main("GET", lambda w: f"/tables/{t(w)}/state?version=1",
                                                              headers={"If-Match": "x"})),
    Case("GET", STATE, 412, "If-Match names another version", main("GET", lambda w: f"/tables/{t(w)}/state?version=1",
                                                                   headers={"If-Match": '"2"'})),
    Case("GET", STATE, 404, "a version past the end", main("GET", lambda w: f"/tables/{t(w)}/state?version=99999")),
    Case("GET", STATE, 404, "no such table", main("GET", lambda w: f"/tables/{UNKNOWN}/state?version=1")),
    Case("GET", STATE, 409, "its last event unreadable", damaged("GET", lambda w: "/tables/{d}/state?at=" + LATER)),
    Case("GET", STATE, 422, "a version that is not a number", main("GET", lambda w: f"/tables/{t(w)}/state?version=x")),
    Case("GET", STATE, 422, "neither version nor at", main("GET", lambda w: f"/tables/{t(w)}/state")),
    commands("If-Match: *", 200, lambda w: w.main.command(w.main.open(), "draw_seats", "anna", headers={"If-Match": "*"})),
    commands("a repeated Idempotency-Key", 200, idempotent_repeat),
    commands("not JSON", 400, main("POST", lambda w: f"/tables/{t(w)}/commands", data="{",
                                   content_type="application/json")),
    commands("If-Match names no version", 400, lambda w: w.main.command(t(w), "pass", "anna",
                                                                        headers={"If-Match": '"abc"'})),
    commands("an auditor", 403, main("POST", lambda w: f"/tables/{t(w)}/commands", token=AUDITOR,
                                     json={"command": "pass", "player": "anna"})),
    commands("no such table", 404, lambda w: w.main.command(UNKNOWN, "draw_seats", "anna", headers={"If-Match": "*"})),
    commands("a stale If-Match", 409, stale),
    commands("its last event unreadable", 409, damaged("POST", lambda w: "/tables/{d}/commands",
                                                        json={"command": "pass", "player": "anna"})),
    commands("a large body", 413, main("POST", lambda w: f"/tables/{t(w)}/commands", data=body_of(2 * MAX_BODY),
                                       content_type="application/json")),
    commands("no Content-Type", 415, main("POST", lambda w: f"/tables/{t(w)}/commands", content_type="",
                                          data=json.dumps({"command": "pass", "player": "anna"}))),
    commands("no command", 422, main("POST", lambda w: f"/tables/{t(w)}/commands", json={"player": "anna"})),
    commands("an unknown command", 422, lambda w: w.main.command(t(w), "fold", "anna")),
    commands("not the table's turn", 422, not_allowed_now),
    commands("a stake above the bank", 422, above_the_bank),
    commands("a draw the rule forbids", 422, illegal_draw),
    commands("a stake over the spot's limit", 422, over_the_spot_limit),
    commands("a banker stake not a multiple", 422, banker_not_a_multiple),
    commands("both spots", 422, both_spots),
    commands("a missing field", 422, missing_field),
    commands("an Idempotency-Key reused for another body", 422, key_reused),
    Case("GET", "/tables/{table_id}/head", 404, "no such table", main("GET", lambda w: f"/tables/{UNKNOWN}/head")),
    Case("GET", EVENTS, 200, "as JSON lines", events_as_lines),
    Case("GET", EVENTS, 404, "no such table", main("GET", lambda w: f"/tables/{UNKNOWN}/events")),
    Case("GET", EVENTS, 409, "a page over an unreadable event", damaged("GET", lambda w: "/tables/{d}/events")),
    Case("GET", EVENTS, 422, "a limit of 0", main("GET", lambda w: f"/tables/{t(w)}/events?limit=0")),
    Case("GET", EVENTS, 200, "as a live stream", main("GET", lambda w: f"/tables/{t(w)}/events", **live())),
    Case("GET", EVENTS, 200, "a live stream resumed", main("GET", lambda w: f"/tables/{t(w)}/events",
                                                           **live(**{"Last-Event-ID": "3"}))),
    Case("GET", EVENTS, 400, "Last-Event-ID names no version", main("GET", lambda w: f"/tables/{t(w)}/events",
                                                                    **live(**{"Last-Event-ID": "x"}))),
    Case("GET", EVENTS, 409, "a live stream over an unreadable event", damaged("GET", lambda w: "/tables/{d}/events",
                                                                                **live())),
    Case("GET", EVENTS, 503, "the worker holds every stream it may", full_worker(lambda w: f"/tables/{t(w)}/events")),
    Case("GET", HEADS, 200, "resumed from a position", main("GET", lambda w: "/events", **live(**{"Last-Event-ID": "0"}))),
    Case("GET", HEADS, 400, "Last-Event-ID names no position", main("GET", lambda w: "/events",
                                                                    **live(**{"Last-Event-ID": "1.5"}))),
    Case("GET", HEADS, 406, "Accept: application/json", main("GET", lambda w: "/events",
                                                             headers={"Accept": "application/json"})),
    Case("GET", HEADS, 503, "the worker holds every stream it may", full_worker(lambda w: "/events")),
    Case("GET", ROUNDS_, 404, "no such table", main("GET", lambda w: f"/tables/{UNKNOWN}/rounds")),
    Case("GET", ROUNDS_, 409, "its read model rows unreadable", damaged("GET", lambda w: "/tables/{d}/rounds")),
    Case("GET", ROUNDS_, 422, "a cursor no page gave", main("GET", lambda w: f"/tables/{t(w)}/rounds?cursor=x")),
    Case("GET", ROUND, 304, "If-None-Match its ETag", same_answer(lambda w: f"/tables/{t(w)}/rounds/1")),
    Case("GET", ROUND, 404, "no such round", main("GET", lambda w: f"/tables/{t(w)}/rounds/99999")),
    Case("GET", ROUND, 409, "its read model row unreadable", damaged("GET", lambda w: "/tables/{d}/rounds/1")),
    Case("GET", DECISIONS, 404, "no such table", main("GET", lambda w: f"/tables/{UNKNOWN}/decisions")),
    Case("GET", DECISIONS, 409, "an unreadable stored event", damaged("GET", lambda w: "/tables/{d}/decisions")),
    Case("GET", DECISIONS, 422, "a cursor no page gave", main("GET", lambda w: f"/tables/{t(w)}/decisions?cursor=x")),
    Case("GET", ROADS, 404, "a shoe the table does not have", main("GET", lambda w: f"/tables/{t(w)}/roads?shoe=99")),
    Case("GET", ROADS, 409, "an unreadable stored event", damaged("GET", lambda w: "/tables/{d}/roads")),
    Case("GET", ROADS, 422, "a shoe of 0", main("GET", lambda w: f"/tables/{t(w)}/roads?shoe=0")),
    Case("GET", "/tables/{table_id}/verify", 404, "no such table", main("GET", lambda w: f"/tables/{UNKNOWN}/verify")),
    Case("GET", "/me", 200, "an auditor", main("GET", lambda w: "/me", token=AUDITOR)),
    Case("GET", "/me", 200, "a player", lambda w: w.main.call("GET", "/me", token=w.main.call(
        "POST", "/players/anna/tokens", json={}).json["token"])),
    Case("POST", MINT, 400, "not JSON", main("POST", lambda w: MINT_ANNA, data="{", content_type="application/json")),
    Case("POST", MINT, 403, "an auditor", main("POST", lambda w: MINT_ANNA, token=AUDITOR, json={})),
    Case("POST", MINT, 413, "a large body", main("POST", lambda w: MINT_ANNA, data=body_of(2 * MAX_BODY),
                                                 content_type="application/json")),
    Case("POST", MINT, 415, "text/plain", main("POST", lambda w: MINT_ANNA, data="{}", content_type="text/plain")),
    Case("POST", MINT, 422, "a lifetime of a second", main("POST", lambda w: MINT_ANNA, json={"ttl_seconds": 1})),
    Case("POST", MINT, 422, "a reserved name", main("POST", lambda w: "/players/house/tokens", json={})),
    Case("GET", PLAYER_ROUNDS, 403, "another player's token", lambda w: w.main.call("GET", "/players/anna/rounds",
         token=w.main.call("POST", "/players/boris/tokens", json={}).json["token"])),
    Case("GET", PLAYER_ROUNDS, 422, "a cursor no page gave", main("GET", lambda w: "/players/anna/rounds?cursor=x")),
    Case("GET", PLAYER_ROUNDS, 422, "a reserved name", main("GET", lambda w: "/players/house/rounds")),
    Case("GET", "/adjustments", 403, "a player's token", lambda w: w.main.call("GET", "/adjustments",
         token=w.main.call("POST", "/players/anna/tokens", json={}).json["token"])),
    Case("GET", "/adjustments", 422, "a reason not in the list", main("GET", lambda w: "/adjustments?reason=x")),
    Case("GET", PURSE, 200, "an auditor", on("money", "GET", lambda w: "/players/anna/purse", token=AUDITOR)),
    Case("GET", PURSE, 403, "another player's token", lambda w: w.money.call("GET", "/players/anna/purse",
         token=w.money.call("POST", "/players/boris/tokens", json={}, token=OPERATOR).json["token"])),
    Case("GET", PURSE, 404, "a service without money", main("GET", lambda w: "/players/anna/purse")),
    Case("GET", PURSE, 422, "a reserved name", on("money", "GET", lambda w: "/players/house/purse")),
    Case("POST", PURSE, 200, "a cashier's deposit", on("money", "POST", lambda w: "/players/anna/purse",
                                                       json={"command": "deposit", "amount": 10})),
    Case("POST", PURSE, 400, "not JSON", on("money", "POST", lambda w: "/players/anna/purse", data="{",
                                            content_type="application/json")),
    Case("POST", PURSE, 403, "an operator", on("money", "POST", lambda w: "/players/anna/purse", token=OPERATOR,
                                               json={"command": "deposit", "amount": 10})),
    Case("POST", PURSE, 404, "a service without money", main("POST", lambda w: "/players/anna/purse", token=CASHIER,
                                                             json={"command": "deposit", "amount": 10})),
    Case("POST", PURSE, 413, "a large body", on("money", "POST", lambda w: "/players/anna/purse",
                                                data=body_of(2 * MAX_BODY), content_type="application/json")),
    Case("POST", PURSE, 415, "text/plain", on("money", "POST", lambda w: "/players/anna/purse", data="{}",
                                              content_type="text/plain")),
    Case("POST", PURSE, 422, "a withdrawal above the balance", on("money", "POST", lambda w: "/players/anna/purse",
                                                                  json={"command": "withdraw", "amount": 10**9})),
    Case("GET", TRANSACTIONS, 200, "an auditor", on("money", "GET", lambda w: TRANSACTIONS, token=AUDITOR)),
    Case("GET", TRANSACTIONS, 200, "NDJSON", on("money", "GET", lambda w: TRANSACTIONS, token=AUDITOR,
                                                headers={"Accept": NDJSON})),
    Case("GET", TRANSACTIONS, 403, "a player's token", lambda w: w.money.call("GET", TRANSACTIONS,
         token=w.money.call("POST", "/players/boris/tokens", json={}, token=OPERATOR).json["token"])),
    Case("GET", TRANSACTIONS, 404, "a service without money", main("GET", lambda w: TRANSACTIONS)),
    Case("GET", TRANSACTIONS, 422, "a state not in the list", on("money", "GET", lambda w: TRANSACTIONS + "?state=x")),
    Case("GET", MOVEMENTS, 403, "a player's token", lambda w: w.main.call("GET", f"/tables/{t(w)}/movements",
         token=w.main.call("POST", "/players/anna/tokens", json={}).json["token"])),
    Case("GET", MOVEMENTS, 404, "an unknown table", main("GET", lambda w: f"/tables/{UNKNOWN}/movements")),
    Case("GET", MOVEMENTS, 409, "a damaged log", damaged("GET", lambda w: "/tables/{d}/movements")),
]

# The paths whose answers never touch the event store.
NO_STORE = ("/healthz", "/metrics", "/openapi.json", "/games", "/docs", "/me", MINT)
OPEN = ("/healthz", "/readyz", "/metrics", "/openapi.json", "/games", "/keys", "/docs")
NEVER_LIMITED = ("/healthz", "/readyz", "/metrics")


def success(op: tuple[str, str]) -> int:
    return 201 if op in CREATED else 200


# Every operation without a token, rate-limited and with its store down: what each answers is the code's
# to say (api/auth.py, api/ratelimit.py, api/errors.py), and the document must list it.
CASES += [
    *(Case(*op, success(op) if op[1] in OPEN else 401, "no token", plain(op, "main", token=None)) for op in PLAIN),
    *(Case(*op, success(op) if op[1] in NEVER_LIMITED else 429, "rate-limited", plain(op, "limited")) for op in PLAIN),
    *(Case(*op, success(op) if op[1] in NO_STORE else 503, "store down", plain(op, "down")) for op in PLAIN),
]


def template_of(document: dict[str, Any], path: str) -> str | None:
    for template in document["paths"]:
        if re.fullmatch(re.sub(r"\{[^}]+\}", "[^/]+", template), path):
            return template
    return None


def resolved(document: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in response:
        section, name = response["$ref"].split("/")[-2:]
        response = document["components"][section][name]
    return response


def operation(document: dict[str, Any], case: Case) -> dict[str, Any]:
    return document["paths"][case.template][case.method.lower()]


def against(document: dict[str, Any], schema: str) -> dict[str, Any]:
    """A JSON Schema that is the document's component ``schema``, its references resolvable."""
    return {"$ref": f"#/components/schemas/{schema}", "components": document["components"]}


def headers_fit(response: Any, declared: dict[str, Any], document: dict[str, Any]) -> None:
    sent = {h for h in MEANINGFUL if h in response.headers}
    assert sent <= set(declared), f"sent but not declared: {sorted(sent - set(declared))}"
    for name, header in declared.items():
        if resolved(document, header).get("required"):
            assert name in response.headers, f"{name} is declared required"


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_every_answer_of_every_operation_fits_the_document(case, worlds, document, openapi):
    response = case.send(worlds)

    assert response.status_code == case.status, response.get_data(as_text=True)[:600]
    assert template_of(document, response.request.path) == case.template
    request = MockRequest("http://localhost", case.method, response.request.path)
    openapi.validate_response(request, WerkzeugResponse(response))
    declared = resolved(document, operation(document, case)["responses"][str(case.status)])
    headers_fit(response, declared.get("headers", {}), document)
    if response.mimetype == NDJSON:
        lines = response.get_data(as_text=True).splitlines()
        assert lines
        for line in lines:
            validate(json.loads(line), against(document, "Transaction" if case.template == TRANSACTIONS else "Event"),
                     cls=OAS30Validator)
    if response.mimetype == SSE:
        sent = messages(parse(response.get_data()))
        assert bool(sent) == (case.why != "plain" or case.template != HEADS)  # from now on: nothing yet
        for message in sent:
            validate(message.json, against(document, "Event" if case.template == EVENTS else "HeadChange"),
                     cls=OAS30Validator)
    if case.why == "no token":
        assert (operation(document, case)["security"] == []) == (case.status != 401)


def test_every_status_the_document_lists_is_provoked_by_a_case(document):
    listed = {(method.upper(), path, int(status)) for path, item in document["paths"].items()
              for method, op in item.items() if method in ("get", "post") for status in op["responses"]}
    provoked = {(case.method, case.template, case.status) for case in CASES}
    assert listed - provoked == set(), "listed but never provoked"
    assert provoked - listed == set(), "provoked but not listed"
    assert {(m, p) for m, p, _ in provoked} == set(PLAIN)


def test_the_document_lists_no_catch_all_and_asks_a_token_where_the_service_does(document):
    for path, item in document["paths"].items():
        for op in (op for method, op in item.items() if method != "parameters"):
            assert "default" not in op["responses"]
            assert op["security"] == ([] if path in OPEN else [{"bearer": []}]), path


@pytest.mark.parametrize("method,path,status,component", [
    ("DELETE", "/tables/{t}", 405, "MethodNotAllowed"),
    ("PUT", "/tables", 405, "MethodNotAllowed"),
    ("POST", "/healthz", 405, "MethodNotAllowed"),
    ("GET", "/no/such/path", 404, "NotFound"),
])
def test_answers_outside_any_operation_fit_the_response_the_document_gives_them(worlds, document, method, path,
                                                                                  status, component):
    response = worlds.main.call(method, path.format(t=worlds.main.tables["played"]))

    assert response.status_code == status
    assert response.mimetype == "application/json"
    validate(response.json, against(document, "Error"), cls=OAS30Validator)
    headers_fit(response, document["components"]["responses"][component]["headers"], document)


class WerkzeugResponse(MockResponse):
    """The test client's response as openapi-core reads it: its bytes, status, headers and media type."""

    def __init__(self, response: Any) -> None:
        super().__init__(response.get_data(), response.status_code, dict(response.headers),
                         response.content_type or "")
