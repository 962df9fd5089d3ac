"""scripts/wallet: the reference wallet of docs/wallet.md, run as the real script on a port of its own.

Each test starts the script in its own folder (port 0, the port read from its start-up line) and kills it
afterwards; requests go over HTTP with the standard library, as the service's would.
"""

from __future__ import annotations

import http.client
import json
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "wallet"
TOKEN = "wallet-token-0123456789"
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


class Wallet:
    """A running scripts/wallet: its process, its address and its journal."""

    def __init__(self, file: Path, *options: str) -> None:
        self.file, self.options = file, options
        self.token: str | None = options[options.index("--token") + 1] if "--token" in options else None
        self.process = subprocess.Popen([sys.executable, str(SCRIPT.with_suffix(".py")), "--file", str(file),
                                         "--port", "0", *options], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        line = self.process.stdout.readline() if self.process.stdout else ""
        match = re.fullmatch(r"wallet listening on http://([\d.]+):(\d+)\n", line)
        if match is None:
            raise AssertionError(f"no start-up line: {line!r} {self.kill()}")
        self.host, self.port = match.group(1), int(match.group(2))

    def kill(self) -> str:
        """Kills it if it runs; what it wrote on stderr."""
        if self.process.poll() is None:
            self.process.kill()
        return self.process.communicate(timeout=10)[1] or ""  # waits, and closes its pipes

    def call(self, method: str, path: str, body: Any = None, timeout: float = 5, raw: bytes | None = None,
             token: str | None = "default") -> tuple[int, Any]:
        """(status, the JSON answer, or the text when it is not JSON)."""
        connection = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        headers = {"Content-Type": "application/json"}
        token = self.token if token == "default" else token
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        try:
            connection.request(method, path, body=data, headers=headers)
            response = connection.getresponse()
            text = response.read().decode()
        finally:
            connection.close()
        try:
            return response.status, json.loads(text)
        except ValueError:
            return response.status, text

    def post(self, path: str, body: Any, **options: Any) -> Any:
        status, answer = self.call("POST", path, body, **options)
        assert status == 200, (status, answer)
        return answer

    def balance(self, player: str) -> int:
        return self.post("/balance", {"player": player, "currency": "EUR"})["balance"]

    def report(self) -> list[dict[str, Any]]:
        status, text = self.call("GET", "/report")
        assert status == 200
        if isinstance(text, dict):  # a single line is also a JSON object
            return [text]
        return [json.loads(line) for line in text.splitlines()]


@pytest.fixture
def started(tmp_path: Path) -> Iterator[Any]:
    """Starts wallets on files of tmp_path; every one is killed at the end, whatever happened."""
    running: list[Wallet] = []

    def start(*options: str, file: str = "wallet.jsonl") -> Wallet:
        wallet = Wallet(tmp_path / file, *options)
        running.append(wallet)
        return wallet

    yield start
    for wallet in running:
        wallet.kill()


def debit(transaction: str, amount: int, player: str = "anna", **more: Any) -> dict[str, Any]:
    return {"transaction": transaction, "player": player, "amount": amount, "currency": "EUR", "round": "t1:1",
            "table": "t1", "version": 3, **more}


def deposit(wallet: Wallet, player: str, amount: int) -> None:
    wallet.post(f"/accounts/{player}/deposit", {"amount": amount})


# --- the protocol ----------------------------------------------------------------------------------------


def test_a_deposit_shows_in_the_balance_and_the_account(started: Any) -> None:
    wallet = started()
    assert wallet.balance("anna") == 0
    deposit(wallet, "anna", 1000)
    assert wallet.post("/balance", {"player": "anna", "currency": "EUR"}) == {
        "status": "ok", "player": "anna", "balance": 1000, "currency": "EUR"}
    assert wallet.call("GET", "/accounts/anna") == (200, {"player": "anna", "balance": 1000, "currency": "EUR"})
    deposit(wallet, "boris", 5)
    assert wallet.call("GET", "/accounts")[1]["accounts"] == [
        {"player": "anna", "balance": 1000, "currency": "EUR"}, {"player": "boris", "balance": 5, "currency": "EUR"}]


def test_a_debit_within_the_balance_is_applied_and_one_above_it_is_refused_saying_what_it_holds(started: Any) -> None:
    wallet = started()
    deposit(wallet, "anna", 100)
    assert wallet.post("/debit", debit("d1", 60)) == {"status": "ok", "balance": 40}
    assert wallet.post("/debit", debit("d2", 50)) == {"status": "refused", "reason": "insufficient funds: holds 40"}
    assert wallet.balance("anna") == 40


@pytest.mark.parametrize("operation", ["debit", "credit", "rollback", "reversal"])
def test_a_repeated_transaction_is_answered_with_its_first_answer_and_applied_once(started: Any,
                                                                                     operation: str) -> None:
    wallet = started()
    deposit(wallet, "anna", 100)
    if operation == "rollback":
        wallet.post("/debit", debit("d1", 30))
    body = debit("x1", 30, of="d1") if operation == "rollback" else debit("x1", 30)
    first = wallet.post(f"/{operation}", body)
    deposit(wallet, "anna", 1)  # the balance moves on; the first answer does not
    assert wallet.post(f"/{operation}", body) == first
    assert wallet.post(f"/{operation}", {**body, "amount": 7}) == first
    expected = {"debit": 70, "credit": 130, "rollback": 100, "reversal": 70}[operation]
    assert first == {"status": "ok", "balance": expected}
    assert wallet.balance("anna") == expected + 1


def test_a_rollback_before_its_debit_applies_nothing_and_the_debit_is_then_refused_as_rolled_back(started: Any) -> None:
    wallet = started()
    deposit(wallet, "anna", 100)
    assert wallet.post("/rollback", debit("d1:rollback", 30, of="d1")) == {"status": "ok", "balance": 100}
    assert wallet.post("/debit", debit("d1", 30)) == {"status": "refused", "reason": "rolled back"}
    assert wallet.balance("anna") == 100


def test_a_rollback_after_its_debit_gives_the_amount_back_once(started: Any) -> None:
    wallet = started()
    deposit(wallet, "anna", 100)
    wallet.post("/debit", debit("d1", 30))
    assert wallet.post("/rollback", debit("d1:rollback", 30, of="d1")) == {"status": "ok", "balance": 100}
    assert wallet.post("/rollback", debit("d1:rollback:again", 30, of="d1")) == {"status": "ok", "balance": 100}
    assert wallet.balance("anna") == 100


def test_a_reversal_and_a_credit_are_never_refused_and_a_reversal_may_go_below_zero(started: Any) -> None:
    wallet = started()
    deposit(wallet, "anna", 10)
    assert wallet.post("/reversal", debit("v1", 50, reason="void")) == {"status": "ok", "balance": -40}
    assert wallet.post("/credit", debit("c1", 20, reason="payout")) == {"status": "ok", "balance": -20}


def test_the_report_has_a_line_a_transaction_with_its_status_balance_and_round(started: Any) -> None:
    wallet = started()
    deposit(wallet, "anna", 100)
    wallet.post("/debit", debit("d1", 30))
    wallet.post("/rollback", debit("d1:rollback", 30, of="d1"))
    wallet.post("/rollback", debit("d2:rollback", 10, of="d2"))
    wallet.post("/debit", debit("d3", 500))
    wallet.post("/credit", debit("c1", 20, reason="payout"))
    wallet.post("/accounts/anna/withdraw", {"amount": 5, "transaction": "w1"})
    lines = wallet.report()
    assert [(line["operation"], line["status"], line["balance"]) for line in lines] == [
        ("deposit", "applied", 100), ("debit", "rolled back", 70), ("rollback", "applied", 100),
        ("rollback", "remembered", 100), ("debit", "refused", 100), ("credit", "applied", 120),
        ("withdrawal", "applied", 115)]
    assert all(STAMP.match(line["at"]) for line in lines)
    assert lines[1] == {"transaction": "d1", "operation": "debit", "player": "anna", "amount": 30, "currency": "EUR",
                        "status": "rolled back", "round": "t1:1", "table": "t1", "version": 3, "balance": 70,
                        "at": lines[1]["at"]}
    assert lines[2]["of"] == "d1" and lines[6]["transaction"] == "w1" and "round" not in lines[0]


def test_debits_at_once_never_take_more_than_the_balance(started: Any) -> None:
    wallet = started()
    deposit(wallet, "anna", 100)
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda n: wallet.post("/debit", debit(f"d{n}", 10)), range(16)))
    assert sum(answer["status"] == "ok" for answer in answers) == 10
    assert wallet.balance("anna") == 0


def test_a_withdrawal_above_the_balance_is_refused_with_409(started: Any) -> None:
    wallet = started()
    deposit(wallet, "anna", 10)
    assert wallet.call("POST", "/accounts/anna/withdraw", {"amount": 11}) == (
        409, {"status": "refused", "reason": "insufficient funds: holds 10"})
    assert wallet.balance("anna") == 10


# --- durability ------------------------------------------------------------------------------------------


def test_killed_and_restarted_on_its_file_it_keeps_balances_first_answers_and_remembered_rollbacks(
        started: Any) -> None:
    wallet = started()
    deposit(wallet, "anna", 100)
    first = wallet.post("/debit", debit("d1", 30))
    wallet.post("/rollback", debit("d2:rollback", 10, of="d2"))
    wallet.post("/debit", debit("d3", 20))
    wallet.post("/rollback", debit("d3:rollback", 20, of="d3"))
    report = wallet.report()
    wallet.process.send_signal(signal.SIGKILL)
    wallet.kill()
    with wallet.file.open("ab") as file:
        file.write(b'{"entry": {"transaction": "torn"')  # a line the crash cut short

    again = started()
    assert again.balance("anna") == 70
    assert again.post("/debit", debit("d1", 30)) == first
    assert again.post("/debit", debit("d2", 10)) == {"status": "refused", "reason": "rolled back"}
    assert again.post("/rollback", debit("d3:rollback:2", 20, of="d3")) == {"status": "ok", "balance": 70}
    assert again.report()[:len(report)] == report
    again.kill()
    assert started().balance("anna") == 70  # written after the torn line, read back whole


def test_a_journal_with_a_damaged_line_is_refused_at_start_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "wallet.jsonl").write_text("not a record\n{}\n")
    done = subprocess.run([str(SCRIPT), "--file", str(tmp_path / "wallet.jsonl")], capture_output=True, text=True,
                          timeout=20)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "line 1" in done.stderr, done


def test_sigterm_stops_it_cleanly(started: Any) -> None:
    wallet = started()
    wallet.process.send_signal(signal.SIGTERM)
    assert wallet.process.wait(timeout=10) == 0


# --- faults ----------------------------------------------------------------------------------------------


def faults(wallet: Wallet, **setting: Any) -> None:
    wallet.post("/faults", setting)


def test_a_timeout_fault_applies_the_debit_and_never_answers(started: Any) -> None:
    wallet = started()
    deposit(wallet, "anna", 100)
    faults(wallet, mode="timeout", seconds=2, operations=["debit"])
    with pytest.raises((OSError, http.client.HTTPException)):
        wallet.call("POST", "/debit", debit("d1", 30), timeout=0.5)
    assert wallet.balance("anna") == 70
    assert wallet.call("GET", "/faults")[1] == {"mode": "timeout", "rate": 1, "seconds": 2, "operations": ["debit"],
                                                 "seed": None}
    faults(wallet, mode="none")
    assert wallet.post("/debit", debit("d1", 30)) == {"status": "ok", "balance": 70}  # its first answer


def test_a_late_fault_applies_and_answers_after_its_seconds(started: Any) -> None:
    wallet = started()
    faults(wallet, mode="late", seconds=0.4)
    begun = time.monotonic()
    assert wallet.post("/credit", debit("c1", 5)) == {"status": "ok", "balance": 5}
    assert time.monotonic() - begun >= 0.4


def test_a_twice_fault_sends_the_same_answer_twice_and_applies_once(started: Any) -> None:
    wallet = started()
    faults(wallet, mode="twice")
    body = json.dumps(debit("c1", 5)).encode()
    with socket.create_connection((wallet.host, wallet.port), timeout=5) as connection:
        connection.sendall(b"POST /credit HTTP/1.1\r\nHost: wallet\r\nContent-Type: application/json\r\n"
                           b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    assert received.count(b"HTTP/1.1 200 OK") == 2 and received.count(b'{"status": "ok", "balance": 5}') == 2
    faults(wallet, mode="none")
    assert wallet.balance("anna") == 5


def test_a_fail_fault_answers_500_and_applies_nothing(started: Any) -> None:
    wallet = started()
    faults(wallet, mode="fail", operations=["credit"])
    assert wallet.call("POST", "/credit", debit("c1", 5))[0] == 500
    assert wallet.balance("anna") == 0
    faults(wallet, mode="none")
    assert wallet.post("/credit", debit("c1", 5)) == {"status": "ok", "balance": 5}


def test_a_fail_after_fault_applies_then_answers_500(started: Any) -> None:
    wallet = started()
    faults(wallet, mode="fail-after")
    assert wallet.call("POST", "/credit", debit("c1", 5))[0] == 500
    faults(wallet, mode="none")
    assert wallet.balance("anna") == 5
    assert wallet.post("/credit", debit("c1", 5)) == {"status": "ok", "balance": 5}


def test_a_refuse_fault_refuses_debits_alone_and_applies_nothing(started: Any) -> None:
    wallet = started("--faults", '{"mode": "refuse"}')
    deposit(wallet, "anna", 100)
    assert wallet.post("/debit", debit("d1", 5)) == {"status": "refused",
                                                      "reason": "refused by the wallet's fault setting"}
    assert wallet.post("/credit", debit("c1", 5)) == {"status": "ok", "balance": 105}


def test_a_random_fault_with_a_seed_gives_a_repeatable_mix(started: Any) -> None:
    setting = '{"mode": "random", "rate": 0.6, "seconds": 0, "operations": ["credit"], "seed": 11}'
    seen = []
    for file in ("one.jsonl", "two.jsonl"):
        wallet = started("--faults", setting, file=file)
        outcomes = []
        for n in range(40):
            try:
                outcomes.append(wallet.call("POST", "/credit", debit(f"c{n}", 1))[0])
            except (OSError, http.client.HTTPException):
                outcomes.append("closed")
        stats = wallet.call("GET", "/stats")[1]
        seen.append((outcomes, stats))
        assert stats["requests"]["credit"] == 40
        assert sum(stats["faults"].values()) > 5 and len([n for n in stats["faults"].values() if n]) >= 4, stats
        assert {200, 500, "closed"} <= set(outcomes)
    assert seen[0] == seen[1]


# --- mistakes --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "said"), [
    (b"{not json", "JSON object"),
    (json.dumps({"player": "anna", "amount": 5, "currency": "EUR"}).encode(), "missing transaction"),
    (json.dumps(debit("d1", -5)).encode(), "whole number of 0 or more"),
    (json.dumps(debit("d1", 1.5)).encode(), "whole number of 0 or more"),
    (json.dumps(debit("d1", "5")).encode(), "whole number of 0 or more"),
    (json.dumps(debit("d1", 5, currency="USD")).encode(), "currency must be EUR"),
])
def test_a_bad_request_is_answered_400_saying_what_is_allowed_and_applies_nothing(started: Any, raw: bytes,
                                                                                 said: str) -> None:
    wallet = started()
    deposit(wallet, "anna", 100)
    status, answer = wallet.call("POST", "/debit", raw=raw)
    assert status == 400 and answer["status"] == "bad request" and said in answer["message"], answer
    assert wallet.balance("anna") == 100
    assert wallet.call("POST", "/faults", {"mode": "sometimes"})[0] == 400


def test_with_a_token_a_request_without_it_is_answered_401(started: Any) -> None:
    wallet = started("--token", TOKEN)
    assert wallet.call("POST", "/balance", {"player": "anna", "currency": "EUR"}, token=None)[0] == 401
    assert wallet.call("GET", "/report", token="wrong-token-0123456789")[0] == 401
    assert wallet.balance("anna") == 0


@pytest.mark.parametrize("argv", [[], ["--file", "w.jsonl", "--port", "70000"], ["--file", "w.jsonl", "--token", "x"],
                                  ["--file", "w.jsonl", "--currency", "euro"], ["--file", "w.jsonl", "--faults", "{"],
                                  ["--file", "w.jsonl", "--faults", '{"rate": 2}'], ["--file", "none/w.jsonl"],
                                  ["--bogus"]])
def test_an_argument_mistake_is_one_line_and_exit_2_with_nothing_written(tmp_path: Path, argv: list[str]) -> None:
    done = subprocess.run([str(SCRIPT), *argv], cwd=tmp_path, capture_output=True, text=True, timeout=20)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done
    assert done.stderr.startswith("wallet: error: ") and "--help" in done.stderr and not done.stdout
    assert list(tmp_path.iterdir()) == []
