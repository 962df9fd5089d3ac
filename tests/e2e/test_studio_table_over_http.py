"""A studio's table with the real server (two workers, SQLite and PostgreSQL): 500 bettors, each with his own
token and never named at the opening, stake on one coup of an open punto banco table in a 15-second window, all
at once; stakes after the deadline are refused. Every stake answered 200 is in the log exactly once and none
refused is; the coup's payments add up; each bettor's view offers him his own stakes only; his history lists the
round."""

from __future__ import annotations

import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import pytest
import requests

from tests.e2e.conftest import server_env
from tests.e2e.servers import running_server

pytestmark = pytest.mark.e2e
OPERATOR = {"Authorization": "Bearer op-secret-0f3a9c2e"}
BETTORS = [f"bettor{i:03d}" for i in range(500)]
LATE = 20  # bettors who stake again after the deadline, and as many who come only then
SPOTS = ("player", "banker", "tie")


@pytest.fixture(params=["sqlite", "postgres"])
def store_env(request, tmp_path):
    return server_env(request, tmp_path, ZAMETANO_TOKENS="operator@cage:op-secret-0f3a9c2e", WEB_THREADS="8")


def command(session, server, table_id, headers, **body):
    return session.post(f"{server}/tables/{table_id}/commands", json=body, headers=headers, timeout=60)


def test_500_bettors_stake_on_one_coup_in_a_15_second_window(store_env, tmp_path):
    with running_server(store_env, tmp_path / "studio.log") as server, ThreadPoolExecutor(48) as pool:
        local = requests.Session()
        table_id = local.post(f"{server}/tables", headers=OPERATOR, timeout=10, json={
            "game": "punto-banco", "players": ["marta"], "croupier": "marta", "players_act": "self",
            "rules": {"open_seats": True, "min_window": 5, "max_window": 15}}).json()["table_id"]
        mint = lambda p: requests.post(f"{server}/players/{p}/tokens", json={}, headers=OPERATOR, timeout=30)  # noqa: E731
        late_comers = [f"latecomer{i:02d}" for i in range(LATE)]
        tokens = {p: {"Authorization": f"Bearer {r.json()['token']}"}
                  for p, r in zip(BETTORS + late_comers, pool.map(mint, BETTORS + late_comers))}
        for name, fields in (("shuffle", {}), ("cut", {"position": 60})):
            assert command(local, server, table_id, OPERATOR, command=name, player="marta", **fields).status_code == 200
        opened = command(local, server, table_id, OPERATOR, command="open_stakes", player="marta", seconds=15)
        closes_at = datetime.fromisoformat(opened.json()["state"]["window"]["closes_at"])
        amounts = {b: (100, 200, 20)[n % 3] for n, b in enumerate(BETTORS)}

        def stake(bettor):
            spot = SPOTS[BETTORS.index(bettor) % 3] if bettor in amounts else "player"
            return command(requests, server, table_id, tokens[bettor], command="place_stake", player=bettor,
                           spot=spot, amount=amounts.get(bettor, 100))

        answered = dict(zip(BETTORS, pool.map(stake, BETTORS)))
        refused = [r.json()["message"] for r in answered.values() if r.status_code != 200]
        assert not refused, (len(refused), refused[:3])
        assert datetime.now(closes_at.tzinfo) < closes_at  # all of them within the window
        time.sleep(max(0.0, (closes_at - datetime.now(closes_at.tzinfo)).total_seconds()) + 0.2)
        late = list(pool.map(stake, BETTORS[:LATE] + late_comers))
        assert {r.status_code for r in late} == {422}
        assert all(r.json()["closes_at"] == opened.json()["state"]["window"]["closes_at"] for r in late)
        assert command(local, server, table_id, OPERATOR, command="deal", player="marta").status_code == 200

        events, after = [], 0
        while after is not None:
            page = local.get(f"{server}/tables/{table_id}/events", params={"limit": 1000, "after": after},
                             headers=OPERATOR, timeout=30).json()
            events, after = events + page["events"], page["next_after"]
        staked = Counter(e["data"]["player"] for e in events if e["type"] == "StakePlaced")
        assert staked == Counter(BETTORS)  # each stake answered 200 once, no late one
        assert Counter(e["data"]["player"] for e in events if e["type"] == "BettorJoined") == Counter(BETTORS)
        state = local.get(f"{server}/tables/{table_id}", headers=OPERATOR, timeout=30).json()
        assert sum(state["balances"].values()) + state["house"] == 0
        outcome = state["result"]["outcome"]
        pays = {"player": 1, "banker": 0.95, "tie": 8}
        for n, bettor in enumerate(BETTORS):
            spot, amount = SPOTS[n % 3], amounts[bettor]
            won = amount * pays[spot] if spot == outcome else 0 if outcome == "tie" else -amount
            assert state["balances"][bettor] == won, (bettor, spot, amount, outcome)

        def own_view_and_history(bettor):
            view = requests.get(f"{server}/tables/{table_id}", headers=tokens[bettor], timeout=30).json()
            rounds = requests.get(f"{server}/players/{bettor}/rounds", headers=tokens[bettor], timeout=30).json()
            return view, rounds

        for bettor, (view, rounds) in zip(BETTORS, pool.map(own_view_and_history, BETTORS)):
            assert {e["player"] for e in view["expects"]} <= {bettor}
            assert [(r["table_id"], r["round"]) for r in rounds["rounds"]] == [(table_id, 1)]
