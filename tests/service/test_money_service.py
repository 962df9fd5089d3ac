"""Money through the service (service/money.py, docs/wallet.md): with purses on memory, SQLite and PostgreSQL, and
with the reference wallet on SQLite. A stake the purse or the wallet does not cover is refused and absent from the
log; a void returns the money; a debit whose answer never came is rolled back; a wallet that is down refuses stakes
at once and loses no credit."""

from __future__ import annotations

import random
import threading
import time

import pytest

from domain import money as M
from domain.purse import PurseShort, WalletRefused
from service import money as service_money
from service.application import TablesService
from service.config import load
from service.money import WalletUnavailable, table_movements, transactions
from tests.helpers import Seeds, StepClock, pick
from tests.voiding import TABLES
from tests.wallets import Wallet

PLAYERS = ("anna", "boris", "vera")


@pytest.fixture
def purses(persistence_env):
    made = TablesService(load({**persistence_env, "ZAMETANO_MONEY": "purses"}), clock=StepClock(), new_seed=Seeds())
    yield made
    made.close()


@pytest.fixture
def wallet(tmp_path):
    made = Wallet(tmp_path)
    yield made
    made.kill()


@pytest.fixture
def with_wallet(tmp_path, wallet):
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "money.sqlite"),
           "ZAMETANO_DATA_DIR": str(tmp_path), "ZAMETANO_WALLET_URL": wallet.url, "ZAMETANO_WALLET_TIMEOUT": "0.5"}
    made = TablesService(load(env), clock=StepClock(), new_seed=Seeds())
    made.money.start()
    yield made
    made.close()


def punto_banco(service, **rules):
    table = TABLES["punto-banco"]
    table_id = service.open_table("punto-banco", table["players"], {**table["rules"], **rules},
                                  croupier="marta")["table_id"]
    service.execute(table_id, "shuffle", "marta", {})
    service.execute(table_id, "cut", "anna", {"position": 100})
    return table_id


def settled(service, within=20.0):
    """Waits for the outbox: nothing asked, owed or rolling back."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not [t for t in transactions(service) if t["state"] in ("asked", "due", "rolling back")]:
            return
        time.sleep(0.1)
    raise AssertionError([t for t in transactions(service) if t["state"] in ("asked", "due", "rolling back")])


def void_latest(service, table_id):
    number = service.table(table_id).round_book["number"]
    asked = service.execute(table_id, "request_correction", "sara",
                            {"kind": "void_round", "round": number, "reason": "misdeal", "note": ""})
    request = asked["state"]["corrections"][-1]["request"]
    return service.execute(table_id, "approve_correction", "simon", {"request": request})


# --- purses ---------------------------------------------------------------------------------------------------

def test_a_stake_above_the_purse_is_refused_naming_what_it_holds_and_is_absent_from_the_log(purses):
    purses.money.cash("anna", "deposit", 50, "cash", "", None)
    table_id = punto_banco(purses)
    version = purses.table(table_id).version
    with pytest.raises(PurseShort, match="holds 50; this needs 100"):
        purses.execute(table_id, "place_stake", "anna", {"spot": "player", "amount": 100})
    assert purses.table(table_id).version == version
    assert not [e for e in purses.read_events(table_id) if e.type == "StakePlaced"]
    assert purses.money.shown("anna")["balance"] == 50 and purses.money.shown("anna")["version"] == 2
    purses.execute(table_id, "place_stake", "anna", {"spot": "player", "amount": 50})
    assert purses.money.shown("anna")["balance"] == 0


def test_a_void_returns_the_money_to_the_purse_before_and_after_payment(purses):
    for player in ("anna", "boris"):
        purses.money.cash(player, "deposit", 1000, "cash", "", None)
    table_id = punto_banco(purses)
    purses.execute(table_id, "place_stake", "anna", {"spot": "banker", "amount": 100})
    purses.execute(table_id, "place_stake", "boris", {"spot": "player", "amount": 50})
    assert [purses.money.shown(p)["balance"] for p in ("anna", "boris")] == [900, 950]
    void_latest(purses, table_id)
    assert [purses.money.shown(p)["balance"] for p in ("anna", "boris")] == [1000, 1000]
    purses.execute(table_id, "place_stake", "anna", {"spot": "banker", "amount": 100})
    purses.execute(table_id, "place_stake", "boris", {"spot": "player", "amount": 50})
    purses.execute(table_id, "close_stakes", "marta", {})
    purses.execute(table_id, "deal", "marta", {})
    paid = [purses.money.shown(p)["balance"] for p in ("anna", "boris")]
    assert paid != [900, 950]  # the coup moved money one way or the other
    void_latest(purses, table_id)
    assert [purses.money.shown(p)["balance"] for p in ("anna", "boris")] == [1000, 1000]
    kinds = {(t["player"], t["operation"], t["reason"]) for t in transactions(purses)}
    assert ("anna", "credit", "void") in kinds or ("anna", "reversal", "void") in kinds


@pytest.mark.parametrize("game", sorted(TABLES))
def test_every_purse_ends_a_game_at_its_deposits_plus_its_result_and_every_movement_has_its_transaction(purses, game):
    body = dict(TABLES[game])
    roles = {k: body.pop(k) for k in ("croupier", "banker", "dealer") if k in body}
    for player in body["players"]:
        purses.money.cash(player, "deposit", 4000, "cash", "", None)
    table_id = purses.open_table(game, body["players"], body.get("rules", {}), **roles)["table_id"]
    rng, state, refused = random.Random(7), purses.current_state(table_id), 0
    for _ in range(300):
        try:
            state = purses.execute(table_id, *pick(state, rng))["state"]
        except PurseShort:
            refused += 1
    held = M.held(purses.table(table_id))
    for player in body["players"]:
        assert purses.money.shown(player)["balance"] == 4000 + state["balances"][player] - held.get(player, 0)
    rows = {(t["table"], t["version"], t["player"]): t for t in transactions(purses)}
    moved = table_movements(purses, table_id)
    assert moved and len(moved) == len(rows)
    for m in moved:
        row = rows[(m["table"], m["version"], m["player"])]
        assert (row["operation"], row["amount"], row["state"]) == (m["operation"], m["amount"],
                                                                   "counted" if m["operation"] == "debit" else "delivered")


# --- a wallet (SQLite) ----------------------------------------------------------------------------------------

def test_a_refused_debit_refuses_the_stake_with_the_wallets_reason_and_records_nothing(with_wallet, wallet):
    wallet.deposit("anna", 500)
    table_id = punto_banco(with_wallet)
    version = with_wallet.table(table_id).version
    with pytest.raises(WalletRefused, match="insufficient funds: holds 500"):
        with_wallet.execute(table_id, "place_stake", "anna", {"spot": "player", "amount": 600})
    wallet.faults(mode="refuse", operations=["debit"])
    with pytest.raises(WalletRefused, match="refused by the wallet's fault setting"):
        with_wallet.execute(table_id, "place_stake", "anna", {"spot": "player", "amount": 100})
    assert with_wallet.table(table_id).version == version
    assert {t["state"] for t in transactions(with_wallet)} == {"refused"}
    assert wallet.balance("anna") == 500


@pytest.mark.parametrize("fault", ["timeout", "fail", "fail-after"])
def test_a_debit_whose_answer_never_came_is_rolled_back_and_the_stake_answered_503(with_wallet, wallet, fault):
    wallet.deposit("anna", 1000)
    table_id = punto_banco(with_wallet)
    version = with_wallet.table(table_id).version
    wallet.faults(mode=fault, seconds=1, operations=["debit"])
    with pytest.raises(WalletUnavailable, match="nothing was staked"):
        with_wallet.execute(table_id, "place_stake", "anna", {"spot": "player", "amount": 100})
    wallet.faults(mode="none")
    settled(with_wallet)
    assert with_wallet.table(table_id).version == version
    assert wallet.balance("anna") == 1000  # applied by the wallet (timeout, fail-after) and given back, or never
    states = {t["operation"]: t["state"] for t in transactions(with_wallet)}
    assert states == {"debit": "rolled back", "rollback": "delivered"}
    with_wallet.execute(table_id, "place_stake", "anna", {"spot": "player", "amount": 100})  # asked again: a new id
    assert wallet.balance("anna") == 900


def test_a_wallet_that_is_down_refuses_stakes_at_once_and_loses_no_credit(with_wallet, wallet, monkeypatch):
    wallet.deposit("anna", 1000)
    table_id = punto_banco(with_wallet)
    with_wallet.execute(table_id, "place_stake", "anna", {"spot": "player", "amount": 100})
    with_wallet.execute(table_id, "close_stakes", "marta", {})
    wallet.kill()
    answered = with_wallet.execute(table_id, "deal", "marta", {})  # settles: a credit owed, or nothing if lost
    result = answered["state"]["balances"]["anna"]
    client = with_wallet.money.wallet
    for _ in range(3):  # the connection refused: no wait for the timeout
        with pytest.raises(WalletUnavailable):
            with_wallet.execute(table_id, "place_stake", "anna", {"spot": "player", "amount": 10})
    assert client.closed_until > time.monotonic()  # three in a row: the next ones are refused without a call
    calls, urlopen, here = [], service_money.urllib.request.urlopen, threading.current_thread()

    def counted(*args, **kwargs):  # this thread's calls only: the outbox goes on delivering in its own
        if threading.current_thread() is here:
            calls.append(args)
        return urlopen(*args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(service_money.urllib.request, "urlopen", counted)
        with pytest.raises(WalletUnavailable, match="not answering"):
            with_wallet.execute(table_id, "place_stake", "anna", {"spot": "player", "amount": 10})
    assert calls == []
    time.sleep(1.0)
    wallet.start()
    settled(with_wallet)
    assert wallet.balance("anna") == 1000 + result
    credits = [t for t in transactions(with_wallet) if t["operation"] == "credit"]
    assert all(t["state"] == "delivered" for t in credits) and (credits or result == -100)


def test_a_void_returns_the_money_to_the_wallet(with_wallet, wallet):
    wallet.deposit("anna", 1000)
    table_id = punto_banco(with_wallet)
    with_wallet.execute(table_id, "place_stake", "anna", {"spot": "player", "amount": 100})
    assert wallet.balance("anna") == 900
    void_latest(with_wallet, table_id)
    settled(with_wallet)
    assert wallet.balance("anna") == 1000


def test_a_debit_asked_before_the_service_stopped_is_rolled_back_by_the_next_one(tmp_path, wallet, monkeypatch):
    monkeypatch.setattr(service_money, "ASK_GRACE", (0.3, 0))
    wallet.deposit("anna", 1000)
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "money.sqlite"),
           "ZAMETANO_DATA_DIR": str(tmp_path), "ZAMETANO_WALLET_URL": wallet.url}
    first = TablesService(load(env))
    try:  # the debit asked, recorded and applied by the wallet; then the service stops before its stake is saved
        purse = first.money.purse("anna")
        purse.ask("t:5:anna", "t:5:anna", 100, {"table": "t", "version": 5, "round": "t:1"}, first.clock())
        first.save(purse)
        first.money.wallet.call("debit", {"transaction": "t:5:anna", "player": "anna", "amount": 100,
                                          "currency": "EUR", "table": "t", "version": 5, "round": "t:1"})
    finally:
        first.close()
    assert wallet.balance("anna") == 900
    second = TablesService(load(env))
    try:
        second.money.start()
        settled(second)
        assert wallet.balance("anna") == 1000
        assert {t["transaction"]: t["state"] for t in transactions(second)} == {
            "t:5:anna": "rolled back", "t:5:anna:rollback": "delivered"}
    finally:
        second.close()


def test_a_purse_past_its_snapshot_interval_reads_back_as_its_log_says(purses):
    for amount in range(1, 61):
        purses.money.cash("anna", "deposit", amount, "cash", "", None)
    shown = purses.money.shown("anna", 0, 1000)
    assert shown["version"] == 61 and shown["balance"] == sum(range(1, 61)) == shown["deposits"]
    assert len(shown["movements"]) == 61
    if purses.snapshots is not None:
        assert [s.originator_version for s in purses.snapshots.get(purses.money.purse("anna").id)] == [50]
