"""scripts/verify-shoe and scripts/audit fed by a hostile server or a hostile file: JSON nested 100,000 deep, a
body without end, numbers too long to read, a shoe of a billion decks, wrong types anywhere, NUL bytes, terminal
escape sequences, C1 controls and lone surrogates in any string.

Each case runs the script as a process, as an auditor would, against a small server of the standard library
on 127.0.0.1 (tests/unit/test_verifiers_hostile_input.py's Hostile, answering crafted bytes) or a crafted file,
with a generous timeout for the process (a bound, not a measure of speed). What each must do: answer within
that bound, never with a traceback, never with a false "ok" (exit 2 with one line where what was given is no
answer of the service or no exported log; exit 1 with the problem named where an event of a log is wrong),
and never write a control character as it is: whatever is quoted is escaped.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import threading
import unicodedata
import urllib.parse
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tests import concealing, helpers
from tests.served import audit

ROOT = Path(__file__).resolve().parents[2]
VERIFY_SHOE, AUDIT = ROOT / "scripts" / "verify-shoe", ROOT / "scripts" / "audit"
TIMEOUT = 120  # seconds for one run of a script: far above what any case takes
TABLE = "t-1"
EVENTS = f"/tables/{TABLE}/events"
# Shuffle vector 2 (seed 00 01 ... 1f, one deck, cut 17) and its first cards.
SEED = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
COMMITMENT = "630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd"
ESCAPES = "\x1b[2J\x1b]0;owned\x07\x9b31m\x00\ud800\u202e"  # clear screen, OSC title, C1 CSI, NUL, lone surrogate, RLO
KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(2, 34)))


def honest_log() -> list[dict[str, Any]]:
    """A rule-3 table: opened, one deck shuffled and cut, four cards dealt (one face down), the seed revealed."""
    shuffled = {"shoe": 1, "deck": "shoe", "decks": 1, "algorithm": "hmac-sha256-fisher-yates-v1",
                "commitment": COMMITMENT}
    bodies = [("TableOpened", {"game": "chemin-de-fer", "players": ["anna", "boris"], "rules": {}}),
              ("ShoeShuffled", shuffled), ("ShoeCut", {"shoe": 1, "position": 17}),
              *(("CardDealt", {"shoe": 1, "position": i, "card": card, "to": "anna", "face_up": i != 1})
                for i, card in enumerate(["Kh", "6h", "2d", "8h"])),
              ("ShoeRevealed", {"shoe": 1, "seed": SEED})]
    events = [{"version": v, "type": t, "timestamp": f"2026-12-06T10:00:{v:02d}.000000+00:00", "actor": "anna",
               "data": data} for v, (t, data) in enumerate(bodies, start=1)]
    return concealing.rechain(events, TABLE)


LOG = honest_log()


def log() -> list[dict[str, Any]]:
    return copy.deepcopy(LOG)


def as_json(value: Any) -> bytes:
    return json.dumps(value).encode("utf-8")


def page(events: list[Any], next_after: Any = None) -> bytes:
    return as_json({"events": events, "next_after": next_after})


def head() -> dict[str, Any]:
    last = LOG[-1]
    fields = {"table_id": TABLE, "version": last["version"], "digest": last["digest"], "timestamp": last["timestamp"]}
    return {**fields, "receipt": helpers.sign_receipt(KEY, fields)}


ENDLESS = object()  # a body that never ends
Answer = tuple[int, Any]  # (status, bytes or ENDLESS)
Route = Answer | Callable[[dict[str, str]], Answer]


def honest_routes() -> dict[str, Route]:
    """What the service would answer, path by path, for the honest log."""
    checks = {"chain": True, "cards": True, "rules": True, "money": True, "read_model": True}
    return {
        "/openapi.json": (200, as_json({"openapi": "3.0.2", "x-games": {"chemin-de-fer": {}}})),
        "/keys": (200, as_json({"keys": [helpers.key_listing(KEY)]})),
        "/tables": (200, as_json({"tables": [{"table_id": TABLE, "game": "chemin-de-fer"}], "next_cursor": None})),
        EVENTS: (200, page(LOG)),
        f"/tables/{TABLE}/verify": (200, as_json({"ok": True, "chain": {"ok": True, "first_broken_version": None},
                                                  "problems": []})),
        f"/tables/{TABLE}/head": (200, as_json(head())),
        f"/tables/{TABLE}/rounds": (200, as_json({"rounds": [{"round": 1}], "next_cursor": None})),
        f"/tables/{TABLE}/rounds/1": (200, as_json({"round": 1, "events": LOG[3:7], "checks": checks,
                                                    "problems": []})),
        f"/tables/{TABLE}/decisions": (200, as_json({"decisions": [], "players": {}, "next_cursor": None})),
    }


class Hostile:
    """A server answering each path (its query aside) from `routes`; a 404 in the API's form elsewhere."""

    def __init__(self, routes: dict[str, Route]) -> None:
        self.routes = routes

    def handler(self) -> type[BaseHTTPRequestHandler]:
        routes = self.routes

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the standard library's name
                url = urllib.parse.urlsplit(self.path)
                route = routes.get(url.path, (404, as_json({"code": 404, "message": "no such path"})))
                status, body = route(dict(urllib.parse.parse_qsl(url.query))) if callable(route) else route
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                if body is ENDLESS:
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.endless()
                    return
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def endless(self) -> None:
                chunk = b"[" * (1024 * 1024)
                try:
                    while True:
                        self.wfile.write(chunk)
                except OSError:  # the client has read what it reads, and closed
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


@pytest.fixture
def hostile() -> Iterator[Callable[[dict[str, Route]], str]]:
    """hostile(overrides) -> the base URL of a server answering the honest routes with these overrides."""
    running: list[tuple[ThreadingHTTPServer, threading.Thread]] = []

    def start(overrides: dict[str, Route]) -> str:
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Hostile({**honest_routes(), **overrides}).handler())
        httpd.daemon_threads = True
        thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
        thread.start()
        running.append((httpd, thread))
        return f"http://127.0.0.1:{httpd.server_address[1]}"

    yield start
    for httpd, thread in running:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def run(script: Path, *argv: str) -> tuple[int, str, str]:
    """The script run as a process, as an auditor runs it (no token in its environment)."""
    env = {k: v for k, v in os.environ.items() if k not in ("ZAMETANO_TOKEN", "ZAMETANO_TOKENS", "PYTHONPATH")}
    done = subprocess.run([sys.executable, str(script), *argv], capture_output=True, timeout=TIMEOUT, env=env,
                          cwd=ROOT, check=False)
    return done.returncode, done.stdout.decode("utf-8"), done.stderr.decode("utf-8")


def raw_controls(text: str) -> list[str]:
    """The control and format characters written as they are (line breaks between lines aside)."""
    return [repr(ch) for ch in text if ch != "\n" and unicodedata.category(ch) in ("Cc", "Cf", "Cs")]


def assert_answered(code: int, out: str, err: str, expected: int, words: str, script: str) -> None:
    """The verdict: the expected exit status, the words said, no traceback, nothing raw; exit 2 in one line."""
    assert code == expected, (code, out, err)
    assert "Traceback" not in err and not raw_controls(out + err), (out, err)
    assert words in out + err, (words, out, err)
    if expected == 2 and script == "verify-shoe":
        said = [line for line in err.splitlines() if not line.startswith("fetched ")]
        assert out == "" and len(said) == 1 and said[0].startswith("verify-shoe: error: "), (out, err)


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def with_data(at: int, **fields: Any) -> list[dict[str, Any]]:
    """The honest log with these fields of the data of the event at version `at` set."""
    events = log()
    events[at - 1]["data"].update(fields)
    return events


def with_field(at: int, **fields: Any) -> list[Any]:
    """The honest log with these fields of the event at version `at` set."""
    events: list[Any] = log()
    events[at - 1].update(fields)
    return events


def empty_pages(query: dict[str, str]) -> Answer:
    return 200, page([], int(query.get("after", 0)) + 1)


# --- an events page from a hostile server: (overrides of the events page, exit status, words said) -----------------

EVENTS_PAGES: dict[str, tuple[Route, int, str]] = {
    "arrays nested 100,000 deep": ((200, deep(100_000).encode()), 2, "nested deeper than 100 levels"),
    "an event's data nested 100,000 deep": ((200, (
        '{"events": [{"version": 1, "type": "TableOpened", "timestamp": "t", "actor": "a", "digest": "", "data": '
        + '{"a": ' * 100_000 + "1" + "}" * 100_000 + '}], "next_after": null}').encode()), 2, "nested deeper"),
    "nested 500 deep, below Python's own limit": ((200, page([{"data": json.loads(deep(500))}])), 2, "nested deeper"),
    "a body without end": ((200, ENDLESS), 2, "answered more than 32 MiB"),
    "a number of 5,000 digits": ((200, b'{"events": [], "next_after": ' + b"9" * 5000 + b"}"), 2,
                                 "a number of more than 4300 digits"),
    "NUL bytes in the body": ((200, b'{"events": [\x00], "next_after": null}'), 2, "did not answer with JSON"),
    "no UTF-8": ((200, b'\xff\xfe{"events"'), 2, "did not answer with JSON"),
    "a list for the page": ((200, as_json(LOG)), 2, "did not answer with {'events': [...], 'next_after': ...}"),
    "an object for the events": ((200, as_json({"events": {}, "next_after": None})), 2, "did not answer with"),
    "null for the page": ((200, b"null"), 2, "did not answer with"),
    "next_after a string": ((200, page(LOG[:2], "2")), 2, "paging does not advance"),
    "next_after true": ((200, page(LOG[:2], True)), 2, "paging does not advance"),
    "next_after a list": ((200, page(LOG[:2], [3])), 2, "paging does not advance"),
    "empty pages without end": (empty_pages, 2, "paging does not advance"),
    "escapes in an error's message": ((404, as_json({"code": 404, "message": "gone " + ESCAPES})), 2,
                                      "gone \\x1b[2J\\x1b]0;owned\\x07\\x9b31m\\x00\\ud800\\u202e"),
    "an error body nested 100,000 deep": ((500, deep(100_000).encode()), 2, "answered HTTP 500"),
    "an error body without end": ((500, ENDLESS), 2, "answered HTTP 500"),
    "a billion decks": ((200, page(with_data(2, decks=10**9))), 1,
                        "decks 1000000000 is not a whole number from 1 to 64"),
    "decks of 4,000 digits": ((200, page(with_data(2, decks=int("7" * 4000)))), 1,
                              "is not a whole number from 1 to 64"),
    "a position past any shoe": ((200, page(with_data(4, position=10**30))), 1, "is outside any shoe"),
    "a cut of 3,000 digits": ((200, page(with_data(3, position=int("9" * 3000)))), 1, "is outside the shoe"),
    "a version that is a string": ((200, page(with_field(3, version="3"))), 1, "broken at version 3"),
    "a version null": ((200, page(with_field(3, version=None))), 1, "broken at version 3"),
    "a type that is a list": ((200, page(with_field(2, type=["ShoeShuffled"]))), 1, "broken at version 2"),
    "a timestamp that is a number": ((200, page(with_field(5, timestamp=5))), 1, "timestamp 5 is not RFC 3339"),
    "an actor that is an object": ((200, page(with_field(5, actor={"a": 1}))), 1, "broken at version 5"),
    "data that is a list": ((200, page(with_field(4, data=[1]))), 1, "its data is not a JSON object"),
    "a digest null": ((200, page(with_field(6, digest=None))), 1, "broken at version 6"),
    "no digest": ((200, page([{k: v for k, v in e.items() if k != "digest" or e["version"] != 6} for e in LOG])), 1,
                  "the event has no field 'digest'"),
    "events that are no objects": ((200, page([LOG[0], None, "x", 5, [], True])), 1, "is not a JSON object"),
    "a shoe number that is a string": ((200, page(with_data(2, shoe="1"))), 1, "names no shoe number"),
    "a seed that is a number": ((200, page(with_data(8, seed=5))), 1, "the reveal carries no seed"),
    "a seed of escapes": ((200, page(with_data(8, seed=ESCAPES))), 1, "is not hex"),
    "a commitment that is a list": ((200, page(with_data(2, commitment=[COMMITMENT]))), 1,
                                    "the shuffle records no commitment"),
    "a table id that is a list": ((200, page(with_data(1, table_id=[TABLE]))), 1, "the events were moved"),
    "a table id of escapes": ((200, page(with_data(1, table_id=ESCAPES))), 1, "\\x1b[2J"),
    "salts that are a list": ((200, page(with_field(5, salts=["/card"]))), 1, "its salts is not a JSON object"),
    "a salt of escapes": ((200, page(with_field(5, salts={"/card": ESCAPES}))), 1, "not 32 lowercase hex digits"),
    "a pointer of escapes": ((200, page(with_field(5, concealed={"/" + ESCAPES: "commit:" + "0" * 64}))), 1,
                             "names no part of its data"),
    "escapes in the actor, type and card": ((200, page(with_field(4, actor=ESCAPES, type="CardDealt" + ESCAPES))),
                                            1, "broken at version 4"),
    "escapes in a deck's name": ((200, page(with_data(2, deck=ESCAPES))), 1, "\\x1b[2J"),
    "a lone surrogate in a dealt card": ((200, page(with_data(4, card="\ud800"))), 1, "lone surrogate"),
    "NaN in the data": ((200, b'{"events": ' + json.dumps(with_data(3, x=float("nan"))).encode()
                         + b', "next_after": null}'), 1, "broken at version 3"),
}


@pytest.mark.parametrize("case", EVENTS_PAGES)
def test_verify_shoe_answers_a_hostile_events_page_in_one_clear_way(
    case: str, hostile: Callable[[dict[str, Route]], str]
) -> None:
    route, expected, words = EVENTS_PAGES[case]
    base = hostile({EVENTS: route})

    code, out, err = run(VERIFY_SHOE, f"{base}/tables/{TABLE}")

    assert_answered(code, out, err, expected, words, "verify-shoe")


@pytest.mark.parametrize("case", [c for c, (route, _, _) in EVENTS_PAGES.items() if not callable(route)
                                  and route[0] == 200 and route[1] is not ENDLESS])
def test_audit_answers_a_hostile_events_page_without_a_traceback_or_a_false_ok(
    case: str, hostile: Callable[[dict[str, Route]], str]
) -> None:
    route, expected, words = EVENTS_PAGES[case]
    base = hostile({EVENTS: route})

    code, out, err = run(AUDIT, f"{base}/tables/{TABLE}", "--rounds")

    assert_answered(code, out, err, expected, "" if expected == 1 else words, "audit")
    if expected == 2:
        assert out == "" and err.splitlines()[-1].startswith("audit: error: ") and words in err, (out, err)


def test_the_honest_routes_verify_so_that_each_case_fails_by_its_own_alteration(
    hostile: Callable[[dict[str, Route]], str], tmp_path: Path
) -> None:
    base = hostile({})
    heads = tmp_path / "heads.jsonl"

    assert run(VERIFY_SHOE, f"{base}/tables/{TABLE}")[0] == 0
    code, out, err = run(AUDIT, base, "--all", "--rounds", "--decisions", "--save-heads", str(heads))
    assert code == 0, out + err
    assert run(AUDIT, base, "--heads", str(heads))[0] == 0
    assert run(VERIFY_SHOE, str(write(tmp_path / "log.ndjson", ndjson(LOG))), "--table-id", TABLE)[0] == 0


# --- the other answers the audit reads: (the path, its answer, the audit's options, exit status, words said) -------

ROUND = f"/tables/{TABLE}/rounds/1"
OTHER_ANSWERS: dict[str, tuple[str, Route, tuple[str, ...], int, str]] = {
    "a table id of escapes in the listing": ("/tables", (200, as_json({"tables": [{"table_id": ESCAPES}],
                                                                       "next_cursor": None})), ("--all",), 2,
                                             "listed a table without a table_id: {'table_id': '\\x1b[2J"),
    "a table id of 100,000 characters": ("/tables", (200, as_json({"tables": [{"table_id": "x" * 100_000}],
                                                                   "next_cursor": None})), ("--all",), 2,
                                         "listed a table without a table_id"),
    "a game that is a list": ("/tables", (200, as_json({"tables": [{"table_id": TABLE, "game": [ESCAPES]}],
                                                        "next_cursor": None})), ("--all",), 0, "1 of 1 table ok"),
    "a listing nested 100,000 deep": ("/tables", (200, deep(100_000).encode()), ("--all",), 2, "nested deeper"),
    "empty listing pages without end": ("/tables", lambda q: (200, as_json({"tables": [], "next_cursor": "c" + q.get(
        "cursor", "")})), ("--all",), 2, "paging does not advance"),
    "problems of escapes and wrong types": (f"/tables/{TABLE}/verify", (200, as_json({
        "ok": False, "chain": {"first_broken_version": None}, "problems": [
            {"check": ESCAPES, "version": "3", "message": ESCAPES, "type": {"a": ESCAPES}},
            {"check": ["x"], "message": 5}, ESCAPES, None, [1]]})), (), 1, "\\x1b[2J"),
    "a verify answer nested 100,000 deep": (f"/tables/{TABLE}/verify", (200, deep(100_000).encode()), (), 2,
                                            "nested deeper"),
    "a round without a number": (f"/tables/{TABLE}/rounds", (200, as_json({"rounds": [{"round": ESCAPES}],
                                                                            "next_cursor": None})), ("--rounds",), 2,
                                 "listed a round without a number"),
    "a round's events of junk": (ROUND, (200, as_json({"events": [None, ESCAPES, {"version": "x"}, {**LOG[4],
        "data": {"card": ESCAPES}}], "checks": {"chain": True}, "problems": [ESCAPES]})), ("--rounds",), 1,
        "round 1 events"),
    "a round's events not a list": (ROUND, (200, as_json({"events": {"a": 1}, "checks": {}, "problems": []})),
                                    ("--rounds",), 1, "shows no list of events"),
    "a round's audit nested 100,000 deep": (ROUND, (200, deep(100_000).encode()), ("--rounds",), 2, "nested deeper"),
    "a key listing of junk": ("/keys", (200, as_json({"keys": [None, {"key_id": ESCAPES}, {"key_id": ["k"]},
                                                                {"key_id": "k", "algorithm": "Ed25519",
                                                                 "public_key": ESCAPES}]})), ("--all", "--save-heads",
                                                                                              "HEADS"), 1,
                              "is signed by key"),
    "a head of wrong types": (f"/tables/{TABLE}/head", (200, as_json({"receipt": {
        "table_id": TABLE, "version": "9", "digest": [], "timestamp": None, "key_id": 1, "signature": ESCAPES}})),
        ("--all", "--save-heads", "HEADS"), 1, "is not a signed head"),
    "decisions of wrong types": (f"/tables/{TABLE}/decisions", (200, as_json({"decisions": [
        {"player": ["anna"], "to": {"boris": 5}}, {"player": "anna", "to": ["boris"]},
        {"player": "anna", "to": {"boris": int("9" * 400), ESCAPES: 2.5, "vera": True}, "round": [1]},
        {"player": ESCAPES, "to": {"boris": 1}, "round": "1"}], "players": {ESCAPES: {"decisions": ESCAPES}},
        "next_cursor": None})), ("--all", "--decisions"), 0, "flagged"),
}


@pytest.mark.parametrize("case", OTHER_ANSWERS)
def test_the_audit_answers_every_hostile_answer_without_a_traceback_or_a_false_ok(
    case: str, hostile: Callable[[dict[str, Route]], str], tmp_path: Path
) -> None:
    path, route, options, expected, words = OTHER_ANSWERS[case]
    base = hostile({path: route})
    argv = [str(tmp_path / "heads.jsonl") if option == "HEADS" else option for option in options]

    code, out, err = run(AUDIT, base if "--all" in options else f"{base}/tables/{TABLE}", *argv)

    assert_answered(code, out, err, expected, words, "audit")


# --- hostile files ------------------------------------------------------------------------------------------------


def write(path: Path, content: str | bytes) -> Path:
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))
    return path


def ndjson(events: list[Any]) -> str:
    return "".join(json.dumps(e) + "\n" for e in events)


# An exported log given to verify-shoe: (the file's content, exit status, words said).
EXPORTS: dict[str, tuple[str | bytes, int, str]] = {
    "arrays nested 100,000 deep": (deep(100_000), 2, "line 1 is JSON nested deeper than 100 levels"),
    "one line of them among events": (ndjson(LOG[:2]) + deep(100_000) + "\n", 2,
                                      "line 3 is JSON nested deeper than 100 levels"),
    "a number of 5,000 digits": (ndjson(LOG[:2]) + "9" * 5000 + "\n", 2, "line 3 is JSON with a number of more"),
    "NUL bytes": (b'{"version": 1\x00}\n', 2, "line 1 is not JSON"),
    "no UTF-8": (b"\xff\xfe\xfd\n", 2, "is not UTF-8 text"),
    "empty": ("\n \n", 2, "is empty"),
    "a string": (json.dumps(ESCAPES), 2, "holds a string, not an exported log"),
    "null": ("null", 2, "holds null"),
    "a billion decks": (ndjson(with_data(2, decks=10**9)), 1, "decks 1000000000 is not a whole number from 1 to 64"),
    "wrong types": (ndjson(with_field(3, version=None)), 1, "broken at version 3"),
    "escapes everywhere": (ndjson(with_field(4, actor=ESCAPES, type=ESCAPES, timestamp=ESCAPES)), 1,
                           "timestamp '\\x1b[2J"),
    "a page written over several lines": (json.dumps({"events": LOG, "next_after": None}, indent=2), 0,
                                          "chained under rule 3"),
}


@pytest.mark.parametrize("case", EXPORTS)
def test_verify_shoe_answers_a_hostile_exported_log_in_one_clear_way(case: str, tmp_path: Path) -> None:
    content, expected, words = EXPORTS[case]
    path = write(tmp_path / "table.ndjson", content)

    code, out, err = run(VERIFY_SHOE, str(path), "--table-id", TABLE)

    assert_answered(code, out, err, expected, words, "verify-shoe")


def receipt(**fields: Any) -> str:
    return json.dumps({**head()["receipt"], **fields})


# A --heads or --receipts file given to the audit: (the file's content, exit status, words said).
HELD_FILES: dict[str, tuple[str | bytes, int, str]] = {
    "arrays nested 100,000 deep": (deep(100_000), 2, "line 1 is JSON nested deeper than 100 levels"),
    "NUL bytes": (b'{"receipt": {\x00}}\n', 2, "line 1 is not JSON"),
    "no UTF-8": (b"\xff\xfe\n", 2, "is not UTF-8 text"),
    "a version of 5,000 digits": ('{"receipt": {"version": ' + "9" * 5000 + "}}\n", 2, "a number of more than 4300"),
    "a version that is a string": (receipt(version="8") + "\n", 2, "its version '8' is not a whole number from 1"),
    "a signature that is a list": (receipt(signature=["x"]) + "\n", 2, "its signature is not a string"),
    "a table id of 100,000 characters": (receipt(table_id="x" * 100_000) + "\n", 2, "its table_id is not a table's id"),
    "a table id of escapes": (receipt(table_id=ESCAPES) + "\n", 2, "its table_id is not a table's id"),
    "escapes in the other fields": (receipt(digest=ESCAPES, timestamp=ESCAPES, key_id=ESCAPES) + "\n", 1,
                                    "is signed by key \\x1b[2J"),
    "a lone surrogate in a signed field": (receipt(timestamp="\ud800") + "\n", 1, "lone surrogate"),
    "a key line of junk": ('{"keys": [null, {"key_id": "' + "\\u001b[2J" + '"}]}\n' + receipt() + "\n", 0,
                           "1 with a signature that verifies"),
}


@pytest.mark.parametrize("option", ["--heads", "--receipts"])
@pytest.mark.parametrize("case", HELD_FILES)
def test_the_audit_answers_a_hostile_heads_or_receipts_file_in_one_clear_way(
    case: str, option: str, hostile: Callable[[dict[str, Route]], str], tmp_path: Path
) -> None:
    content, expected, words = HELD_FILES[case]
    path = write(tmp_path / "held.jsonl", content)
    base = hostile({})

    code, out, err = run(AUDIT, base, option, str(path))

    assert_answered(code, out, err, expected, words, "audit")
    if expected == 2:
        assert out == "" and err.splitlines() == [err.splitlines()[0]], (out, err)
        assert err.startswith(f"audit: error: {path}") and words in err, err


def test_files_past_the_cap_are_not_read_further(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The caps themselves (256 MiB), shown with a cap of 1 KiB: what is past it is not read."""
    monkeypatch.setattr(audit.vs, "MAX_FILE_BYTES", 1024)  # verify-shoe, as the audit loads it
    big = write(tmp_path / "big.ndjson", ndjson(LOG))
    assert big.stat().st_size > 1024

    assert audit.vs.main([str(big)]) == 2
    assert capsys.readouterr().err == f"verify-shoe: error: {big} is larger than 1024 bytes: not read further\n"
    assert audit.main(["http://127.0.0.1:9", "--heads", str(big)]) == 2
    assert f"audit: error: {big} is larger than 1024 bytes: not read further" in capsys.readouterr().err
