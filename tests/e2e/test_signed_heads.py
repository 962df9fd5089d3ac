"""End to end: the house signs every head it acknowledges, and an auditor who kept those heads catches any
later truncation or re-chained rewrite of the stored log, though the log is then consistent with itself."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from datetime import timedelta

import requests
from tests.e2e.conftest import ROOT
from tests.helpers import pick
from tests.served import problem_lines
from tests.signatures import verify_receipt
from tests.tampering import Rows


def run(script, *args):
    return subprocess.run([sys.executable, str(ROOT / "scripts" / script), *map(str, args)],
                          capture_output=True, text=True, timeout=300)


def play_briefly(base, commands, seed):
    state = requests.post(f"{base}/tables", json={"game": "chemin-de-fer", "players": ["olga", "ivan"]}, timeout=10).json()
    rng = random.Random(seed)
    for _ in range(commands):
        name, player, fields = pick(state, rng)
        r = requests.post(f"{base}/tables/{state['table_id']}/commands",
                          json={"command": name, "player": player, **fields}, timeout=10)
        assert r.status_code == 200, r.text
        state = r.json()["state"]
    return state


def test_kept_heads_and_receipts_catch_truncation_and_re_chained_rewrites(server, tmp_path):
    receipts = tmp_path / "receipts.jsonl"
    demo = run("demo", "--url", server, "--decks", "2", "--players", "anna,boris", "--seed", "3",
               "--receipts", receipts)
    assert demo.returncode == 0, demo.stderr
    shoe_table = next(line.split()[-1] for line in demo.stdout.splitlines() if "verify-shoe" in line).rsplit("/", 1)[-1]
    kept = [json.loads(line) for line in receipts.read_text().splitlines()]
    keys = requests.get(f"{server}/keys", timeout=10).json()["keys"]
    assert len(kept) > 50
    for receipt in kept:
        verify_receipt(receipt, keys)  # raises unless the house's key signed exactly this
    paid = play_briefly(server, 60, seed=1)
    timed = play_briefly(server, 40, seed=2)

    heads = tmp_path / "heads.jsonl"
    honest = run("audit", server, "--all", "--save-heads", heads)
    assert honest.returncode == 0, honest.stdout + honest.stderr
    again = run("audit", server, "--all", "--heads", heads, "--receipts", receipts)
    assert again.returncode == 0, again.stdout + again.stderr

    shoe_head = kept[-1]["version"]
    cut = Rows(server.env, shoe_table)
    cut.delete(shoe_head - 19)
    cut.drop_snapshots(after=shoe_head - 20)
    rows = Rows(server.env, paid["table_id"])
    payment = next(v for v, t, _ in rows.rows() if t == "PaymentMade")
    rewritten = rows.rechain(lambda v, t, e: {**e, "amount": e["amount"] * 10} if v == payment else None)
    assert rewritten == [payment]
    assert Rows(server.env, timed["table_id"]).shift_time(timedelta(hours=-1))

    # the log is consistent with itself again: only what was kept outside the database tells
    for table_id in (paid["table_id"], timed["table_id"]):
        assert run("verify-shoe", f"{server}/tables/{table_id}").returncode == 0
    caught = run("audit", server, "--all", "--heads", heads)
    assert caught.returncode == 1, caught.stdout + caught.stderr
    report = caught.stdout
    for table_id, version in ((shoe_table, shoe_head), (paid["table_id"], paid["version"]),
                              (timed["table_id"], timed["version"])):
        assert f"heads          version {version} " in "\n".join(problem_lines(report, table_id)), report
    by_receipts = run("audit", server, "--receipts", receipts)
    assert by_receipts.returncode == 1, by_receipts.stdout + by_receipts.stderr
    assert f"version {shoe_head} " in "\n".join(problem_lines(by_receipts.stdout, shoe_table)), by_receipts.stdout
