"""Players' tokens with the real server (two gunicorn workers, SQLite and PostgreSQL): a token minted by one
worker is accepted by the other, the key is made once on the first start and kept by the next, and the log
names each request's principal, never a token; scripts/demo --seats self plays a table where every player
posts his own commands with his own token, and each then reads his own rounds, and no one else's."""

from __future__ import annotations

import subprocess
import sys

import pytest
import requests

from tests.e2e.conftest import server_env
from tests.e2e.servers import ROOT, running_server

pytestmark = pytest.mark.e2e
OPERATOR = {"Authorization": "Bearer op-secret-0f3a9c2e"}


@pytest.fixture(params=["sqlite", "postgres"])
def store_env(request, tmp_path):
    return server_env(request, tmp_path, ZAMETANO_TOKENS="operator@cage:op-secret-0f3a9c2e")


def test_a_minted_token_names_its_player_at_every_worker_and_across_a_restart(store_env, tmp_path):
    with running_server(store_env, tmp_path / "first.log") as server:
        minted = requests.post(server + "/players/anna/tokens", json={"ttl_seconds": 600}, headers=OPERATOR, timeout=10)
        assert minted.status_code == 201, minted.text
        token = minted.json()["token"]
        for _ in range(6):  # a new connection each time: either worker may answer
            me = requests.get(server + "/me", headers={"Authorization": f"Bearer {token}"}, timeout=10)
            assert me.json()["player"] == "anna"
        refused = requests.get(server + "/tables", headers={"Authorization": f"Bearer {token}"}, timeout=10)
        assert refused.status_code == 403
    log = (tmp_path / "first.log").read_text()
    assert "players' tokens signed with key" in log
    assert '"principal": "anna"' in log and '"principal": "cage"' in log
    assert token not in log and token.split(".")[2] not in log and "op-secret-0f3a9c2e" not in log
    with running_server(store_env, tmp_path / "second.log") as server:
        me = requests.get(server + "/me", headers={"Authorization": f"Bearer {token}"}, timeout=10)
        assert me.status_code == 200 and me.json()["name"] == "anna"


def test_the_demo_plays_a_self_acting_table_with_minted_tokens_and_each_player_reads_his_rounds(store_env, tmp_path):
    players = ["anna", "boris", "vera"]
    with running_server(store_env, tmp_path / "demo.log") as server:
        demo = subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "demo"), "--url", server, "--token", "op-secret-0f3a9c2e", "--seats", "self",
             "--players", ",".join(players), "--rounds", "3", "--seed", "2"],
            capture_output=True, text=True, timeout=300)
        assert demo.returncode == 0, demo.stderr
        table_id = next(line.split()[-1] for line in demo.stdout.splitlines() if line.split()[:1] == ["table"])
        events = requests.get(f"{server}/tables/{table_id}/events", params={"limit": 1000}, headers=OPERATOR,
                              timeout=10).json()["events"]
        first = {}
        for e in events:
            first.setdefault(e["command"], e)
        issued = [(e["actor"], e["data"].get("by")) for e in first.values() if e["actor"] in players]
        assert issued and all(actor == by for actor, by in issued)  # each player's commands, his own token's
        rounds = requests.get(f"{server}/tables/{table_id}/rounds", headers=OPERATOR, timeout=10).json()["rounds"]
        assert len(rounds) >= 3
        for player in players:
            token = requests.post(f"{server}/players/{player}/tokens", json={}, headers=OPERATOR, timeout=10).json()["token"]
            mine = requests.get(f"{server}/players/{player}/rounds", headers={"Authorization": f"Bearer {token}"},
                                timeout=10)
            assert mine.status_code == 200
            assert {r["table_id"] for r in mine.json()["rounds"]} <= {table_id}
            other = next(p for p in players if p != player)
            assert requests.get(f"{server}/players/{other}/rounds", headers={"Authorization": f"Bearer {token}"},
                                timeout=10).status_code == 403
        everyone = {r["round"] for p in players for r in requests.get(
            f"{server}/players/{p}/rounds", headers=OPERATOR, timeout=10).json()["rounds"]}
        assert everyone == {r["round"] for r in rounds}  # every round had players in it
