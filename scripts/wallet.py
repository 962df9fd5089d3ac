#!/usr/bin/env python3
"""The reference wallet: an operator's wallet speaking the wallet protocol of docs/wallet.md, with a durable
file of accounts and faults that can be switched on, so that the service can be tested against every answer
a real wallet may give, and every answer it may fail to give.

    scripts/wallet --file var/wallet.jsonl [--host 127.0.0.1] [--port 0] [--token TOKEN] [--currency EUR]
    scripts/wallet --file var/wallet.jsonl --faults '{"mode": "random", "rate": 0.3, "seed": 7}' --verbose

Standard library only, nothing imported from this project: an operator can read it as the other side of the
protocol. The file is an append-only journal of JSON lines, one line for every change, written and synced
before the answer is sent; on start it is read again (a last line torn by a crash is dropped), so balances,
first answers and remembered rollbacks outlive any stop. docs/scripts.md lists the admin endpoints and the
fault modes.
"""

from __future__ import annotations

import argparse
import hmac
import json
import math
import os
import random
import signal
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

OPERATIONS = ("balance", "debit", "credit", "rollback", "reversal")
MODES = ("none", "refuse", "timeout", "late", "twice", "fail", "fail-after", "random")
RANDOM_FAULTS = ("timeout", "late", "twice", "fail", "fail-after")
FAULT_FIELDS = ("mode", "rate", "seconds", "operations", "seed")
MAX_BODY = 1 << 20
# What each operation must be sent besides `currency`; round, table and version are kept when given.
REQUIRED = {"balance": ("player",), "debit": ("transaction", "player", "amount"),
            "credit": ("transaction", "player", "amount"), "reversal": ("transaction", "player", "amount"),
            "rollback": ("transaction", "of", "player", "amount")}


class OneLineParser(argparse.ArgumentParser):
    """A mistake in the arguments is one line, what is wrong and what is allowed, and exit 2 (argparse alone
    prints the whole usage first)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (--help shows the usage)\n")


class BadRequest(Exception):
    """What the client sent is not what the protocol allows; the message says what is."""


class Corrupt(Exception):
    """The journal holds a line that is not a record: refusing to start beats serving wrong balances."""


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def is_whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def checked_faults(setting: object) -> dict:
    """A fault setting with its defaults filled in, or BadRequest saying what is allowed."""
    if not isinstance(setting, dict):
        raise BadRequest('faults are a JSON object: {"mode": M, "rate": 0..1, "seconds": S, "operations": [...], '
                         '"seed": N}')
    unknown = sorted(set(setting) - set(FAULT_FIELDS))
    if unknown:
        raise BadRequest(f"unknown fault field(s) {', '.join(unknown)}: allowed are {', '.join(FAULT_FIELDS)}")
    mode = setting.get("mode", "none")
    if mode not in MODES:
        raise BadRequest(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    rate, seconds = setting.get("rate", 1), setting.get("seconds", 30)
    if not (isinstance(rate, (int, float)) and not isinstance(rate, bool) and 0 <= rate <= 1):
        raise BadRequest(f"rate must be a number from 0 to 1, not {rate!r}")
    if not (isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and math.isfinite(seconds)
            and 0 <= seconds <= 3600):
        raise BadRequest(f"seconds must be a number from 0 to 3600, not {seconds!r}")
    operations = setting.get("operations", list(OPERATIONS))
    if not (isinstance(operations, list) and operations and all(op in OPERATIONS for op in operations)):
        raise BadRequest(f"operations must be a list of some of {', '.join(OPERATIONS)}, not {operations!r}")
    seed = setting.get("seed")
    if seed is not None and not is_whole(seed):
        raise BadRequest(f"seed must be a whole number, not {seed!r}")
    return {"mode": mode, "rate": rate, "seconds": seconds, "operations": operations, "seed": seed}


class Wallet:
    """The accounts, every transaction's first answer and its line of the report, behind one lock: a change
    is journalled and synced, then applied in memory by the same code that replays the journal on start, so
    what is served after a restart is what was answered before it."""

    def __init__(self, path: str, currency: str, faults: dict) -> None:
        self.path, self.currency = path, currency
        self.lock = threading.Lock()
        self.balances: dict[str, int] = {}
        self.answers: dict[str, dict] = {}
        self.entries: dict[str, dict] = {}  # transaction -> its report line, in the order they came
        self.rolled: dict[str, str] = {}  # a debit's id -> the first rollback of it
        self.requests = {op: 0 for op in OPERATIONS}
        self.injected = {mode: 0 for mode in MODES if mode not in ("none", "random")}
        self.set_faults(faults)
        self.journal = None
        self.good_length = self.replay()

    def replay(self) -> int:
        try:
            with open(self.path, "rb") as file:
                data = file.read()
        except FileNotFoundError:
            return 0
        end = data.rfind(b"\n") + 1  # what follows the last newline is a line the crash tore: never answered
        for number, line in enumerate(data[:end].splitlines(), 1):
            try:
                self.apply(json.loads(line))
            except (ValueError, KeyError, TypeError, AttributeError):
                raise Corrupt(f"{self.path} line {number} is not a record of this wallet's journal") from None
        return end

    def open(self) -> None:
        self.journal = open(self.path, "ab", buffering=0)  # noqa: SIM115 - kept open while serving
        self.journal.truncate(self.good_length)  # so that the next line does not continue a torn one

    def close(self) -> None:
        if self.journal is not None:
            self.journal.close()

    def apply(self, record: dict) -> None:
        entry, transaction = record["entry"], record["entry"]["transaction"]
        self.entries[transaction] = entry
        self.answers[transaction] = record["answer"]
        if entry["status"] == "applied":
            self.balances[entry["player"]] = int(entry["balance"])
        if entry["operation"] == "rollback":
            if entry["status"] == "applied":
                self.entries[entry["of"]]["status"] = "rolled back"
            self.rolled.setdefault(entry["of"], transaction)

    def record(self, entry: dict, answer: dict) -> dict:
        """Journals one change, synced before anyone is told of it, then applies it. Under the lock."""
        entry["at"] = now()
        record = {"entry": entry, "answer": answer}
        end = self.journal.tell()
        try:
            line = json.dumps(record, separators=(",", ":")).encode() + b"\n"
            if self.journal.write(line) != len(line):
                raise OSError(f"{self.path}: the journal took part of a line")
            os.fsync(self.journal.fileno())
        except OSError:
            self.journal.truncate(end)  # a half-written line would glue onto the next one and damage the file
            raise
        self.apply(record)
        return answer

    def set_faults(self, setting: dict) -> None:
        self.faults = setting
        self.chance = random.Random(setting["seed"])

    def fault_for(self, operation: str) -> str:
        """The fault this request gets ("none" for none), counted; the seeded draw makes a run repeatable."""
        with self.lock:
            self.requests[operation] += 1
            setting = self.faults
            if setting["mode"] == "none" or operation not in setting["operations"]:
                return "none"
            if setting["mode"] == "refuse" and operation != "debit":
                return "none"  # only a debit may be refused (docs/wallet.md, rule 2)
            if self.chance.random() >= setting["rate"]:
                return "none"
            mode = setting["mode"]
            if mode == "random":
                mode = self.chance.choice(RANDOM_FAULTS)
            self.injected[mode] += 1
            return mode

    def check(self, operation: str, body: object) -> dict:
        if not isinstance(body, dict):
            raise BadRequest(f"a {operation} is a JSON object")
        needed = (*REQUIRED[operation], "currency")
        missing = [name for name in needed if name not in body]
        if missing:
            raise BadRequest(f"missing {', '.join(missing)}: a {operation} takes {', '.join(needed)}"
                             + ("" if operation == "balance" else ", and round, table and version when known"))
        for name in ("transaction", "of", "player", "round", "table", "reason"):
            if name in body and not (isinstance(body[name], str) and body[name].strip()):
                raise BadRequest(f"{name} must be a text that is not empty, not {body[name]!r}")
        for name in ("amount", "version"):
            if name in body and not (is_whole(body[name]) and body[name] >= 0):
                raise BadRequest(f"{name} must be a whole number of 0 or more, not {body[name]!r}")
        if body["currency"] != self.currency:
            raise BadRequest(f"currency must be {self.currency}, not {body['currency']!r}")
        return body

    def entry(self, operation: str, body: dict, status: str, player: str, amount: int, balance: int) -> dict:
        entry = {"transaction": body["transaction"], "operation": operation, "player": player, "amount": amount,
                 "currency": self.currency, "status": status}
        if operation == "rollback":
            entry["of"] = body["of"]
        entry.update({name: body[name] for name in ("round", "table", "version") if name in body})
        entry["balance"] = balance
        return entry

    def operate(self, operation: str, body: dict, refuse: bool = False) -> dict:
        """The answer to one protocol call, the first answer again for a transaction id seen before. Nothing
        in memory changes before the journal holds the change (record)."""
        player = body["player"]
        with self.lock:
            held = self.balances.get(player, 0)
            if operation == "balance":
                return {"status": "ok", "player": player, "balance": held, "currency": self.currency}
            transaction, amount = body["transaction"], body["amount"]
            if transaction in self.answers:
                return self.answers[transaction]
            if operation == "debit":
                reason = ("rolled back" if transaction in self.rolled
                          else "refused by the wallet's fault setting" if refuse
                          else f"insufficient funds: holds {held}" if held < amount else None)
                if reason is not None:
                    return self.record(self.entry(operation, body, "refused", player, amount, held),
                                       {"status": "refused", "reason": reason})
            elif operation == "rollback":
                debit = self.entries.get(body["of"])
                if (body["of"] in self.rolled or debit is None or debit["operation"] != "debit"
                        or debit["status"] != "applied"):
                    return self.record(self.entry(operation, body, "remembered", player, amount, held),
                                       {"status": "ok", "balance": held})
                player, amount = debit["player"], debit["amount"]  # what was taken is what goes back
                held = self.balances.get(player, 0)
            balance = held - amount if operation in ("debit", "reversal") else held + amount
            return self.record(self.entry(operation, body, "applied", player, amount, balance),
                               {"status": "ok", "balance": balance})

    def cashier(self, player: str, operation: str, body: object) -> tuple[int, dict]:
        """A deposit or a withdrawal by the operator: (HTTP status, answer)."""
        if not isinstance(body, dict) or not is_whole(body.get("amount")) or body["amount"] < 0:
            raise BadRequest(f'a {operation} is {{"amount": a whole number of 0 or more, "transaction": an '
                             "optional id}")
        transaction = body.get("transaction", f"{operation}:{uuid.uuid4()}")
        if not (isinstance(transaction, str) and transaction.strip()):
            raise BadRequest(f"transaction must be a text that is not empty, not {transaction!r}")
        if body.get("currency", self.currency) != self.currency:
            raise BadRequest(f"currency must be {self.currency}, not {body['currency']!r}")
        amount = body["amount"]
        with self.lock:
            if transaction in self.answers:
                return 200, self.answers[transaction]
            held = self.balances.get(player, 0)
            if operation == "withdraw" and amount > held:
                return 409, {"status": "refused", "reason": f"insufficient funds: holds {held}"}
            balance = held + amount if operation == "deposit" else held - amount
            entry = self.entry("deposit" if operation == "deposit" else "withdrawal", {"transaction": transaction},
                               "applied", player, amount, balance)
            return 200, self.record(entry, {"status": "ok", "transaction": transaction, "player": player,
                                            "balance": balance, "currency": self.currency})

    def account(self, player: str) -> dict:
        return {"player": player, "balance": self.balances.get(player, 0), "currency": self.currency}

    def accounts(self) -> dict:
        with self.lock:
            return {"accounts": [self.account(player) for player in sorted(self.balances)]}

    def report(self) -> bytes:
        with self.lock:
            return b"".join(json.dumps(entry).encode() + b"\n" for entry in self.entries.values())

    def stats(self) -> dict:
        with self.lock:
            return {"requests": dict(self.requests), "faults": dict(self.injected)}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ZametanoReferenceWallet/1"
    timeout = 60  # an idle kept-alive connection does not hold its thread for ever
    wallet: Wallet
    token: str | None
    verbose: bool

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        if self.verbose:
            sys.stderr.write(f"wallet: {self.address_string()} {format % args}\n")

    def do_GET(self) -> None:
        self.serve("GET")

    def do_POST(self) -> None:
        self.serve("POST")

    def serve(self, method: str) -> None:
        try:
            self.route(method)
        except BadRequest as exc:
            self.answer(400, {"status": "bad request", "message": str(exc)})
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # the client gets one JSON line, never a traceback
            sys.stderr.write(f"wallet: error: {method} {self.path}: {type(exc).__name__}: {exc}\n")
            try:
                self.answer(500, {"status": "error", "message": f"the wallet failed: {type(exc).__name__}"})
            except OSError:
                self.close_connection = True

    def body(self) -> object:
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_BODY:
            self.close_connection = True
            raise BadRequest(f"a body of 0 to {MAX_BODY} bytes, with its Content-Length")
        data = self.rfile.read(length)
        try:
            return json.loads(data)
        except (ValueError, RecursionError):
            raise BadRequest("the body must be a JSON object") from None

    def route(self, method: str) -> None:
        if self.token is not None:
            given = self.headers.get("Authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {self.token}".encode()):
                self.close_connection = True  # its body is left unread
                self.answer(401, {"status": "unauthorized", "message": "send Authorization: Bearer <token>"},
                            extra={"WWW-Authenticate": "Bearer"})
                return
        path = self.path.split("?", 1)[0]
        parts = [unquote(part) for part in path.strip("/").split("/")]
        wallet = self.wallet
        if method == "POST" and len(parts) == 1 and parts[0] in OPERATIONS:
            self.protocol(parts[0], self.body())
        elif method == "POST" and len(parts) == 3 and parts[0] == "accounts" and parts[2] in ("deposit", "withdraw"):
            self.answer(*wallet.cashier(parts[1], parts[2], self.body()))
        elif method == "GET" and len(parts) == 2 and parts[0] == "accounts":
            with wallet.lock:
                self.answer(200, wallet.account(parts[1]))
        elif method == "GET" and parts == ["accounts"]:
            self.answer(200, wallet.accounts())
        elif method == "GET" and parts == ["report"]:
            self.send(200, wallet.report(), "application/x-ndjson")
        elif method == "GET" and parts == ["stats"]:
            self.answer(200, wallet.stats())
        elif parts == ["faults"]:
            if method == "POST":
                setting = checked_faults(self.body())
                with wallet.lock:
                    wallet.set_faults(setting)
            self.answer(200, dict(wallet.faults))
        else:
            self.close_connection = True
            self.answer(404, {"status": "not found", "message": (
                "the wallet answers POST /balance, /debit, /credit, /rollback, /reversal, "
                "/accounts/<player>/deposit, /accounts/<player>/withdraw, /faults; "
                "GET /accounts, /accounts/<player>, /report, /faults, /stats")})

    def protocol(self, operation: str, body: object) -> None:
        body = self.wallet.check(operation, body)
        fault = self.wallet.fault_for(operation)
        if fault == "fail":
            self.answer(500, {"status": "error", "message": "failed by the wallet's fault setting, nothing applied"})
            return
        answer = self.wallet.operate(operation, body, refuse=fault == "refuse")
        seconds = self.wallet.faults["seconds"]
        if fault == "timeout":
            time.sleep(seconds)
            self.close_connection = True  # applied, and never told: the caller's timeout fires first
            return
        if fault == "late":
            time.sleep(seconds)
        if fault == "fail-after":
            self.answer(500, {"status": "error", "message": "failed by the wallet's fault setting, after applying"})
            return
        self.answer(200, answer, twice=fault == "twice")

    def answer(self, status: int, body: dict, twice: bool = False, extra: dict | None = None) -> None:
        self.send(status, json.dumps(body).encode(), "application/json", twice, extra)

    def send(self, status: int, data: bytes, kind: str, twice: bool = False, extra: dict | None = None) -> None:
        for _ in range(2 if twice else 1):
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (extra or {}).items():
                self.send_header(name, value)
            if twice or self.close_connection:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            self.wfile.write(data)


class Server(ThreadingHTTPServer):
    daemon_threads = True  # a held answer (timeout, late) does not keep the wallet from stopping
    verbose = False

    def handle_error(self, request: object, client_address: object) -> None:
        if self.verbose:
            sys.stderr.write(f"wallet: connection from {client_address} failed: {sys.exc_info()[1]!r}\n")


def port_number(text: str) -> int:
    if not (text.isdigit() and int(text) <= 65535):
        raise argparse.ArgumentTypeError(f"must be a whole number from 0 to 65535, not {text!r}")
    return int(text)


def token_text(text: str) -> str:
    if len(text) < 16 or any(c.isspace() for c in text):
        raise argparse.ArgumentTypeError("must be 16 characters or more, without spaces (as ZAMETANO_WALLET_TOKEN)")
    return text


def currency_code(text: str) -> str:
    if not (len(text) == 3 and text.isascii() and text.isalpha() and text.isupper()):
        raise argparse.ArgumentTypeError(f"must be 3 capital letters, such as EUR, not {text!r}")
    return text


def fault_setting(text: str) -> dict:
    try:
        return checked_faults(json.loads(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a JSON object, not {text!r}") from None
    except BadRequest as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = OneLineParser(prog="wallet", description=(
        "The reference wallet of docs/wallet.md: POST /balance, /debit, /credit, /rollback, /reversal; "
        "admin endpoints and fault modes in docs/scripts.md."))
    parser.add_argument("--file", required=True, help="the journal of JSON lines (made if absent)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=port_number, default=0, help="port (default 0: one the system chooses)")
    parser.add_argument("--token", type=token_text, help="every request must send Authorization: Bearer TOKEN")
    parser.add_argument("--currency", type=currency_code, default="EUR", help="the one currency (default EUR)")
    parser.add_argument("--faults", type=fault_setting, default=checked_faults({}),
                        help='the fault setting at start, as POST /faults takes it: {"mode": "timeout", ...}')
    parser.add_argument("--verbose", action="store_true", help="one line on stderr for every request")
    args = parser.parse_args(argv)
    folder = os.path.dirname(os.path.abspath(args.file))
    if not os.path.isdir(folder):
        parser.error(f"--file: no folder {folder!r} to keep the journal in")
    if os.path.exists(args.file) and not os.path.isfile(args.file):
        parser.error(f"--file: {args.file!r} is not a file")
    return args


class Stop(Exception):
    pass


def stop(signum: int, frame: object) -> None:
    raise Stop


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        wallet = Wallet(args.file, args.currency, args.faults)
    except (Corrupt, OSError) as exc:
        print(f"wallet: error: {exc}", file=sys.stderr)
        return 2
    handler = type("WalletHandler", (Handler,), {"wallet": wallet, "token": args.token, "verbose": args.verbose})
    try:
        server = Server((args.host, args.port), handler)
    except (OSError, OverflowError) as exc:
        print(f"wallet: error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    server.verbose = args.verbose
    try:
        wallet.open()
        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        host, port = server.server_address[:2]
        print(f"wallet listening on http://{host}:{port}", flush=True)
        server.serve_forever()
    except (Stop, KeyboardInterrupt):
        pass
    finally:
        server.server_close()
        wallet.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
