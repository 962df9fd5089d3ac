"""End to end: the real server process under gunicorn with two workers, played over real HTTP."""

from __future__ import annotations

import random
import re
import subprocess
import sys
import threading
import uuid

import requests

from tests.e2e.conftest import ROOT
from tests.helpers import pick

PLAYERS = ["anna", "boris", "vera"]


def command(base, table_id, name, player, **fields):
    return requests.post(f"{base}/tables/{table_id}/commands", json={"command": name, "player": player, **fields}, timeout=10)


def test_whole_coups_are_played_over_http_and_every_response_hides_the_shoe(server):
    table = requests.post(f"{server}/tables", json={"game": "chemin-de-fer", "players": PLAYERS, "rules": {"decks": 2}}).json()
    table_id, rng = table["table_id"], random.Random(5)
    state, settled = table, 0
    while settled < 12:
        name, player, fields = pick(state, rng)
        r = command(server, table_id, name, player, **fields)
        assert r.status_code == 200, r.text
        body = r.json()
        state = body["state"]
        settled += sum(e["type"] in ("CoupSettled", "CoupTied") for e in body["events"])
        for e in body["events"]:
            assert "seed" not in e["data"] or e["type"] == "ShoeRevealed"
    # the two workers answer the same table: every read agrees with the last receipt
    for _ in range(6):
        assert requests.get(f"{server}/tables/{table_id}").json() == state
    log = requests.get(f"{server}/tables/{table_id}/events", params={"limit": 1000}).json()["events"]
    assert [e["version"] for e in log] == list(range(1, state["version"] + 1))
    balances = state["balances"]
    assert sum(balances.values()) + state["house"] == 0
    # the seed of the shoe in play is in the store, and in no line the server logged
    from service.application import TablesService
    from service.config import load

    store = TablesService(load(dict(server.env)))
    shoe = store.repository.get(uuid.UUID(table_id)).shoe
    store.close()
    assert not shoe["revealed"]
    assert shoe["seed"] not in server.log.read_text()


def test_a_full_shoe_played_by_the_demo_is_confirmed_by_verify_shoe(server):
    demo = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "demo"), "--url", server, "--decks", "2", "--players", "anna,boris", "--seed", "3"],
        capture_output=True, text=True, timeout=300,
    )
    assert demo.returncode == 0, demo.stderr
    url = next(line.split()[-1] for line in demo.stdout.splitlines() if "verify-shoe" in line)
    verify = subprocess.run([sys.executable, str(ROOT / "scripts" / "verify-shoe"), url], capture_output=True, text=True, timeout=120)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "chain:" in verify.stdout and "ok" in verify.stdout
    rows = [line for line in verify.stdout.splitlines() if line.split()[:1] == ["2"]]
    assert rows and "yes" in rows[0] and rows[0].rstrip().endswith("ok")


def test_the_same_command_sent_at_once_to_both_workers_is_recorded_once(server):
    table_id = requests.post(f"{server}/tables", json={"game": "chemin-de-fer", "players": PLAYERS}).json()["table_id"]
    statuses: list[int] = []
    barrier = threading.Barrier(6)

    def send(player):
        barrier.wait()
        statuses.append(command(server, table_id, "draw_seats", player).status_code)

    threads = [threading.Thread(target=send, args=(PLAYERS[i % 3],)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses.count(200) == 1 and all(s in (409, 422) for s in statuses if s != 200), statuses
    events = requests.get(f"{server}/tables/{table_id}/events", params={"limit": 1000}).json()["events"]
    assert sum(e["type"] == "SeatsDrawn" for e in events) == 1


def test_a_refused_command_over_http_says_why_and_changes_nothing(server):
    table_id = requests.post(f"{server}/tables", json={"game": "chemin-de-fer", "players": PLAYERS}).json()["table_id"]
    r = command(server, table_id, "deal", "anna")
    assert r.status_code == 422 and "draw_seats" in r.json()["message"]
    assert requests.get(f"{server}/tables/{table_id}").json()["version"] == 1


def test_whole_card_lottery_games_of_both_variants_are_played_over_http_and_verified(server):
    for variant, seed in (("beating", 4), ("tricks", 9)):
        demo = subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "demo"), "--url", server, "--game", "card-lottery",
             "--variant", variant, "--games", "2", "--players", "olga,ivan,anna,boris,vera", "--seed", str(seed)],
            capture_output=True, text=True, timeout=300,
        )
        assert demo.returncode == 0, demo.stderr
        assert re.search(r"all decks revealed +2 time", demo.stdout), demo.stdout
        url = next(line.split()[-1] for line in demo.stdout.splitlines() if "verify-shoe" in line)
        verify = subprocess.run([sys.executable, str(ROOT / "scripts" / "verify-shoe"), url], capture_output=True, text=True, timeout=120)
        assert verify.returncode == 0, verify.stdout + verify.stderr
        shoes = [line for line in verify.stdout.splitlines() if line.split()[1:2] in (["banker"], ["dealer"])]
        assert len(shoes) >= 4 and all(line.rstrip().endswith("ok") for line in shoes)
        state = requests.get(url).json()
        assert state["rules"]["stage2"] == variant and state["game_number"] == 3


def test_the_listing_and_round_audits_stay_correct_while_both_workers_write_at_once(server):
    opened: list[str] = []
    lock = threading.Lock()

    def open_and_play(seed):
        rng = random.Random(seed)
        for _ in range(3):
            state = requests.post(f"{server}/tables", json={"game": "chemin-de-fer", "players": PLAYERS, "rules": {"decks": 2}}).json()
            with lock:
                opened.append(state["table_id"])
            for _ in range(25):
                name, player, fields = pick(state, rng)
                state = command(server, state["table_id"], name, player, **fields).json()["state"]
            requests.get(f"{server}/tables", params={"limit": 3})

    threads = [threading.Thread(target=open_and_play, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    listed, cursor = [], None
    while True:
        page = requests.get(f"{server}/tables", params={"limit": 5, **({"cursor": cursor} if cursor else {})}).json()
        listed += page["tables"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sorted(t["table_id"] for t in listed) == sorted(opened)
    for row in listed:
        assert row["version"] == requests.get(f"{server}/tables/{row['table_id']}").json()["version"]
        rounds = requests.get(f"{server}/tables/{row['table_id']}/rounds").json()["rounds"]
        assert len(rounds) == row["rounds"]
        if rounds:
            audit = requests.get(f"{server}/tables/{row['table_id']}/rounds/{rounds[-1]['round']}").json()
            assert audit["checks"]["chain"] and audit["checks"]["rules"] and audit["checks"]["money"]
    report = requests.get(f"{server}/tables/{opened[0]}/verify").json()
    assert report["ok"] is True and report["chain"]["events"] > 20
