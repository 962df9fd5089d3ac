"""The examples of docs/api.md (and the sample state of the README's quickstart) are what the service answers.

Above each example it replays, the page's source holds the request in an HTML comment, written as HTTP
writes a request, after a line that names the table it needs:

    <!-- example
    given: a chemin-de-fer table with a bank of 100 posted
    POST /tables/{table_id}/commands
    If-Match: "10"
    {"command": "place_stake", "player": "anna", "amount": 150}
    -->

``given:`` is one of GIVEN below (without it: a fresh service), each a fresh app on its own SQLite store with the
tests' deterministic seeds and clock, and a table opened and played to that point; ``{table_id}`` is that
table. A body is sent as ``Content-Type: application/json`` unless the comment sends another header;
``<a JSON body of N bytes>`` stands for a body of N bytes. ``part: expects.0`` compares only that part of
the response. The example under the comment is a JSON object, an HTTP response (status line, headers, a
JSON body) or JSON lines (an NDJSON export), and must be what the replayed request answers, key order
included, except for:

- values that differ from run to run by nature, replaced by placeholders on both sides: every UUID
  (inside messages too), and every value under a key (or header) of PLACEHOLDERS: digests, timestamps,
  request ids, signatures, key ids and public keys, seeds and their commitments, players' tokens and when
  they expire (``{player_token}`` in a request's header is a token minted for the ``given:`` line's player);
- what the page marks as shortened: an object with a ``"..."`` key shows only some of its keys, and a list
  whose last item is a string that starts with ``...`` only its first items;
- headers the example does not show.

JSON examples left unmarked, each with why it cannot be replayed exactly (UNMARKED names them; a new
unmarked example fails test_every_json_example_is_replayed_or_said_to_be_unreplayable):

- ``/readyz``: ``position`` and ``lag`` depend on how far the server's background follower has got when the
  request arrives, which no request decides.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from api.app import create_app
from service.application import TablesService
from service.config import load
from tests.helpers import Seeds, StepClock, stacked_shoe

ROOT = Path(__file__).resolve().parents[2]
PAGES = (ROOT / "docs" / "api.md", ROOT / "README.md")
MARKED = re.compile(r"^<!-- example\n(?P<request>.*?)^-->\n\n?```(?P<lang>\w*)\n(?P<block>.*?)^```$", re.M | re.S)
FENCED = re.compile(r"^```(?P<lang>\w*)\n(?P<block>.*?)^```$", re.M | re.S)
# Values that differ from run to run by nature, by the key that holds them.
PLACEHOLDERS = frozenset({
    "table_id", "digest", "timestamp", "opened_at", "updated_at", "started_at", "ended_at", "request_id",
    "signature", "key_id", "public_key", "not_before", "seed", "commitment", "X-Request-Id", "token", "expires_at",
    "head", "recorded_at", "settled_at",
})
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
PADDED = re.compile(r"<a JSON body of (\d+) bytes>")
# The unmarked JSON examples of docs/api.md (by a line of theirs), and why (the module's docstring says more).
UNMARKED = {
    '{"status": "ready", "read_model":': "the lag depends on the background follower's timing",
}
OPERATOR = {"Authorization": "Bearer op-secret-0f3a9c2e"}


# --- the tables an example needs ---------------------------------------------------------------------


class Table:
    """Plays one table over the test client, following what its state expects."""

    def __init__(self, client: Any, headers: dict[str, str], opening: dict[str, Any]) -> None:
        self.client, self.headers = client, headers
        opened = client.post("/tables", json=opening, headers=headers)
        assert opened.status_code == 201, opened.json
        self.table_id = opened.json["table_id"]

    def state(self) -> dict[str, Any]:
        return self.client.get(f"/tables/{self.table_id}", headers=self.headers).json

    def issuer(self, command: str) -> str:
        return next(e["player"] for e in self.state()["expects"] if e["command"] == command)

    def play(self, command: str, player: str | None = None, **fields: Any) -> dict[str, Any]:
        body = {"command": command, "player": player or self.issuer(command), **fields}
        answer = self.client.post(f"/tables/{self.table_id}/commands", json=body, headers=self.headers)
        assert answer.status_code == 200, answer.json
        return answer.json


def chemin_de_fer(client: Any, headers: dict[str, str], **rules: Any) -> Table:
    return Table(client, headers, {"game": "chemin-de-fer", "players": ["anna", "boris", "vera"], "rules": rules})


def chemin_de_fer_to_bank(client: Any, headers: dict[str, str], **rules: Any) -> Table:
    table = chemin_de_fer(client, headers, **rules)
    table.play("draw_seats", "anna")
    table.play("shuffle")
    table.play("cut", position=40)
    return table


def chemin_de_fer_to_stakes(client: Any, headers: dict[str, str], **rules: Any) -> Table:
    table = chemin_de_fer_to_bank(client, headers, **rules)
    table.play("post_bank", amount=100)
    return table


def chemin_de_fer_first_coup(client: Any, headers: dict[str, str]) -> Table:
    table = chemin_de_fer_to_stakes(client, headers)
    table.play("place_stake", amount=60)
    table.play("place_stake", amount=40)
    table.play("close_stakes")
    table.play("deal")
    return table


def chemin_de_fer_and_punto_banco(client: Any, headers: dict[str, str]) -> Table:
    table = chemin_de_fer_first_coup(client, headers)
    punto_banco(client, headers)
    return table


def chemin_de_fer_punter_on_7(client: Any, headers: dict[str, str]) -> Table:
    with stacked_shoe(["Ts", "2h", "7d", "5c"]):  # the punter's Ts and 7d: 7, on which the rule says stand
        table = chemin_de_fer_to_stakes(client, headers, auto_forced=False)
        table.play("place_stake", amount=50)
        table.play("pass")
        table.play("close_stakes")
        table.play("deal")
    return table


def chemin_de_fer_punter_stood_on_5(client: Any, headers: dict[str, str]) -> Table:
    with stacked_shoe(["5s", "2h", "Tc", "4d"]):  # the punter 5, on which he chooses; the banker 6
        table = chemin_de_fer_to_stakes(client, headers)
        table.play("place_stake", amount=60)
        table.play("place_stake", amount=40)
        table.play("close_stakes")
        table.play("deal")
        table.play("stand", "anna")
    return table


def punto_banco(client: Any, headers: dict[str, str]) -> Table:
    return Table(client, headers, {"game": "punto-banco", "players": ["marta", "anna", "boris"], "croupier": "marta"})


def punto_banco_cut(client: Any, headers: dict[str, str]) -> Table:
    table = punto_banco(client, headers)
    table.play("shuffle", "marta")
    table.play("cut", "anna", position=200)
    return table


def punto_banco_staked(client: Any, headers: dict[str, str]) -> Table:
    table = punto_banco_cut(client, headers)
    table.play("place_stake", "anna", spot="banker", amount=100)
    return table


def punto_banco_quickstart(client: Any, headers: dict[str, str]) -> Table:
    """The README quickstart's coup."""
    table = punto_banco_staked(client, headers)
    table.play("place_stake", "boris", spot="player", amount=50)
    table.play("close_stakes", "marta")
    table.play("deal", "marta")
    return table


def punto_banco_seven_coups(client: Any, headers: dict[str, str]) -> Table:
    """Seven coups of a shoe, anna on the banker each time: for the roads."""
    table = punto_banco_cut(client, headers)
    for _ in range(7):
        table.play("place_stake", "anna", spot="banker", amount=100)
        table.play("close_stakes", "marta")
        table.play("deal", "marta")
    return table


SUPERVISORS = {"sara": "sv-secret-5a8e2c1d", "simon": "sv-secret-9d3b7f40"}


def punto_banco_voided(client: Any, headers: dict[str, str]) -> Table:
    """The quickstart's coup voided after its payments: asked by sara, approved by simon."""
    table = punto_banco_quickstart(client, headers)
    for name, body in (("sara", {"command": "request_correction", "player": "sara", "kind": "void_round", "round": 1,
                                 "reason": "card-exposed", "note": "the player's third card fell face up"}),
                       ("simon", {"command": "approve_correction", "player": "simon", "request": 1})):
        answer = client.post(f"/tables/{table.table_id}/commands", json=body,
                             headers={"Authorization": f"Bearer {SUPERVISORS[name]}"})
        assert answer.status_code == 200, answer.json
    return table


def punto_banco_with_purses(client: Any, headers: dict[str, str]) -> Table:
    """Purses (docs/wallet.md): anna deposited 1000 and staked 100 on the banker, boris deposited 50."""
    table = punto_banco_cut(client, headers)
    for player, amount in (("anna", 1000), ("boris", 50)):
        answer = client.post(f"/players/{player}/purse", json={"command": "deposit", "amount": amount}, headers=headers)
        assert answer.status_code == 200, answer.json
    table.play("place_stake", "anna", spot="banker", amount=100)
    return table


@dataclass(frozen=True)
class Given:
    table: Callable[..., Table] | None = None
    env: dict[str, str] = field(default_factory=dict)
    player: str | None = None  # mint this player a token: the example's {player_token}


TOKENS = "operator:op-secret-0f3a9c2e,auditor:au-secret-7b1d4e86"
GIVEN = {
    "a fresh service": Given(),
    f"a service with the tokens {TOKENS}": Given(env={"ZAMETANO_TOKENS": TOKENS}),
    f"a service with the tokens {TOKENS}, and a token minted for anna": Given(env={"ZAMETANO_TOKENS": TOKENS},
                                                                              player="anna"),
    "a chemin-de-fer table of anna, boris and vera": Given(chemin_de_fer),
    "a chemin-de-fer table waiting for the bank": Given(chemin_de_fer_to_bank),
    "a chemin-de-fer table with a bank of 100 posted": Given(chemin_de_fer_to_stakes),
    "a chemin-de-fer table after its first coup": Given(chemin_de_fer_first_coup),
    "a chemin-de-fer table after its first coup, then a punto-banco table": Given(chemin_de_fer_and_punto_banco),
    "a chemin-de-fer table without auto_forced whose punter was dealt 7": Given(chemin_de_fer_punter_on_7),
    "a chemin-de-fer table whose punter anna stood on 5": Given(chemin_de_fer_punter_stood_on_5),
    "a punto-banco table of marta (the croupier), anna and boris": Given(punto_banco),
    "a punto-banco table cut at 200": Given(punto_banco_cut),
    "a punto-banco table where anna staked 100 on the banker": Given(punto_banco_staked),
    "the punto-banco table of the quickstart, after its coup": Given(punto_banco_quickstart),
    "a punto-banco table after seven coups": Given(punto_banco_seven_coups),
    "a punto-banco table with purses, where anna deposited 1000 and staked 100 on the banker, boris deposited 50": Given(
        punto_banco_with_purses, env={"ZAMETANO_MONEY": "purses"}),
    "the punto-banco table of the quickstart, its coup voided by sara and simon": Given(
        punto_banco_voided, env={"ZAMETANO_TOKENS": TOKENS + "".join(f",supervisor@{n}:{t}" for n, t in SUPERVISORS.items())}),
}


# --- the examples ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Example:
    page: str
    line: int
    given: str
    method: str
    target: str
    headers: dict[str, str]
    body: str | None
    part: str | None
    lang: str
    block: str

    def __str__(self) -> str:
        return f"{self.page}:{self.line} {self.method} {self.target}"


def marked_examples(page: Path) -> list[Example]:
    text = page.read_text(encoding="utf-8")
    return [parsed(page, text, match) for match in MARKED.finditer(text)]


def parsed(page: Path, text: str, match: re.Match[str]) -> Example:
    lines = match["request"].splitlines()
    given = lines.pop(0).removeprefix("given: ") if lines[0].startswith("given: ") else "a fresh service"
    method, target = lines.pop(0).split(" ", 1)
    headers: dict[str, str] = {}
    part = None
    while lines and re.match(r"[\w-]+: ", lines[0]):
        name, value = lines.pop(0).split(": ", 1)
        if name == "part":
            part = value
        else:
            headers[name] = value
    body = "\n".join(lines) or None
    return Example(str(page.relative_to(ROOT)), text.count("\n", 0, match.start()) + 1, given, method, target,
                   headers, body, part, match["lang"], match["block"])


EXAMPLES = [example for page in PAGES for example in marked_examples(page)]


def replay(example: Example, tmp_path: Path) -> Any:
    given = GIVEN[example.given]
    settings = load({
        "PERSISTENCE_MODULE": "eventsourcing.sqlite",
        "SQLITE_DBNAME": str(tmp_path / "examples.sqlite"),
        "ZAMETANO_DATA_DIR": str(tmp_path),
        **given.env,
    })
    service = TablesService(settings, clock=StepClock(), new_seed=Seeds())
    try:
        client = create_app(settings, service=service).test_client()
        headers = OPERATOR if "ZAMETANO_TOKENS" in given.env else {}
        target = example.target
        if given.table is not None:
            target = target.replace("{table_id}", given.table(client, headers).table_id)
        sent = request_headers(example)
        if given.player is not None:
            token = client.post(f"/players/{given.player}/tokens", json={}, headers=headers).json["token"]
            sent = {name: value.replace("{player_token}", token) for name, value in sent.items()}
        return client.open(target, method=example.method, headers=sent, data=request_body(example.body))
    finally:
        service.close()


def request_headers(example: Example) -> dict[str, str]:
    if example.body is None or "Content-Type" in example.headers:
        return example.headers
    return {"Content-Type": "application/json", **example.headers}


def request_body(body: str | None) -> bytes | None:
    if body is None:
        return None
    padded = PADDED.fullmatch(body.strip())
    if padded is None:
        return body.encode()
    size = int(padded.group(1))
    return json.dumps({"padding": "x" * (size - len('{"padding": ""}'))}).encode()


# --- comparing ---------------------------------------------------------------------------------------


def normalised(value: Any, key: str | None = None) -> Any:
    """``value`` with what differs by nature from run to run replaced by placeholders."""
    if key in PLACEHOLDERS and isinstance(value, str):
        return f"<{key}>"
    if isinstance(value, str):
        return UUID.sub("<uuid>", value)
    if isinstance(value, dict):
        return {k: normalised(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [normalised(v) for v in value]
    return value


def shortened_like(documented: Any, actual: Any) -> tuple[Any, Any]:
    """The documented value and the actual one, each cut to what the documented one shows."""
    if isinstance(documented, dict) and isinstance(actual, dict):
        cut = "..." in documented
        doc_side = {k: shortened_like(v, actual[k])[0] if k in actual else v
                    for k, v in documented.items() if k != "..."}
        actual_side = {k: shortened_like(documented[k], v)[1] if k in documented else v
                       for k, v in actual.items() if k in documented or not cut}
        return doc_side, actual_side
    if isinstance(documented, list) and isinstance(actual, list):
        if documented and isinstance(documented[-1], str) and documented[-1].startswith("..."):
            documented, actual = documented[:-1], actual[: len(documented) - 1]
        pairs = [shortened_like(d, a) for d, a in zip(documented, actual)]
        return [p[0] for p in pairs] + documented[len(pairs):], [p[1] for p in pairs] + actual[len(pairs):]
    return documented, actual


def part_of(value: Any, path: str | None) -> Any:
    for step in path.split(".") if path else []:
        value = value[int(step)] if isinstance(value, list) else value[step]
    return value


def assert_same(documented: Any, actual: Any, example: Example) -> None:
    expected, got = shortened_like(normalised(documented), normalised(part_of(actual, example.part)))
    assert expected == got, f"{example}: the page shows the first, the service answers the second"
    # Key order too: the page shows bodies as the service writes them.
    assert json.dumps(expected) == json.dumps(got), (f"{example}: the keys are in another order; the service "
                                                     f"writes {json.dumps(got)}")


def documented_response(example: Example) -> tuple[str | None, dict[str, str], str]:
    """The example's status line, headers and body (an HTTP response; else the whole block is the body)."""
    if example.lang != "http":
        return None, {}, example.block
    head, _, body = example.block.partition("\n\n")
    status, *header_lines = head.splitlines()
    return status.removeprefix("HTTP/1.1 "), dict(line.split(": ", 1) for line in header_lines), body


@pytest.mark.parametrize("example", EXAMPLES, ids=str)
def test_every_marked_example_is_what_the_service_answers_to_its_request(example: Example, tmp_path: Path) -> None:
    status, headers, body = documented_response(example)
    response = replay(example, tmp_path)
    if status is not None:
        assert response.status == status, f"{example}: {response.status}: {response.get_data(as_text=True)}"
    for name, value in headers.items():
        assert normalised(response.headers.get(name), name) == normalised(value, name), f"{example}: {name}"
    if response.mimetype == "application/x-ndjson":
        lines = response.get_data(as_text=True).splitlines()
        documented = body.splitlines()
        assert len(lines) == len(documented), f"{example}: {len(lines)} lines"
        for line, shown in zip(lines, documented):
            assert_same(json.loads(shown), json.loads(line), example)
    elif body.strip():
        assert_same(json.loads(body), response.get_json(), example)
    else:
        assert response.get_data() == b"", f"{example}: the page shows no body"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_json_example_is_replayed_or_said_to_be_unreplayable(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    marked = {match.start("lang") - len("```") for match in MARKED.finditer(text)}
    unmarked = [m["block"] for m in FENCED.finditer(text) if m.start() not in marked and m["lang"] in ("json", "http")]
    unexplained = [block[:120] for block in unmarked if not any(line in block for line in UNMARKED)]
    assert not unexplained, unexplained
    if page.name == "api.md":
        gone = [line for line in UNMARKED if not any(line in block for block in unmarked)]
        assert not gone, f"UNMARKED names examples that are gone or now replayed: {gone}"


def documented_status(example: Example) -> int | None:
    status = documented_response(example)[0]
    if status is not None:
        return int(status.split()[0])
    return json.loads(example.block).get("code") if example.lang == "json" else None


def test_every_error_status_of_the_api_doc_has_a_replayed_example() -> None:
    shown = {documented_status(e) for e in EXAMPLES if e.page == "docs/api.md"}
    assert {400, 401, 403, 404, 405, 409, 412, 413, 415, 422} <= shown, sorted(s for s in shown if s)


def test_the_comparison_ignores_only_what_differs_by_nature_and_what_the_page_marks_shortened() -> None:
    example = Example("x", 1, "a fresh service", "GET", "/", {}, None, None, "json", "")
    answer = {"table_id": "0f6b3b8e-4bd3-4c43-9a46-6e9e0d3c3b1e", "version": 3, "digest": "ab", "cards": ["Ts", "2h"],
              "message": "Table '0f6b3b8e-4bd3-4c43-9a46-6e9e0d3c3b1e' has only version 3."}
    shown = {"table_id": "d9708a47-c083-4765-982c-8da508e813d7", "version": 3, "digest": "cd", "cards": ["Ts", "..."],
             "message": "Table 'd9708a47-c083-4765-982c-8da508e813d7' has only version 3."}
    assert_same(shown, answer, example)
    assert_same({"version": 3, "...": "shortened"}, answer, example)
    for wrong in ({**shown, "version": 4}, {**shown, "cards": ["Th", "..."]}, {"version": 3},
                  dict(reversed(shown.items()))):
        with pytest.raises(AssertionError):
            assert_same(wrong, answer, example)
