"""Hidden means hidden, provably (chain rule 3), on the real server, SQLite and PostgreSQL: a shoe of each game is
played over HTTP, and at every version a player, a second player, the operator and an auditor read what they are
given (the events as they stand, the state and its ETag, the commands' answers, refusals; at the end the export,
every round's audit with its ETag, the verification). Every value of every part hidden from a reader is tried
against all of it (tests/hidden_parts.py) and none is found; every digest checks from every view at that moment."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
import requests

from api.http import digest_tag
from tests.e2e.conftest import server_env
from tests.e2e.servers import running_server
from tests.helpers import pick
from tests.hidden_parts import CARDS, Reader, check_chain, hidden_parts

pytestmark = pytest.mark.e2e
TOKENS = "operator@cage:operator-token-0001,auditor@books:auditor-token-00001,surveillance@eye:surveil-token-0001"
OPERATOR, AUDITOR, EVERYTHING = "operator-token-0001", "auditor-token-00001", "surveil-token-0001"
GAMES: dict[str, dict[str, Any]] = {
    # Forced choices left to the players (auto_forced false), so the rules refuse what a hidden hand forbids.
    "chemin-de-fer": {"players": ["anna", "boris", "vera"],
                      "fields": {"rules": {"decks": 2, "stop_card": 52, "draw_rule": "classic", "auto_forced": False}},
                      "readers": ("boris", "vera"),
                      "done": lambda e: e["type"] == "ShoeRevealed" and e["data"]["shoe"] > 1},
    "punto-banco": {"players": ["marta", "anna", "boris"],
                    "fields": {"croupier": "marta", "rules": {"decks": 6, "stop_card": 52}},
                    "readers": ("anna", "boris"), "house": ("marta",),  # the croupier's seat is the house's
                    "hurry": ("close_stakes", "deal"),  # a coup of one stake: the shoe in fewer commands
                    "done": lambda e: e["type"] == "ShoeRevealed"},
    "card-lottery": {"players": ["anna", "boris", "vera"],
                     "fields": {"banker": "vera", "dealer": "boris", "rules": {"dealer_plays": True}},
                     "readers": ("anna", "boris"),
                     "done": lambda e: e["type"] == "GameEnded"},
}


@pytest.fixture(params=["sqlite", "postgres"])
def server(request, tmp_path):
    env = server_env(request, tmp_path, ZAMETANO_TOKENS=TOKENS)
    with running_server(env, tmp_path / "server.log") as running:
        yield running


class Seat:
    """One reader: his token, what he was given (his view of each event as he last read it), and his attacks."""

    def __init__(self, base: str, name: str, token: str) -> None:
        self.base, self.token, self.reader = base, token, Reader(name)
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"
        self.seen: dict[int, dict[str, Any]] = {}
        self.hiding: set[int] = set()  # the versions whose view, as last read, hid a part

    def get(self, path: str, **headers: str) -> requests.Response:
        response = self.session.get(self.base + path, headers=headers, timeout=30)
        assert response.status_code == 200, (path, response.text)
        return response

    def read_events(self, table_id: str, recorded: dict[int, dict[str, Any]]) -> None:
        """The events as they stand now: those new since the last read, and again each one that hid a part
        then (only a reveal changes an event's view). Each checked from this view, then attacked."""
        again = sorted(self.hiding)
        after = max(self.seen, default=0)
        fresh = []
        while after is not None:
            page = self.get(f"/tables/{table_id}/events?after={after}&limit=1000").json()
            fresh += page["events"]
            after = page["next_after"]
        if again:  # one page from the first to the last event that hid a part
            span = self.get(f"/tables/{table_id}/events?after={again[0] - 1}&limit={again[-1] - again[0] + 1}")
            fresh += [e for e in span.json()["events"] if e["version"] in self.hiding]
        self.take(fresh, recorded)

    def take(self, events: list[dict[str, Any]], recorded: dict[int, dict[str, Any]]) -> None:
        self.reader.learn(events)
        for e in events:
            prev = recorded[e["version"] - 1]["digest"] if e["version"] > 1 else ""
            check_chain([e], prev)
            self.seen[e["version"]] = e
            if hidden_parts(e):
                self.hiding.add(e["version"])
            else:
                self.hiding.discard(e["version"])
        for version in self.hiding:  # every salt known now against every part still hidden
            e = self.seen[version]
            self.reader.attack(e, recorded[version - 1]["digest"] if version > 1 else "")

    def state(self, table_id: str) -> dict[str, Any]:
        response = self.get(f"/tables/{table_id}")
        assert response.headers["ETag"] == f'"{response.json()["version"]}"'  # the version, nothing else
        return response.json()


def post(base: str, token: str, table_id: str, body: dict[str, Any]) -> requests.Response:
    return requests.post(f"{base}/tables/{table_id}/commands", json=body, timeout=30,
                         headers={"Authorization": f"Bearer {token}"})


def probe_refusals(base: str, table_id: str, full: dict[str, Any], owner_tokens: dict[str, str],
                   players: list[str]) -> int:
    """Where a hidden hand forbids a choice (Chemin de fer, the forced draw or stand; the Card lottery, a card
    the holder does not hold), each reader who may not see it sends it and is told only what his own view shows.
    Returns the number of refusals probed."""
    plays = [e for e in full["expects"] if e["command"] in ("lead", "beat", "play")]
    if plays:  # the operator keys in a card the holder does not hold (surveillance knows which)
        holder, command = plays[0]["player"], plays[0]["command"]
        card = next(c for c in CARDS if c not in full["hands"][holder] and c not in full.get("table", []))
        field = {"card": card} if command == "play" else {"cards": [card] * max(1, len(full.get("to_beat") or []))}
        refused = post(base, OPERATOR, table_id, {"command": command, "player": holder, **field})
        assert refused.status_code == 422, refused.text
        assert refused.json()["message"] == f"The rules do not allow {command} by {holder} now.", refused.json()
        return 1
    choices = [e for e in full["expects"] if e["command"] in ("draw", "stand")]
    if len(choices) != 1:
        return 0
    decider, forbidden = choices[0]["player"], {"draw": "stand", "stand": "draw"}[choices[0]["command"]]
    probed = 0
    for who, token in (("operator", OPERATOR), *((p, owner_tokens[p]) for p in players if p != decider)):
        as_player = decider if who == "operator" else who
        refused = post(base, token, table_id, {"command": forbidden, "player": as_player})
        body = refused.json()
        assert refused.status_code == 422, body
        if who == "operator":
            assert body["message"] == f"The rules do not allow {forbidden} by {decider} now.", body
            assert "required" not in body and "choice" not in body
        else:  # the commands the table waits for are public, the choice the hand forces is not
            assert f"draw by {decider}; stand by {decider}" in body["message"], body
        probed += 1
    return probed


def record(everything: Seat, table_id: str, recorded: dict[int, dict[str, Any]]) -> None:
    """The log as surveillance reads it (every part shown, every salt given): what the readers' views link to."""
    after = max(recorded, default=0)
    while after is not None:
        page = everything.get(f"/tables/{table_id}/events?after={after}&limit=1000").json()
        recorded.update({e["version"]: e for e in page["events"]})
        after = page["next_after"]


@pytest.mark.parametrize("game", list(GAMES))
def test_no_reader_finds_a_hidden_part_from_anything_he_is_given_and_every_digest_checks(server, game):
    spec, rng = GAMES[game], random.Random(5)
    base, players = str(server), spec["players"]
    opened = requests.post(f"{base}/tables", json={"game": game, "players": players, **spec["fields"]},
                           headers={"Authorization": f"Bearer {OPERATOR}"}, timeout=10)
    assert opened.status_code == 201, opened.text
    table_id = opened.json()["table_id"]
    owner_tokens = {p: requests.post(f"{base}/players/{p}/tokens", json={}, timeout=10,
                                     headers={"Authorization": f"Bearer {OPERATOR}"}).json()["token"] for p in players}
    first, second = spec["readers"]
    seats = {"first": Seat(base, first, owner_tokens[first]), "second": Seat(base, second, owner_tokens[second]),
             "operator": Seat(base, "operator", OPERATOR), "auditor": Seat(base, "auditor", AUDITOR)}
    everything = Seat(base, "surveillance", EVERYTHING)
    recorded: dict[int, dict[str, Any]] = {}
    probed = 0
    for _ in range(3000):
        record(everything, table_id, recorded)
        if any(spec["done"](e) for e in recorded.values()):
            break
        full = everything.state(table_id)
        for seat in seats.values():
            seat.read_events(table_id, recorded)
            seat.state(table_id)
        probed += probe_refusals(base, table_id, full, owner_tokens, players)
        hurried = [e for e in full["expects"] if e["command"] in spec.get("hurry", ())]
        command, player, args = pick({**full, "expects": hurried} if hurried else full, rng)
        token = OPERATOR if player in spec.get("house", ()) else owner_tokens[player]
        answer = post(base, token, table_id, {"command": command, "player": player, **args})
        assert answer.status_code == 200, answer.text
        record(everything, table_id, recorded)
        for seat in seats.values():
            if seat.token == token:  # the command's answer, as its sender got it
                seat.take(answer.json()["events"], recorded)
    else:
        raise AssertionError("the shoe was never played out")
    assert game == "punto-banco" or probed > 0  # punto banco's hidden cards (burns) decide no refusal
    for seat in seats.values():
        export = seat.get(f"/tables/{table_id}/events", Accept="application/x-ndjson")
        exported = [json.loads(line) for line in export.text.splitlines()]
        check_chain(exported)
        seat.take(exported, recorded)
        for row in seat.get(f"/tables/{table_id}/rounds?limit=500").json()["rounds"]:
            audited = seat.get(f"/tables/{table_id}/rounds/{row['round']}")
            seat.take(audited.json()["events"], recorded)
            seat.reader.attack_tag(audited.content, audited.headers["ETag"].strip('"'), digest_tag)
        assert seat.get(f"/tables/{table_id}/verify").json()["ok"] is True
        assert seat.reader.attempts > 0, seat.reader.name
    log = [recorded[v] for v in sorted(recorded)]
    check_chain(log)  # surveillance's view: every part shown with its salt
    face_down = [e for e in log if e["type"] == "CardDealt" and not e["data"]["face_up"]]
    assert face_down and all(set(e["salts"]) == {"/card"} for e in face_down)
