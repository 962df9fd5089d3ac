"""End to end: money through purses and through the reference wallet, over real HTTP on the real server (gunicorn, two
workers), on SQLite and PostgreSQL. A whole punto banco shoe at an open table (bettors who join with their first
stake) and a whole Chemin de fer shoe are played while the wallet times out, fails, answers late and answers twice at
random and the server is killed outright (SIGKILL) twice. Then every player's money is his deposits plus his
positions to the unit, nothing is left asked or owed, scripts/reconcile finds nothing, and it names each
difference planted in the wallet's report or in the store."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from tests.e2e.conftest import ROOT, server_env
from tests.e2e.servers import free_port, running_server, signal_group
from tests.helpers import random_args
from tests.wallets import Wallet

OPERATOR, AUDITOR, CASHIER = "cage-operator-token-0035", "audrey-auditor-token-0035", "cash-cashier-token-00035"
TOKENS = f"operator@cage:{OPERATOR},auditor@audrey:{AUDITOR},cashier@cash:{CASHIER}"
BETTORS = [f"b{n:02d}" for n in range(1, 9)]
SEATED = ["anna", "boris", "vera"]
DEPOSIT = {**{b: 3000 for b in BETTORS}, "b08": 40, "anna": 6000, "boris": 6000, "vera": 6000}
PUNTO_BANCO = {"game": "punto-banco", "players": ["marta"], "croupier": "marta",
               "rules": {"open_seats": True, "decks": 6, "stop_card": 52, "min_stake": 10, "max_stake": 500}}
CHEMIN_DE_FER = {"game": "chemin-de-fer", "players": SEATED, "rules": {"decks": 2, "stop_card": 52}}
FAULTS = {"mode": "random", "rate": 0.12, "seconds": 0.4, "seed": 35}
# A coup's stakes are closed about as often as another stake is offered: whole shoes in fewer commands.
WEIGHTS = {"pass_bank": 1, "close_stakes": 6}
KILL_AT = (100, 200)  # commands answered, over both tables, after which the server is killed


def session(token):
    http = requests.Session()
    http.headers["Authorization"] = f"Bearer {token}"
    return http


@pytest.fixture(params=["sqlite", "postgres"])
def store_env(request, tmp_path):
    """A store of the test's own: a SQLite file, or a PostgreSQL schema dropped afterwards."""
    return server_env(request, tmp_path, ZAMETANO_TOKENS=TOKENS)


@pytest.fixture(params=["purses", "wallet"])
def money(request, tmp_path):
    if request.param == "purses":
        yield None
        return
    wallet = Wallet(tmp_path)
    try:
        yield wallet
    finally:
        wallet.kill()


class Players:
    """Both tables played by random legal commands over HTTP; a money refusal (422) or a wallet away (503) is an
    answer like any other, and the command is simply not played."""

    def __init__(self, base: str) -> None:
        self.http, self.rng = session(OPERATOR), random.Random(35)
        self.base, self.tables, self.states, self.done = base, {}, {}, set()
        self.answered = {200: 0, 422: 0, 503: 0}
        self.refused_for_money = 0
        for name, body in (("punto-banco", PUNTO_BANCO), ("chemin-de-fer", CHEMIN_DE_FER)):
            opened = self.http.post(f"{base}/tables", json=body, timeout=10)
            assert opened.status_code == 201, opened.text
            self.tables[name], self.states[name] = opened.json()["table_id"], opened.json()

    def step(self) -> None:
        name = self.rng.choice(sorted(set(self.tables) - self.done))
        state = self.states[name]
        entry = self.rng.choices(state["expects"], [WEIGHTS.get(e["command"], 3) for e in state["expects"]])[0]
        player = self.rng.choice(BETTORS) if entry["player"] == "*" else entry["player"]
        fields = {"seconds": 60} if entry["command"] == "open_stakes" else random_args(state, entry, self.rng)
        try:
            answer = self.http.post(f"{self.base}/tables/{self.tables[name]}/commands",
                                    json={"command": entry["command"], "player": player, **fields}, timeout=10)
        except requests.RequestException:
            self.refresh(name)  # the server killed under it: read the table again
            return
        assert answer.status_code in self.answered, answer.text
        self.answered[answer.status_code] += 1
        if answer.status_code == 200:
            self.states[name] = answer.json()["state"]
            if any(e["type"] == "ShoeFinished" for e in answer.json()["events"]):
                self.done.add(name)
        elif answer.status_code == 422 and any(w in answer.json()["message"] for w in ("purse", "wallet")):
            self.refused_for_money += 1
        else:  # a wallet away, or a stake offered to anyone that this bettor may not make (he backs the other spot)
            assert answer.status_code == 503 or entry["player"] == "*", answer.text

    def refresh(self, name: str) -> None:
        for _ in range(100):
            try:
                self.states[name] = self.http.get(f"{self.base}/tables/{self.tables[name]}", timeout=10).json()
                return
            except requests.RequestException:
                time.sleep(0.1)


def positions(state):
    """Each player's balance less what the table holds of his (docs/wallet.md), read from the state."""
    out = {}
    for player, balance in state["balances"].items():
        staked = state.get("stakes", {}).get(player, 0)
        held = sum(staked.values()) if isinstance(staked, dict) else staked
        if state.get("banker") == player:
            held += state.get("bank", 0)
        out[player] = balance - held
    return out


def reconcile(base, *args):
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "reconcile"), base, "--token", AUDITOR, *args],
                          capture_output=True, text=True, timeout=300)


def settled(base, within=40.0):
    """Waits until no transaction is asked, owed or rolling back (the outbox delivered, stale debits rolled back)."""
    http, deadline = session(AUDITOR), time.monotonic() + within
    while time.monotonic() < deadline:
        rows = http.get(f"{base}/wallet/transactions", params={"limit": 1000}, timeout=30).json()
        page, left = rows, [r for r in rows["transactions"] if r["state"] in ("asked", "due", "rolling back")]
        while page["next_cursor"]:
            page = http.get(f"{base}/wallet/transactions", params={"limit": 1000, "cursor": page["next_cursor"]},
                            timeout=30).json()
            left += [r for r in page["transactions"] if r["state"] in ("asked", "due", "rolling back")]
        if not left:
            return
        time.sleep(0.5)
    raise AssertionError(f"still open after {within} s: {left[:5]}")


def test_every_players_money_is_his_deposits_plus_his_result_to_the_unit(store_env, money, tmp_path):
    print(f"wallet journal and server log under {tmp_path}")
    env = {**store_env, "ZAMETANO_MONEY": "purses"} if money is None else {
        **store_env, "ZAMETANO_WALLET_URL": money.url, "ZAMETANO_WALLET_TIMEOUT": "0.2"}
    port, log = free_port(), tmp_path / "server.log"
    players, commands = None, 0
    for kill_at in (*KILL_AT, None):  # a server each time, killed outright at each of KILL_AT, the last one kept
        with running_server(env, log, port=port) as server:
            if players is None:
                fund(server, money, tmp_path / "receipts.jsonl")
                players = Players(server)
            while len(players.done) < 2 and (kill_at is None or commands < kill_at):
                players.step()
                commands += 1
                assert commands < 5000, "the shoes never finished"
            if kill_at is not None:
                signal_group(server.process.pid, signal.SIGKILL)
                continue
            checked(server, money, players, env, tmp_path)


def fund(server, money, kept: Path):
    """Every player's deposit: at the cashier's with purses (each answer, with its signed receipt, kept in ``kept``),
    at the wallet with one (whose faults begin then)."""
    for player, amount in DEPOSIT.items():
        if money is None:
            answer = session(CASHIER).post(f"{server}/players/{player}/purse",
                                           json={"command": "deposit", "amount": amount}, timeout=10)
            assert answer.status_code == 200, answer.text
            with kept.open("a") as receipts:
                receipts.write(json.dumps(answer.json()) + "\n")
        else:
            money.deposit(player, amount)
    if money is not None:
        money.faults(**FAULTS)


def checked(server, money, players, env, tmp_path):
    """Once both shoes are played: every player's money, then scripts/reconcile, then the differences planted."""
    if money is not None:
        money.faults(mode="none")
    settled(server)
    assert players.answered[200] > 200 and players.refused_for_money > 0, players.answered  # two whole shoes
    report = tmp_path / "report.jsonl"
    if money is not None:
        assert players.answered[503] > 0, players.answered  # the wallet's faults were felt
        report.write_text(money.report())
    # Reconciled first, so that a balance that does not add up comes with every difference named.
    found = reconcile(server, *(("--wallet-report", str(report)) if money is not None else ()))
    states = [session(AUDITOR).get(f"{server}/tables/{t}", timeout=10).json() for t in players.tables.values()]
    for player, deposit in DEPOSIT.items():
        expected = deposit + sum(positions(s).get(player, 0) for s in states)
        if money is None:
            held = session(AUDITOR).get(f"{server}/players/{player}/purse", timeout=10).json()["balance"]
        else:
            held = money.balance(player)
        assert held == expected, (player, held, expected, found.stdout)
    if money is not None:
        credits = [json.loads(line) for line in report.read_text().splitlines() if line.strip()]
        applied = [r["transaction"] for r in credits if r["operation"] == "credit" and r["status"] == "applied"]
        assert len(applied) == len(set(applied)), "a credit applied twice"
    assert found.returncode == 0, found.stdout + found.stderr
    assert found.stdout.rstrip().endswith("0 differences")
    if money is not None:
        planted = plant_in_report(report, tmp_path / "planted.jsonl")
        found = reconcile(server, "--wallet-report", str(tmp_path / "planted.jsonl"))
        assert found.returncode == 1, found.stdout
        for tx in planted:
            assert tx in found.stdout, (tx, found.stdout)
    else:
        kept = tmp_path / "receipts.jsonl"
        found = reconcile(server, "--receipts", str(kept))  # every deposit's signed head still in its purse's log
        assert found.returncode == 0 and found.stdout.rstrip().endswith("0 differences"), found.stdout
        forged = json.loads(kept.read_text().splitlines()[0])
        forged["receipt"]["digest"] = "0" * 64
        kept.write_text(kept.read_text() + json.dumps(forged) + "\n")
        planted = plant_in_store(env, players.tables["punto-banco"])  # beside the running server, as a bug would
        found = reconcile(server, "--receipts", str(kept))
        assert f"{forged['player']}: receipt of line {len(DEPOSIT) + 1}" in found.stdout, found.stdout
        assert found.returncode == 1, found.stdout
        assert planted in found.stdout and "the purse holds" in found.stdout, found.stdout
        assert "that no command of the table's log moved" in found.stdout


def plant_in_report(report: Path, planted: Path) -> list[str]:
    """Three differences in the wallet's report: a counted debit's amount changed, a delivered credit gone, a credit
    the service never sent. Their transaction ids."""
    rows = [json.loads(line) for line in report.read_text().splitlines() if line.strip()]
    debit = next(r for r in rows if r["operation"] == "debit" and r["status"] == "applied")
    credit = next(r for r in rows if r["operation"] == "credit" and r["status"] == "applied")
    debit["amount"] += 1
    rows.remove(credit)
    rows.append({**credit, "transaction": "made-up:1:b01", "player": "b01"})
    planted.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return [debit["transaction"], credit["transaction"], "made-up:1:b01"]


def plant_in_store(env, table_id) -> str:
    """A credit recorded in a purse that no command of the table moved (as a bug paying twice would record it)."""
    from service.application import TablesService
    from service.config import load

    service = TablesService(load(env))
    try:
        purse = service.money.purse("b01")
        tx = f"{table_id}:99999:b01"
        purse.move("credit", 7, tx, {"table": table_id, "version": 99999, "round": f"{table_id}:1"}, "payout",
                   service.clock())
        service.save(purse)
        return tx
    finally:
        service.close()
