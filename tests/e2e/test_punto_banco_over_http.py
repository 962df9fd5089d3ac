"""End to end: punto banco on the real server process (gunicorn, two workers), played over real HTTP to the end of a
shoe, then checked from the outside by scripts/verify-shoe and scripts/audit."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import uuid

import pytest
import requests

from tests.e2e.conftest import KINDS, ROOT, server_env
from tests.e2e.servers import running_server
from tests.unit.test_punto_banco_table import fields_within

PLAYERS = ["marta", "anna", "boris"]
SCRIPTS = ROOT / "scripts"
OPERATOR = "op-secret-0f3a9c2e"


@pytest.fixture(params=KINDS)
def operated(request, tmp_path):
    """The conftest's server with tokens: a service without any is open and shows every card to everyone,
    while an operator sees no card that lies face down (the burned ones, the shoe) until ShoeRevealed."""
    env = server_env(request, tmp_path, ZAMETANO_TOKENS=f"operator:{OPERATOR}")
    with running_server(env, tmp_path / "server.log") as running:
        yield running


def operator_session() -> requests.Session:
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {OPERATOR}"
    return session


def script(name, *args):
    return subprocess.run([sys.executable, str(SCRIPTS / name), *args], capture_output=True, text=True, timeout=300)


def test_a_whole_shoe_is_played_over_http_hiding_the_shoe_and_verify_shoe_and_the_audit_confirm_it(operated):
    server, http = operated, operator_session()
    table = http.post(f"{server}/tables", json={"game": "punto-banco", "players": PLAYERS, "croupier": "marta",
                                                "rules": {"decks": 6, "stop_card": 52}}, timeout=10).json()
    table_id, rng, state = table["table_id"], random.Random(7), table
    assert table["croupier"] == "marta" and table["expects"] == [{"command": "shuffle", "player": "marta", "fields": {}}]
    revealed = False
    while not revealed:
        expects = state["expects"]
        entry = rng.choices(expects, [1 if e["command"] == "place_stake" else 3 for e in expects])[0]
        r = http.post(f"{server}/tables/{table_id}/commands",
                      json={"command": entry["command"], "player": entry["player"], **fields_within(entry, rng)},
                      timeout=10)
        assert r.status_code == 200, r.text
        body = r.json()
        state = body["state"]
        revealed = any(e["type"] == "ShoeRevealed" for e in body["events"])
        for e in body["events"]:
            assert "seed" not in e["data"] or e["type"] == "ShoeRevealed"
        if not revealed:
            assert set(state["burn"]["burned"]) <= {"??"}  # the operator's view: face down until revealed
        assert sum(state["balances"].values()) + state["house"] == 0
    assert "??" not in state["burn"]["burned"] and state["phase"] == "shuffle"
    # both workers answer with the same table, and the log is whole
    for _ in range(4):
        assert http.get(f"{server}/tables/{table_id}", timeout=10).json() == state
    log = http.get(f"{server}/tables/{table_id}/events", params={"limit": 1000}, timeout=10).json()["events"]
    assert [e["version"] for e in log] == list(range(1, state["version"] + 1))
    rounds = http.get(f"{server}/tables/{table_id}/rounds", params={"limit": 1000}, timeout=10).json()["rounds"]
    assert len(rounds) == state["round"] == sum(e["type"] == "CoupDecided" for e in log)
    url = f"{server}/tables/{table_id}"
    verify = script("verify-shoe", url, "--token", OPERATOR)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    [row] = [line.split() for line in verify.stdout.splitlines() if line.split()[:2] == ["1", "shoe"]]
    assert row[-2:] == ["yes", "ok"]
    audit = script("audit", url, "--rounds", "--token", OPERATOR)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    [row] = [line.split() for line in audit.stdout.splitlines() if line.startswith(table_id[:8])]
    assert row[1:5] == ["punto-banco", str(state["version"]), "1/1", str(len(rounds))] and row[-1] == "ok", row
    # a new shoe: its seed is in the store and in no line the server logged
    state = http.post(f"{server}/tables/{table_id}/commands", json={"command": "shuffle", "player": "marta"},
                      timeout=10).json()["state"]
    from service.config import load
    from service.application import TablesService

    store = TablesService(load(dict(server.env)))
    try:
        shoe = store.repository.get(uuid.UUID(table_id)).shoe
    finally:
        store.close()
    assert shoe["number"] == 2 and not shoe["revealed"]
    assert shoe["seed"] not in server.log.read_text() and shoe["seed"] not in json.dumps(state)


def test_the_demo_plays_punto_banco_from_expects_alone_to_the_end_of_a_shoe_and_verify_shoe_confirms_it(server):
    demo = script("demo", "--url", server, "--game", "punto-banco", "--players", "marta,anna,boris,vera",
                  "--rule", "decks=6", "--rule", "stop_card=52", "--seed", "11")
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert re.search(r"all decks revealed +1 time", demo.stdout), demo.stdout
    url = next(line.split()[-1] for line in demo.stdout.splitlines() if "verify-shoe" in line)
    verify = script("verify-shoe", url)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    state = requests.get(url, timeout=10).json()
    assert state["croupier"] == "marta" and state["balances"]["marta"] == 0
    assert sum(state["balances"].values()) + state["house"] == 0
