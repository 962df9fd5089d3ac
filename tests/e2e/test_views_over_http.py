"""Views per viewer on the real server (SQLite and PostgreSQL): three players, each with his own minted token, play
a whole Chemin de fer shoe and a whole Card lottery game at tables where each acts for himself. At every
version and through every output (state, state at a version, events page, export, live stream, command
responses, round audits, verify) no player receives a card dealt face down to another before the game shows
it, and each receives his own; an operator acting for a player is refused; the log records each command's
``by``; an auditor sees a live round's face-down cards hidden and all of them once it is over."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests

from tests.e2e.conftest import server_env
from tests.e2e.servers import running_server
from tests.e2e.test_streams_over_http import LiveStream
from tests.viewing import HIDDEN, Oracle, check_events, drive, read_log

pytestmark = pytest.mark.e2e
PLAYERS = ["anna", "boris", "vera"]
OP, AU, SV = "op-token-for-views", "au-token-for-views", "sv-token-for-views"
TOKENS = f"operator@cage:{OP},auditor@books:{AU},surveillance@eye:{SV}"
GAMES = {
    "chemin-de-fer": ({"rules": {"decks": 2, "draw_rule": "free", "auto_forced": False}},
                      lambda events: any(e["type"] == "ShoeRevealed" and e["data"]["shoe"] > 1 for e in events)),
    "card-lottery": ({"banker": "anna", "dealer": "boris", "rules": {"banker_plays": True, "dealer_plays": True}},
                     lambda events: any(e["type"] == "GameEnded" for e in events)),
}


@pytest.fixture(params=["sqlite", "postgres"])
def server(request, tmp_path):
    env = server_env(request, tmp_path, ZAMETANO_TOKENS=TOKENS, ZAMETANO_STREAM_HEARTBEAT="0.5")
    with running_server(env, tmp_path / "server.log") as running:
        yield running


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


class Client:
    def __init__(self, base: str) -> None:
        self.base, self.session = base, requests.Session()

    def read(self, path: str, token: str) -> Any:
        response = self.session.get(self.base + path, headers=bearer(token), timeout=30)
        assert response.status_code == 200, (path, response.text)
        return response.json()

    def post(self, path: str, player: str, token: str | None, body: dict[str, Any]) -> Any:
        response = self.session.post(self.base + path, json=body, headers=bearer(token or OP), timeout=30)
        assert response.status_code == 200, (player, body, response.text)
        return response.json()


def hidden_in_state(oracle: Oracle, viewer: str, at: int) -> int:
    """How many "??" a state at version ``at`` shows ``viewer``: every face-down card dealt by then, not shown
    by then and not his own (each is still in a hand, a pile or the lottery until shown)."""
    return sum(1 for v, c in oracle.cards.items() if v <= at and oracle.hidden_from(viewer, v, at))


@pytest.mark.parametrize("game", list(GAMES))
def test_each_player_sees_his_own_cards_and_nobody_elses_through_every_output(server, game, tmp_path):
    client = Client(server)
    tokens = {p: requests.post(f"{server}/players/{p}/tokens", json={}, headers=bearer(OP), timeout=10).json()["token"]
              for p in PLAYERS}
    fields, done = GAMES[game]
    opened = requests.post(f"{server}/tables", json={"game": game, "players": PLAYERS, "players_act": "self", **fields},
                           headers=bearer(OP), timeout=10)
    assert opened.status_code == 201, opened.text
    table_id = opened.json()["table_id"]
    streams = {p: LiveStream(server, f"/tables/{table_id}/events", bearer(tokens[p])) for p in PLAYERS}
    responses: list[tuple[dict[str, Any], str]] = []
    live_audits: list[tuple[int, list[dict[str, Any]]]] = []
    live_logs: list[tuple[int, dict[str, list[dict[str, Any]]]]] = []

    def after_each(response: dict[str, Any], player: str) -> None:
        responses.append((response, player))
        if any(e["type"] == "CardDealt" and not e["data"]["face_up"] for e in response["events"]):
            # a live round: the log as the auditor and each player read it now
            live_audits.append((response["version"], read_log(client.read, table_id, AU)))
            live_logs.append((response["version"], {p: read_log(client.read, table_id, tokens[p]) for p in PLAYERS}))

    try:
        full = drive(client.post, table_id, tokens, SV, client.read, done, after_each, seed=11)
        # an operator acting for a player is refused at this table
        expects = client.read(f"/tables/{table_id}", SV)["expects"]
        if expects:
            refused = requests.post(f"{server}/tables/{table_id}/commands", headers=bearer(OP), timeout=10,
                                    json={"command": expects[0]["command"], "player": expects[0]["player"]})
            assert refused.status_code == 403, refused.text
    finally:
        for stream in streams.values():
            stream.close()
    oracle, by_version, head = Oracle(full), {e["version"]: e for e in full}, full[-1]["version"]
    hidden = 0
    for response, player in responses:  # command responses: the events and the state
        hidden += check_events(oracle, response["events"], by_version, player, response["version"])
        assert str(response["state"]).count(HIDDEN) == hidden_in_state(oracle, player, response["version"])
        assert all(e["player"] == player for e in response["state"]["expects"])
    assert hidden > 0
    for player, stream in streams.items():  # the live stream: each event as it was at its own moment
        got = stream.data()
        assert [e["version"] for e in got] == sorted(by_version)[: len(got)] and got
        for e in got:
            check_events(oracle, [e], by_version, player, e["version"])
    for at, logs in live_logs:  # the events pages read mid-game
        for player, events in logs.items():
            hidden += check_events(oracle, events, by_version, player, at)
    step = max(1, head // 120)
    for player in PLAYERS:
        token = tokens[player]
        check_events(oracle, read_log(client.read, table_id, token), by_version, player, head)
        export = requests.get(f"{server}/tables/{table_id}/events", timeout=30,
                              headers={**bearer(token), "Accept": "application/x-ndjson"})
        check_events(oracle, [json.loads(line) for line in export.text.splitlines()], by_version, player, head)
        for version in range(1, head + 1, step):
            state = client.read(f"/tables/{table_id}/state?version={version}", token)
            assert str({k: v for k, v in state.items() if k != "expects"}).count(HIDDEN) == \
                hidden_in_state(oracle, player, version), (player, version)
        for row in client.read(f"/tables/{table_id}/rounds?limit=500", token)["rounds"]:
            audit = client.read(f"/tables/{table_id}/rounds/{row['round']}", token)
            check_events(oracle, audit["events"], by_version, player, head)
            assert all(c["card"] != HIDDEN or c["to"] != player for c in audit["cards"])
        assert client.read(f"/tables/{table_id}/verify", token)["ok"] is True
    # the auditor: a live round's face-down cards hidden, all of them once the round is over
    assert live_audits
    for at, events in live_audits:
        check_events(oracle, events, by_version, "auditor", at, auditor_now=at)
    assert HIDDEN not in str(read_log(client.read, table_id, AU))  # the shoe, the game, is over
    check_events(oracle, read_log(client.read, table_id, AU), by_version, "auditor", head, auditor_now=head)
    # every command's events record who issued it: each player's commands his own token's
    issued = {e["version"]: player for response, player in responses for e in response["events"]}
    assert set(issued) == set(by_version) - set(range(1, opened.json()["version"] + 1))
    for version, player in issued.items():
        assert by_version[version]["data"]["by"] == player
