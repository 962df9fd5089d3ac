"""scripts/audit holds the service to what it signed: --save-heads, --heads and --receipts, and a damaged log.

The service here is a small stand-in that answers the URLs the audit reads (events, verify, tables, keys,
heads) from logs kept in memory, signing its heads with Ed25519 by the `cryptography` package as the
receipt format says. A test rewrites a log as someone with the database could: cuts it short, rewrites
an event and chains every later one again, leaves a version out, or makes a page unreadable.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from domain.chain import digest, format_timestamp
from tests import helpers
from tests.served import problem_lines, row_of

audit = helpers.load_script("audit", "zametano_audit")
START = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)


# --- the house: a stand-in service that signs its heads ----------------------------------------------


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


class House:
    """Logs in memory, served as the service serves them; heads signed with `self.key`."""

    def __init__(self) -> None:
        self.key = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
        self.keys = [helpers.key_listing(self.key)]
        self.logs: dict[str, list[dict[str, Any]]] = {}
        self.listed: list[str] = []
        self.failures: dict[str, int] = {}  # "path?query": the HTTP status to answer with
        self.head_body: dict[str, Any] | None = None  # answers GET .../head instead, when set
        self.unreadable: dict[str, int] = {}  # table: a version whose stored event the service cannot read

    def open(self, events: int) -> str:
        table_id = str(uuid.uuid4())
        self.logs[table_id] = []
        self.listed.append(table_id)
        self.play(table_id, events)
        return table_id

    def play(self, table_id: str, events: int) -> None:
        log = self.logs[table_id]
        for _ in range(events):
            version = len(log) + 1
            type_, data = ("TableOpened", {"game": "chemin-de-fer", "players": ["anna", "boris"]}) if version == 1 \
                else ("StakePlaced", {"player": "anna", "amount": 10 * version})
            log.append({"version": version, "type": type_, "timestamp": format_timestamp(START + timedelta(
                seconds=version)), "actor": "anna", "data": data, "digest": ""})
        self.rechain(table_id)

    def rechain(self, table_id: str) -> None:
        """Every digest computed again from the first: what someone rewriting the store would do."""
        prev = ""
        for event in self.logs[table_id]:
            event["digest"] = digest(prev, event["version"], event["type"], event["timestamp"], event["actor"],
                                     event["data"])
            prev = event["digest"]

    def receipt(self, table_id: str, version: int | None = None) -> dict[str, Any]:
        event = self.logs[table_id][-1 if version is None else version - 1]
        fields = {"table_id": table_id, "version": event["version"], "digest": event["digest"],
                  "timestamp": event["timestamp"]}
        return helpers.sign_receipt(self.key, fields)

    def __call__(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        path, query = environ["PATH_INFO"], parse_qs(environ.get("QUERY_STRING", ""))
        status, body = self.answer(path, query, f"{path}?{environ.get('QUERY_STRING', '')}")
        start_response(f"{status} {'OK' if status == 200 else 'Error'}", [("Content-Type", "application/json")])
        return [json.dumps(body).encode()]

    def answer(self, path: str, query: dict[str, list[str]], full: str) -> tuple[int, Any]:
        if full in self.failures or path in self.failures:
            status = self.failures.get(full, self.failures.get(path))
            return status, {"code": status, "status": "Error", "message": "the store could not be read"}
        parts = path.strip("/").split("/")
        if parts == ["keys"]:
            return 200, {"keys": self.keys}
        if parts == ["tables"]:
            return 200, {"tables": [{"table_id": t, "game": "chemin-de-fer"} for t in self.listed],
                         "next_cursor": None}
        if len(parts) < 2 or parts[0] != "tables" or parts[1] not in self.logs:
            return 404, {"code": 404, "status": "Not Found", "message": "no such table"}
        log = self.logs[parts[1]]
        if parts[2:] == ["events"]:
            after, limit = int(query["after"][0]), int(query["limit"][0])
            rest = [e for e in log if not isinstance(e, dict) or not isinstance(e.get("version"), int)
                    or e["version"] > after]
            page = rest[:limit]
            damaged = self.unreadable.get(parts[1])
            if damaged is not None and any(e.get("version") == damaged for e in page if isinstance(e, dict)):
                # as the service refuses a page over a row it cannot decode
                return 409, {"code": 409, "status": "Conflict", "damaged_version": damaged,
                             "message": f"The stored history of table '{parts[1]}' is damaged: the stored event "
                                        f"at version {damaged} cannot be read.", "verify": f"{path[:-7]}/verify"}
            return 200, {"events": page, "next_after": page[-1]["version"] if len(rest) > limit else None}
        if parts[2:] == ["verify"]:
            return 200, {"ok": True, "chain": {"events": len(log), "ok": True, "first_broken_version": None},
                         "problems": []}
        if parts[2:] == ["head"]:
            if self.head_body is not None:
                return 200, self.head_body
            receipt = self.receipt(parts[1])
            return 200, {**{k: receipt[k] for k in ("table_id", "version", "digest", "timestamp")},
                         "receipt": receipt}
        return 404, {"code": 404, "status": "Not Found", "message": "no such path"}


@pytest.fixture
def house(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[House, str]]:
    monkeypatch.delenv("ZAMETANO_TOKEN", raising=False)
    stand_in = House()
    httpd = make_server("127.0.0.1", 0, stand_in, handler_class=QuietHandler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield stand_in, f"http://127.0.0.1:{httpd.server_port}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


# --- running the script and reading what it prints --------------------------------------------------


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = audit.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def listed_problem(out: str, table_id: str, source: str, version: int | None, *fragments: str) -> bool:
    """Whether a problem of `source` at `version` whose message holds every fragment is listed for the table."""
    where = f"version {version}" if version is not None else "-"
    for line in problem_lines(out, table_id):
        if line.startswith(source + " ") and line[len(source):].lstrip().startswith(where + " ") and all(
                fragment in line for fragment in fragments):
            return True
    return False


def read_lines(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def saved(house: tuple[House, str], tmp_path: Path, capsys: Any) -> tuple[House, str, Path, list[str]]:
    """Two tables whose heads were saved (at versions 7 and 3) by an audit that found all well."""
    stand_in, base = house
    tables = [stand_in.open(7), stand_in.open(3)]
    heads = tmp_path / "heads.jsonl"
    code, out, err = run(capsys, base, "--all", "--save-heads", str(heads))
    assert code == 0, out + err
    return stand_in, base, heads, tables


# --- saving heads and holding the service to them ----------------------------------------------------


def test_saved_heads_are_the_keys_then_one_verified_receipt_a_table(
    house: tuple[House, str], tmp_path: Path, capsys: Any
) -> None:
    stand_in, base = house
    tables = [stand_in.open(7), stand_in.open(3)]
    heads = tmp_path / "heads.jsonl"

    code, out, err = run(capsys, base, "--all", "--save-heads", str(heads))

    assert code == 0, out + err
    assert read_lines(heads) == [{"keys": stand_in.keys}, *({"receipt": stand_in.receipt(t)} for t in tables)]
    for table_id in tables:
        assert row_of(out, table_id)["heads"] == "ok"
        assert row_of(out, table_id)["result"] == "ok"
    key_id = stand_in.keys[0]["key_id"]
    assert f"2 by key {key_id}, listed in the service's GET /keys" in out
    assert f"saved the signed heads of 2 tables and 1 key to {heads}" in err


def test_heads_hold_while_the_tables_go_on(saved: tuple[House, str, Path, list[str]], capsys: Any) -> None:
    stand_in, base, heads, tables = saved
    stand_in.play(tables[0], 5)  # an honest table only grows

    code, out, err = run(capsys, base, "--all", "--heads", str(heads))

    assert code == 0, out + err
    assert [row_of(out, t)["heads"] for t in tables] == ["ok", "ok"]
    assert f"2 by key {stand_in.keys[0]['key_id']}, listed in {heads}" in out  # the kept key, not the service's
    assert "2 of 2 tables ok" in out


def test_only_the_tables_of_the_heads_file_are_audited_without_all(
    saved: tuple[House, str, Path, list[str]], capsys: Any
) -> None:
    stand_in, base, heads, tables = saved
    stand_in.open(4)  # opened after the heads were saved

    code, out, _ = run(capsys, base, "--heads", str(heads))

    assert code == 0, out
    assert "2 of 2 tables ok" in out


def test_a_log_cut_short_after_its_head_was_saved_fails_naming_the_table_and_the_version(
    saved: tuple[House, str, Path, list[str]], capsys: Any
) -> None:
    stand_in, base, heads, tables = saved
    signed = stand_in.receipt(tables[0])
    del stand_in.logs[tables[0]][5:]  # versions 6 and 7 gone; what is left chains perfectly

    code, out, err = run(capsys, base, "--all", "--heads", str(heads))

    assert code == 1, out + err
    row = row_of(out, tables[0])
    assert (row["events"], row["chain"], row["heads"], row["result"]) == ("5", "ok", "FAILED", "problem")
    assert listed_problem(out, tables[0], "heads", 7, f"the house signed version 7 (digest {signed['digest']}, "
                          f"{signed['timestamp']}), but the log ends at version 5", f"{heads} line 2")
    assert row_of(out, tables[1])["result"] == "ok"
    assert "Traceback" not in err


def test_what_the_house_signed_is_listed_first_however_much_else_is_wrong(
    saved: tuple[House, str, Path, list[str]], capsys: Any
) -> None:
    stand_in, base, heads, tables = saved
    stand_in.play(tables[0], 30)
    log = stand_in.logs[tables[0]]
    log[:] = [dict(e) for e in log[:5] for _ in range(2)]  # cut to 5, every event twice: 5 problems and more

    code, out, _ = run(capsys, base, "--all", "--heads", str(heads))

    assert code == 1, out
    listed = problem_lines(out, tables[0])
    assert listed[0].startswith("heads          version 7") and "but the log ends at version 5" in listed[0], out


def test_a_head_signed_by_a_key_the_service_does_not_list_is_saved_and_a_failure(
    house: tuple[House, str], tmp_path: Path, capsys: Any
) -> None:
    stand_in, base = house
    table_id = stand_in.open(3)
    stand_in.keys = [helpers.key_listing(Ed25519PrivateKey.from_private_bytes(bytes([4]) * 32))]
    heads = tmp_path / "heads.jsonl"

    code, out, _ = run(capsys, f"{base}/tables/{table_id}", "--save-heads", str(heads))

    assert code == 1, out
    assert row_of(out, table_id)["heads"] == "FAILED"
    assert listed_problem(out, table_id, "head", 3, f"is signed by key {stand_in.receipt(table_id)['key_id']}",
                          "the head fetched now")
    assert read_lines(heads) == [{"keys": stand_in.keys}, {"receipt": stand_in.receipt(table_id)}]  # as evidence


def test_a_rewritten_log_chained_again_fails_at_the_signed_version(
    saved: tuple[House, str, Path, list[str]], capsys: Any
) -> None:
    stand_in, base, heads, tables = saved
    signed = stand_in.receipt(tables[0])
    stand_in.logs[tables[0]][3]["data"]["amount"] = 1  # the stake of version 4, lowered
    stand_in.rechain(tables[0])
    now = stand_in.logs[tables[0]][6]

    code, out, _ = run(capsys, base, "--all", "--heads", str(heads))

    assert code == 1, out
    row = row_of(out, tables[0])
    assert (row["chain"], row["heads"]) == ("ok", "FAILED")  # only what was signed shows it
    assert listed_problem(out, tables[0], "heads", 7, f"digest signed {signed['digest']}, log has {now['digest']}")
    assert not any("timestamp signed" in line for line in problem_lines(out, tables[0]))


def test_a_moved_timestamp_is_named_with_the_digest_it_changed(
    saved: tuple[House, str, Path, list[str]], capsys: Any
) -> None:
    stand_in, base, heads, tables = saved
    signed = stand_in.receipt(tables[1])
    last = stand_in.logs[tables[1]][2]
    last["timestamp"] = format_timestamp(START + timedelta(days=1))
    stand_in.rechain(tables[1])

    code, out, _ = run(capsys, base, "--all", "--heads", str(heads))

    assert code == 1, out
    assert listed_problem(out, tables[1], "heads", 3, f"digest signed {signed['digest']}, log has {last['digest']}",
                          f"; timestamp signed {signed['timestamp']}, log has {last['timestamp']}")


def test_a_receipt_whose_signature_does_not_verify_is_not_the_houses(
    house: tuple[House, str], tmp_path: Path, capsys: Any
) -> None:
    stand_in, base = house
    table_id = stand_in.open(5)
    genuine = stand_in.receipt(table_id, 5)
    altered = {**genuine, "digest": "0" * 64}  # someone's claim, with the house's signature of something else
    impostor = Ed25519PrivateKey.from_private_bytes(bytes([7]) * 32)
    claimed = helpers.sign_receipt(impostor, {k: genuine[k] for k in ("table_id", "version", "digest", "timestamp")},
                   key_id=genuine["key_id"])  # signed by another key under the house's key id
    receipts = tmp_path / "receipts.jsonl"
    receipts.write_text(json.dumps(altered) + "\n" + json.dumps(claimed) + "\n")

    code, out, err = run(capsys, base, "--receipts", str(receipts))

    assert code == 1, out + err
    assert row_of(out, table_id)["heads"] == "FAILED"
    for line in (1, 2):
        assert listed_problem(out, table_id, "receipt", 5, "the receipt of version 5 is not the house's",
                              f"does not verify with key {genuine['key_id']}", f"{receipts} line {line}")
    assert not any("the house signed" in line for line in problem_lines(out, table_id))  # it did not


def test_a_receipt_signed_by_a_key_nobody_lists_is_a_failure(
    house: tuple[House, str], tmp_path: Path, capsys: Any
) -> None:
    stand_in, base = house
    table_id = stand_in.open(5)
    stranger = Ed25519PrivateKey.from_private_bytes(bytes([9]) * 32)
    fields = {k: v for k, v in stand_in.receipt(table_id).items() if k not in ("key_id", "signature")}
    receipt = helpers.sign_receipt(stranger, fields)
    receipts = tmp_path / "receipts.jsonl"
    receipts.write_text(json.dumps(receipt) + "\n")

    code, out, _ = run(capsys, f"{base}/tables/{table_id}", "--receipts", str(receipts))

    assert code == 1, out
    assert listed_problem(out, table_id, "receipt", 5, f"is signed by key {receipt['key_id']}",
                          "neither a keys line of the files nor the service's GET /keys lists it")


def test_keys_kept_in_the_heads_file_hold_after_the_service_stops_listing_them(
    saved: tuple[House, str, Path, list[str]], capsys: Any
) -> None:
    stand_in, base, heads, tables = saved
    old = stand_in.keys[0]["key_id"]
    stand_in.key = Ed25519PrivateKey.from_private_bytes(bytes([3]) * 32)
    stand_in.keys = [helpers.key_listing(stand_in.key)]  # the old key dropped from GET /keys

    code, out, _ = run(capsys, base, "--heads", str(heads))

    assert code == 0, out
    assert f"2 by key {old}, listed in {heads}" in out


def test_a_key_listed_under_an_id_that_is_not_its_own_is_of_no_use(
    house: tuple[House, str], tmp_path: Path, capsys: Any
) -> None:
    stand_in, base = house
    table_id = stand_in.open(2)
    receipt = stand_in.receipt(table_id)
    other = helpers.key_listing(Ed25519PrivateKey.from_private_bytes(bytes([5]) * 32))
    stand_in.keys = [{**stand_in.keys[0], "public_key": other["public_key"]}]
    receipts = tmp_path / "r.jsonl"
    receipts.write_text(json.dumps(receipt) + "\n")

    code, out, err = run(capsys, base, "--receipts", str(receipts))

    assert code == 1, out
    assert listed_problem(out, table_id, "receipt", 2, f"the service's GET /keys lists it, but its public key's id "
                                                       f"is {other['key_id']}")
    assert "is of no use" in err


def test_receipts_collected_from_command_responses_hold_the_service_with_the_heads(
    saved: tuple[House, str, Path, list[str]], tmp_path: Path, capsys: Any
) -> None:
    stand_in, base, heads, tables = saved
    stand_in.play(tables[0], 3)  # versions 8 to 10, each answered with a receipt
    responses = [{"version": v, "digest": stand_in.logs[tables[0]][v - 1]["digest"], "events": [], "state": {},
                  "receipt": stand_in.receipt(tables[0], v)} for v in (8, 9)]
    opened = {"table_id": tables[1], "state": {}, "receipt": stand_in.receipt(tables[1], 1)}  # a 201 of POST /tables
    first = tmp_path / "terminal-1.jsonl"
    first.write_text("\n".join(json.dumps(r) for r in responses) + "\n\n" + json.dumps(opened) + "\n")
    second = tmp_path / "terminal-2.jsonl"
    second.write_text(json.dumps(stand_in.receipt(tables[0], 10)) + "\n")  # a bare receipt

    ok = run(capsys, base, "--heads", str(heads), "--receipts", str(first), "--receipts", str(second))
    stand_in.logs[tables[0]][8]["data"]["amount"] = 5
    stand_in.rechain(tables[0])
    code, out, _ = run(capsys, base, "--heads", str(heads), "--receipts", str(first), "--receipts", str(second))

    assert ok[0] == 0, ok[1] + ok[2]
    assert "signed receipts: 6 held, 6 with a signature that verifies" in ok[1]
    assert code == 1
    assert listed_problem(out, tables[0], "receipt", 9, "digest signed", f"{first} line 2")
    assert listed_problem(out, tables[0], "receipt", 10, "digest signed", f"{second} line 1")
    assert not any(line.startswith("receipt") and "version 8 " in line for line in problem_lines(out, tables[0]))
    assert not any(line.startswith("heads") for line in problem_lines(out, tables[0]))  # version 7 untouched


def test_a_table_the_house_signed_for_and_no_longer_has_is_a_failure(
    saved: tuple[House, str, Path, list[str]], capsys: Any
) -> None:
    stand_in, base, heads, tables = saved
    del stand_in.logs[tables[1]]
    stand_in.listed.remove(tables[1])

    for argv in ([base, "--heads", str(heads)], [base, "--all", "--heads", str(heads)]):
        code, out, err = run(capsys, *argv)

        assert code == 1, out + err
        assert row_of(out, tables[1])["heads"] == "FAILED"
        assert listed_problem(out, tables[1], "heads", 3, "the house signed version 3",
                              "which the service no longer has", "HTTP 404")
        assert row_of(out, tables[0])["result"] == "ok"


def test_a_table_signed_for_that_the_listing_leaves_out_is_a_failure(
    saved: tuple[House, str, Path, list[str]], capsys: Any
) -> None:
    stand_in, base, heads, tables = saved
    stand_in.listed.remove(tables[1])  # still served, no longer listed

    code, out, _ = run(capsys, base, "--all", "--heads", str(heads))

    assert code == 1, out
    assert listed_problem(out, tables[1], "heads", 3, "of a table that GET /tables no longer lists")


def test_a_head_whose_body_contradicts_its_receipt_is_a_problem(
    house: tuple[House, str], tmp_path: Path, capsys: Any
) -> None:
    stand_in, base = house
    table_id = stand_in.open(4)
    receipt = stand_in.receipt(table_id)
    stand_in.head_body = {"table_id": table_id, "version": 5, "digest": receipt["digest"],
                          "timestamp": receipt["timestamp"], "receipt": receipt}

    code, out, _ = run(capsys, f"{base}/tables/{table_id}", "--save-heads", str(tmp_path / "h.jsonl"))

    assert code == 1, out
    assert listed_problem(out, table_id, "head", 4, "the head says version 5, its receipt signs 4")


# --- a damaged log or service: a problem at its version, never a traceback ------------------------------


def test_an_events_page_the_service_cannot_read_is_a_problem_at_its_version(
    saved: tuple[House, str, Path, list[str]], capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    stand_in, base, heads, tables = saved
    monkeypatch.setattr(audit.vs, "PAGE_SIZE", 3)
    stand_in.failures[f"/tables/{tables[0]}/events?after=3&limit=3"] = 500

    code, out, err = run(capsys, base, "--all", "--heads", str(heads))

    assert code == 1, out + err
    row = row_of(out, tables[0])
    assert (row["events"], row["chain"], row["heads"]) == ("3", "ok", "FAILED")  # the pages before still checked
    assert listed_problem(out, tables[0], "log", 4, "the log cannot be read past version 3", "HTTP 500",
                          "the store could not be read")
    assert listed_problem(out, tables[0], "heads", 7, "but the log cannot be read past version 3")
    assert row_of(out, tables[1])["result"] == "ok"  # paged too, and whole
    assert "Traceback" not in err


@pytest.mark.parametrize("page_size", [3, 200])
def test_an_event_the_service_cannot_read_is_named_and_the_log_read_around_it(
    saved: tuple[House, str, Path, list[str]], capsys: Any, monkeypatch: pytest.MonkeyPatch, page_size: int
) -> None:
    stand_in, base, heads, tables = saved
    monkeypatch.setattr(audit.vs, "PAGE_SIZE", page_size)
    stand_in.unreadable[tables[0]] = 4

    code, out, err = run(capsys, base, "--all", "--heads", str(heads))

    assert code == 1, out + err
    row = row_of(out, tables[0])
    assert (row["events"], row["heads"], row["result"]) == ("6", "ok", "problem")  # versions 5 to 7 read too
    assert listed_problem(out, tables[0], "log", 4, "the service cannot read the stored event at version 4",
                          "HTTP 409", "is damaged")
    assert not any("missing from the log" in line for line in problem_lines(out, tables[0]))  # named once
    assert row_of(out, tables[1])["result"] == "ok"
    assert "Traceback" not in err


def test_a_signed_head_the_service_cannot_read_fails_the_heads(
    saved: tuple[House, str, Path, list[str]], capsys: Any
) -> None:
    stand_in, base, heads, tables = saved
    stand_in.unreadable[tables[1]] = 3

    code, out, _ = run(capsys, base, "--all", "--heads", str(heads))

    assert code == 1, out
    assert row_of(out, tables[1])["heads"] == "FAILED"
    assert listed_problem(out, tables[1], "heads", 3, "the house signed version 3",
                          "but the service cannot read the stored event at that version")


def test_a_first_events_page_answering_500_is_a_problem_even_for_a_single_table(
    house: tuple[House, str], capsys: Any
) -> None:
    stand_in, base = house
    table_id = stand_in.open(3)
    stand_in.failures[f"/tables/{table_id}/events"] = 500

    code, out, err = run(capsys, f"{base}/tables/{table_id}")

    assert code == 1, out + err
    assert listed_problem(out, table_id, "log", 1, "the log cannot be read from its first version", "HTTP 500")
    assert "Traceback" not in err


def reorder(log: list[dict[str, Any]]) -> None:
    log[3], log[4] = log[4], log[3]


@pytest.mark.parametrize(
    "damage, version, fragments",
    [
        (lambda log: log.pop(3), 4, ["version 4 is missing from the log (it holds versions 3 and 5)"]),
        (lambda log: log.__delitem__(slice(2, 5)), 3, ["versions 3 to 5 are missing from the log"]),
        (reorder, 4, ["version 4 comes after version 5: out of order"]),
        (lambda log: log.insert(3, dict(log[2])), 3, ["version 3 is in the log twice"]),
        (lambda log: log[4].pop("digest"), 5, ["the event has no 'digest'"]),
        (lambda log: log[4].update(version="5"), None, ["event 5 of the log, after version 4, has version '5'"]),
        (lambda log: log.__setitem__(4, "not an event"), None, ["event 5 of the log, after version 4, "
                                                                "is not a JSON object"]),
    ],
    ids=["gap", "long-gap", "out-of-order", "repeated", "missing-field", "version-not-a-number", "not-an-object"],
)
def test_a_damaged_log_is_a_problem_named_at_its_version(
    house: tuple[House, str], capsys: Any, damage: Any, version: int | None, fragments: list[str]
) -> None:
    stand_in, base = house
    table_id = stand_in.open(7)
    damage(stand_in.logs[table_id])

    code, out, err = run(capsys, base, "--all")

    assert code == 1, out + err
    assert row_of(out, table_id)["result"] == "problem"
    assert listed_problem(out, table_id, "log", version, *fragments), out
    assert "Traceback" not in err


def test_a_service_that_cannot_list_its_keys_is_a_network_error_for_save_heads(
    house: tuple[House, str], tmp_path: Path, capsys: Any
) -> None:
    stand_in, base = house
    stand_in.open(2)
    stand_in.failures["/keys"] = 503
    heads = tmp_path / "heads.jsonl"
    heads.write_text("kept\n")

    code, out, err = run(capsys, base, "--all", "--save-heads", str(heads))

    assert code == 2
    assert out == ""
    assert "HTTP 503" in err and "Traceback" not in err
    assert heads.read_text() == "kept\n"


def test_save_heads_replaces_the_file_whole_and_leaves_nothing_beside_it(
    saved: tuple[House, str, Path, list[str]], capsys: Any
) -> None:
    stand_in, base, heads, tables = saved
    stand_in.play(tables[1], 2)

    code, out, _ = run(capsys, base, "--all", "--heads", str(heads), "--save-heads", str(heads))

    assert code == 0, out
    assert [line.get("receipt", {}).get("version") for line in read_lines(heads)] == [None, 7, 5]
    assert sorted(os.listdir(heads.parent)) == ["heads.jsonl"]


# --- usage --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"keys": []}\nnot json\n', "line 2 is not JSON"),
        ('[1, 2]\n', "line 1 is not a JSON object"),
        ('{"state": {}}\n', "line 1 is neither a receipt, nor an object carrying one under 'receipt'"),
        ('{"signature": "x", "table_id": "t", "version": 0, "digest": "d", "timestamp": "t", "key_id": "k"}\n',
         "line 1: its version 0 is not a whole number from 1"),
        ('{"receipt": {"table_id": "t"}}\n', "line 1: the receipt has no 'version'"),
    ],
    ids=["not-json", "not-an-object", "no-receipt", "bad-version", "missing-field"],
)
def test_a_file_that_is_not_receipts_exits_2_naming_the_line(
    tmp_path: Path, capsys: Any, content: str, message: str
) -> None:
    receipts = tmp_path / "r.jsonl"
    receipts.write_text(content)

    code, out, err = run(capsys, "http://127.0.0.1:9", "--receipts", str(receipts))

    assert code == 2
    assert out == ""
    assert f"audit: error: {receipts} {message}" in err


def test_a_missing_heads_file_exits_2(tmp_path: Path, capsys: Any) -> None:
    code, out, err = run(capsys, "http://127.0.0.1:9", "--heads", str(tmp_path / "none.jsonl"))

    assert code == 2
    assert "cannot read" in err and "none.jsonl" in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["http://127.0.0.1:8000"], "names no table"),
        (["http://127.0.0.1:8000", "--all", "--save-heads", "/no/such/directory/heads.jsonl"], "no such directory"),
    ],
    ids=["base-url-alone", "save-heads-nowhere"],
)
def test_usage_errors_exit_2_with_a_message(argv: list[str], message: str, capsys: Any) -> None:
    with pytest.raises(SystemExit) as exit_:
        audit.main(argv)

    assert exit_.value.code == 2
    assert message in capsys.readouterr().err
