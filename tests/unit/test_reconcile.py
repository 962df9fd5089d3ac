"""scripts/reconcile's checks on rows written here (the service's movements and transactions, a wallet's report):
every kind of difference is named with its player, table, round and transaction, matching rows find nothing, and
a window keeps only what was recorded in it."""

from __future__ import annotations

import pytest

from tests.helpers import load_script

RECONCILE = load_script("reconcile", "zametano_reconcile")
T = "9c0f5d2e-0000-4000-8000-000000000001"
AT = "2026-12-06T10:00:00.000000+00:00"


def movement(version, player, operation, amount, round_=1):
    return {"table": T, "version": version, "player": player, "operation": operation, "amount": amount,
            "reason": "stake" if operation == "debit" else "payout", "round": f"{T}:{round_}",
            "transaction": f"{T}:{version}:{player}"}


def transaction(version, player, operation, amount, state, attempt=1, round_=1, at=AT):
    tx = f"{T}:{version}:{player}" + (f":{attempt}" if attempt > 1 else "")
    return {"position": version, "transaction": tx, "operation": operation, "player": player, "table": T,
            "version": version, "round": f"{T}:{round_}", "amount": amount, "state": state, "recorded_at": at,
            "settled_at": at}


def found(movements, transactions, start=None, end=None):
    reconciler = RECONCILE.Reconciler("http://127.0.0.1:1", None, 1.0, start, end)
    reconciler.match(movements, transactions)
    return reconciler.found


MOVED = [movement(12, "anna", "debit", 100), movement(20, "anna", "credit", 195)]
PAID = [transaction(12, "anna", "debit", 100, "rolled back"), transaction(12, "anna", "debit", 100, "counted", 2),
        transaction(20, "anna", "credit", 195, "delivered")]


def test_movements_paid_by_their_transactions_leave_nothing_to_name():
    assert found(MOVED, PAID) == []


@pytest.mark.parametrize(("transactions", "said"), [
    (PAID[:2], f"{T}:20:anna: the table's credit of 195 has no transaction"),
    ([*PAID[:2], {**PAID[2], "amount": 190}], "the table's credit is 195, its transaction 190"),
    ([*PAID, transaction(30, "anna", "credit", 7, "delivered")], "a credit of 7 (delivered) that no command of the "
                                                                 "table's log moved"),
    ([*PAID, transaction(12, "anna", "debit", 100, "counted", 3)], "the table's debit is paid by 2 transactions"),
    ([*PAID[:2], {**PAID[2], "state": "due"}, transaction(31, "anna", "debit", 5, "asked")],
     "a debit of 5 is still asked"),
    ([PAID[0], {**PAID[1], "round": f"{T}:2"}, PAID[2]], f"anna: round {T}:1: the table moved -100+195"[:40]),
], ids=["missing", "amount", "extra credit", "twice", "left asked", "another round"])
def test_each_difference_is_named_with_its_player_table_round_and_transaction(transactions, said):
    named = found(MOVED, transactions)
    assert any(said in line for line in named), named
    assert all(line.startswith("anna:") for line in named)


def test_a_window_keeps_only_what_was_recorded_in_it():
    late = "2026-12-06T12:00:00.000000+00:00"
    transactions = [*PAID, transaction(30, "anna", "credit", 7, "delivered", at=late)]
    assert found(MOVED, transactions, end="2026-12-06T11:00:00.000000+00:00") == []
    named = found(MOVED, transactions, start="2026-12-06T11:00:00.000000+00:00")
    assert named == [f"anna: table {T} round {T}:1 {T}:30:anna: a credit of 7 (delivered) that no command of the "
                     "table's log moved", f"anna: round {T}:1: the table moved +0, the transactions +7"]


def test_the_wallets_report_is_held_to_what_the_service_counted_rolled_back_and_never_sent():
    report = [
        {"transaction": "deposit:1", "operation": "deposit", "player": "anna", "amount": 1000, "status": "applied",
         "balance": 1000},
        {"transaction": f"{T}:12:anna", "operation": "debit", "player": "anna", "amount": 100, "status": "rolled back",
         "balance": 900},
        {"transaction": f"{T}:12:anna:rollback", "operation": "rollback", "player": "anna", "amount": 100,
         "status": "applied", "balance": 1000},
        {"transaction": f"{T}:12:anna:2", "operation": "debit", "player": "anna", "amount": 100, "status": "applied",
         "balance": 900},
        {"transaction": f"{T}:20:anna", "operation": "credit", "player": "anna", "amount": 195, "status": "applied",
         "balance": 1095},
    ]
    transactions = [*PAID, {"position": 13, "transaction": f"{T}:12:anna:rollback", "operation": "rollback",
                            "player": "anna", "table": T, "version": 12, "round": f"{T}:1", "amount": 100,
                            "state": "delivered", "recorded_at": AT, "settled_at": AT, "of": f"{T}:12:anna"}]
    totals = {"anna": {"moved": 95}}
    reconciler = RECONCILE.Reconciler("http://127.0.0.1:1", None, 1.0, None, None)
    reconciler.against_report(report, transactions, totals)
    assert reconciler.found == [] and totals["anna"]["wallet"] == 1095 == totals["anna"]["expected"]
    planted = [*report[:3], {**report[3], "status": "refused"}, {**report[4], "amount": 196, "balance": 1096},
               {**report[4], "transaction": "made-up", "balance": 1291}]
    reconciler = RECONCILE.Reconciler("http://127.0.0.1:1", None, 1.0, None, None)
    reconciler.against_report(planted, transactions, {"anna": {"moved": 95}})
    named = "\n".join(reconciler.found)
    assert f"{T}:12:anna:2: the service's debit of 100 (counted) is refused in the wallet's report" in named
    assert f"{T}:20:anna: the service's credit is 195, the wallet's 196" in named
    assert "made-up: the wallet applied a credit of 195 the service has no transaction for" in named
    assert "anna: the wallet holds 1291; its deposits less withdrawals there plus his movements are 1095" in named
