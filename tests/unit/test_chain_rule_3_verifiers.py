"""Chain rule 3 (docs/design.md "Concealed parts (chain rule 3)") in the stand-alone verifiers: scripts/verify-shoe
(from the service and from an exported log) and scripts/audit (pages, --rounds, --save-heads and --heads).

Every digest of a rule-3 log checks from every reader's view: the reference vectors (the log as stored, as its
owner and as another player see it), and the played tables of the fixtures chained again under rule 3 here
(tests/concealing.py) and served as each reader would be shown them by a small stand-in of the service. A
malformed rule-3 event is a finding at its version, never a crash; rules 1 and 2 keep their own tests.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs
from wsgiref.simple_server import make_server

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tests import concealing, helpers
from tests.served import Played, QuietHandler, audit, events_of, problem_lines, row_of, serving

ROOT = Path(__file__).resolve().parents[2]
VECTORS = json.loads((ROOT / "tests" / "vectors" / "chain-concealed.json").read_text(encoding="utf-8"))
TABLE_ID = VECTORS["stored"][0]["data"]["table_id"]
VIEWS = ("stored", "anna", "boris")
verify_shoe = helpers.load_script("verify-shoe", "verify_shoe")


def vector(view: str) -> list[dict[str, Any]]:
    return copy.deepcopy(VECTORS[view])


def write_export(path: Path, events: list[dict[str, Any]]) -> Path:
    """The log as an NDJSON export: one event a line."""
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events), encoding="utf-8")
    return path


def verify_file(capsys: pytest.CaptureFixture[str], path: Path, *options: str) -> tuple[int, str, str]:
    code = verify_shoe.main([str(path), *options])
    out, err = capsys.readouterr()
    return code, out, err


# --- the reference vectors -----------------------------------------------------------------------------


def test_the_concealing_helper_reproduces_the_vectors_from_the_designs_text() -> None:
    """tests/concealing.py, which makes the synthetic rule-3 logs below, gives the vectors' digests and views."""
    prev = ""
    for event in VECTORS["stored"]:
        prev = concealing.digest(prev, event)
        assert prev == event["digest"], event["version"]
    assert concealing.view(VECTORS["stored"], "anna") == VECTORS["anna"]
    assert concealing.view(VECTORS["stored"], "boris") == VECTORS["boris"]


@pytest.mark.parametrize("view", VIEWS)
def test_every_digest_of_the_vectors_checks_from_every_view(view: str) -> None:
    report = verify_shoe.check_chain(vector(view), TABLE_ID)

    assert (report.ok, report.findings, report.rule) == (True, [], 3)


@pytest.mark.parametrize("view", VIEWS)
def test_an_exported_rule_3_log_verifies_from_a_file_and_names_its_rule(
    view: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = verify_file(capsys, write_export(tmp_path / f"{view}.ndjson", vector(view)),
                                 "--table-id", TABLE_ID)

    # The vectors deal a card from a shoe they never shuffle: the one problem found is that, not the chain.
    assert code == 1, out + err
    assert out.splitlines()[1].endswith("CardDealt at version 2 comes before the shoe was shuffled")
    assert out.splitlines()[2:] == [
        "chain: 4 events, ok",
        "chained under rule 3 (binds its table; every concealed part committed, every digest checked)"]


def test_a_rule_3_log_given_as_another_tables_is_refused_at_version_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = verify_file(capsys, write_export(tmp_path / "boris.ndjson", vector("boris")),
                               "--table-id", "another-table")

    assert code == 1
    assert "broken at version 1: the first event binds the chain to table" in out
    assert "the events were moved from another table" in out


# Each case alters one view of the vectors: (view, alteration, the version named, words of its finding).
Alteration = Callable[[list[dict[str, Any]]], None]
MALFORMED: dict[str, tuple[str, Alteration, int, str]] = {
    "pointer to nothing": ("boris", lambda log: log[1]["concealed"].update({"/nothing": log[1]["concealed"]["/card"]}),
                           2, "'/nothing' names no part of its data"),
    "pointer past an array": ("boris", lambda log: log[3]["concealed"].update(
        {"/piles/anna/2": log[3]["concealed"]["/piles/anna/0"]}), 4, "'/piles/anna/2' names no part of its data"),
    "pointer without its slash": ("anna", lambda log: log[1].update(salts={"card": log[1]["salts"]["/card"]}),
                                  2, "'card' names no part of its data"),
    "pointer with a bad escape": ("anna", lambda log: log[1].update(salts={"/c~2rd": log[1]["salts"]["/card"]}),
                                  2, "'/c~2rd' names no part of its data"),
    "pointer to the seed": ("anna", lambda log: log[1].update(salts={"/seed": "0" * 32}),
                            2, "'/seed' names no part of its data"),
    "pointer in both": ("anna", lambda log: log[1].update(concealed={"/card": "commit:" + "0" * 64}),
                        2, "'/card' is both among its salts and concealed"),
    "salt in capitals": ("anna", lambda log: log[2]["salts"].update({"/total": "FFEEDDCCBBAA99887766554433221100"}),
                         3, "the salt of '/total' is 'FFEEDDCCBBAA99887766554433221100', not 32 lowercase hex"),
    "salt too short": ("anna", lambda log: log[2]["salts"].update({"/total": "ab" * 15}),
                       3, "not 32 lowercase hex digits"),
    "salt a number": ("anna", lambda log: log[2]["salts"].update({"/total": 7}), 3, "the salt of '/total' is 7"),
    "salts a list": ("anna", lambda log: log[2].update(salts=["/total"]), 3, "its salts is not a JSON object"),
    "commitment without its prefix": ("boris", lambda log: log[1]["concealed"].update(
        {"/card": log[1]["concealed"]["/card"][len("commit:"):]}), 2, "not 'commit:' and 64 lowercase hex digits"),
    "commitment null": ("boris", lambda log: log[2]["concealed"].update({"/total": None}),
                        3, "the commitment of '/total' is None"),
    "a hidden card with no commitment": ("boris", lambda log: log[1].pop("concealed"),
                                         2, "its data shows /card hidden with no commitment for it"),
    "a hidden total with no commitment": ("boris", lambda log: log[2].pop("concealed"),
                                          3, "its data shows /total hidden with no commitment for it"),
    "one hidden pile card left without": ("boris", lambda log: log[3]["concealed"].pop("/piles/anna/1"),
                                          4, "its data shows /piles/anna/1 hidden with no commitment for it"),
    "a concealed part shown in clear": ("boris", lambda log: log[1]["data"].update(card="9h"),
                                        2, "'/card' is concealed from this reader, yet its data shows a value"),
    "parts one inside the other": ("anna", lambda log: log[3]["salts"].update({"/piles/anna": "0" * 32}),
                                   4, "'/piles/anna' and '/piles/anna/0' name parts one inside the other"),
    "another card under the salt": ("anna", lambda log: log[1]["data"].update(card="9d"), 2, "recomputed"),
    "another salt": ("anna", lambda log: log[1]["salts"].update({"/card": "0" * 32}), 2, "recomputed"),
    "another commitment": ("boris", lambda log: log[3]["concealed"].update(
        {"/piles/anna/0": log[3]["concealed"]["/piles/anna/1"]}), 4, "recomputed"),
    "a rule it does not know": ("boris", lambda log: log[0]["data"].update(chain=4),
                                1, "names chain rule 4, which this verifier does not know"),
    "rule 3 without its table": ("boris", lambda log: log[0]["data"].pop("table_id"),
                                 1, "names chain rule 3 but records no table_id"),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_rule_3_event_is_a_finding_at_its_version(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    view, alter, version, words = MALFORMED[case]
    log = vector(view)
    alter(log)

    report = verify_shoe.check_chain(log, TABLE_ID)
    code, out, err = verify_file(capsys, write_export(tmp_path / "log.ndjson", log), "--table-id", TABLE_ID)

    assert not report.ok and report.broken_at == version, report
    assert any(f.version == version and words in f.message for f in report.findings), report.findings
    assert code == 1 and f"broken at version {version}: " in out, out + err
    assert "Traceback" not in err


def test_a_card_shown_hidden_is_stepped_over_under_rule_2_and_is_a_finding_under_rule_3() -> None:
    """Rules 1 and 2 kept their behaviour: an event shown with "??" cannot be recomputed and is left out. Under
    rule 3 no event is left out: one shown hidden without a commitment is named."""
    bound = json.loads((ROOT / "tests" / "vectors" / "chain-bound.json").read_text(encoding="utf-8"))
    rule_2 = bound["events"]
    rule_2[2]["data"]["note"] = "??"  # as a part hidden from this reader shows
    rule_3 = vector("boris")
    rule_3[1].pop("concealed")

    assert verify_shoe.check_chain(rule_2, bound["table_id"]).ok
    assert verify_shoe.check_chain(rule_3, TABLE_ID).broken_at == 2


# --- played tables, chained again under rule 3 and served as each reader sees them --------------------------


class Reader(str):
    """A reader's name; "no one" owns no concealed part (an operator or an auditor during the round)."""


NO_ONE = Reader("no one")


class ShownTables:
    """A stand-in of the service serving rule-3 logs as one reader is shown them: events pages, the signed
    head, the keys, /verify, and rounds (every ROUND events) with their audits carrying the round's events."""

    ROUND = 9

    def __init__(self, stored: dict[str, list[dict[str, Any]]]) -> None:
        self.stored = stored
        self.reader: str = NO_ONE
        self.key = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33)))
        self.round_events: Callable[[str, list[dict[str, Any]]], list[dict[str, Any]]] = lambda _, events: events
        self.alter: Callable[[list[dict[str, Any]]], None] = lambda events: None  # what this reader is shown

    def log(self, table_id: str) -> list[dict[str, Any]]:
        shown = concealing.view(self.stored[table_id], self.reader)
        self.alter(shown)
        return shown

    def __call__(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        query = {name: values[0] for name, values in parse_qs(environ.get("QUERY_STRING", "")).items()}
        status, body = self.answer(environ["PATH_INFO"].strip("/").split("/"), query)
        start_response(f"{status} {'OK' if status == 200 else 'Error'}", [("Content-Type", "application/json")])
        return [json.dumps(body).encode()]

    def answer(self, parts: list[str], query: dict[str, str]) -> tuple[int, Any]:
        if parts == ["openapi.json"]:
            return 200, {"openapi": "3.0.2", "x-games": {"chemin-de-fer": {}, "card-lottery": {}}}
        if parts == ["keys"]:
            return 200, {"keys": [helpers.key_listing(self.key)]}
        if parts == ["tables"]:
            return 200, {"tables": [{"table_id": t, "game": self.stored[t][0]["data"]["game"]} for t in self.stored],
                         "next_cursor": None}
        if len(parts) < 3 or parts[0] != "tables" or parts[1] not in self.stored:
            return 404, {"code": 404, "status": "Not Found", "message": "no such table"}
        log, rest = self.log(parts[1]), parts[2:]
        rounds = [log[i:i + self.ROUND] for i in range(0, len(log), self.ROUND)]
        if rest == ["events"]:
            after, limit = int(query.get("after", 0)), int(query.get("limit", 100))
            page = [e for e in log if e["version"] > after][:limit]
            more = bool(page) and page[-1]["version"] < log[-1]["version"]
            return 200, {"events": page, "next_after": page[-1]["version"] if more else None}
        if rest == ["verify"]:
            return 200, {"ok": True, "chain": {"ok": True, "first_broken_version": None, "rule": 3}, "problems": []}
        if rest == ["head"]:
            last = log[-1]
            fields = {"table_id": parts[1], "version": last["version"], "digest": last["digest"],
                      "timestamp": last["timestamp"]}
            return 200, {**fields, "receipt": helpers.sign_receipt(self.key, fields)}
        if rest == ["rounds"]:
            listed = [{"round": n, "first_version": r[0]["version"], "last_version": r[-1]["version"]}
                      for n, r in enumerate(rounds, start=1)]
            return 200, {"rounds": listed, "next_cursor": None}
        if len(rest) == 2 and rest[0] == "rounds" and rest[1].isdigit() and 0 < int(rest[1]) <= len(rounds):
            number = int(rest[1])
            checks = {"chain": True, "cards": None, "rules": True, "money": True, "read_model": True}
            return 200, {"round": number, "events": self.round_events(rest[1], rounds[number - 1]),
                         "checks": checks, "problems": []}
        return 404, {"code": 404, "status": "Not Found", "message": "no such path"}


@pytest.fixture(scope="module")
def rule_3_tables(played: Played) -> dict[str, list[dict[str, Any]]]:
    """The fixtures' played tables (Chemin de fer past a whole shoe, a card lottery to its end), read with
    every card shown, and the Chemin de fer log cut before its last reveal as a third table (in the middle of
    a shoe), chained again under rule 3: {table id: the log as stored, with its salts}."""
    with serving(played.db) as base:
        logs = {table_id: events_of(base, table_id) for table_id in (played.chemin_de_fer, played.lottery)}
    chemin_de_fer = logs[played.chemin_de_fer]
    last_reveal = max(i for i, e in enumerate(chemin_de_fer) if e["type"] == "ShoeRevealed")
    logs[MID_SHOE] = chemin_de_fer[:last_reveal]
    return {table_id: concealing.rechain(events, table_id) for table_id, events in logs.items()}


MID_SHOE = "5d8e0c1a-6b2f-4e7d-9c3a-1f0b2e4d6a8c"  # the third table's id


def a_face_down_card(stored: list[dict[str, Any]]) -> dict[str, Any]:
    """The first card dealt face down from a shoe not revealed (hidden from all but its owner)."""
    revealed = {e["data"]["shoe"] for e in stored if e["type"] == "ShoeRevealed"}
    return next(e for e in stored if e["type"] == "CardDealt" and e.get("salts") and e["data"]["shoe"] not in revealed)


@pytest.fixture
def shown(rule_3_tables: dict[str, list[dict[str, Any]]],
          monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ShownTables, str]]:
    for name in ("ZAMETANO_TOKEN", "ZAMETANO_TOKENS"):
        monkeypatch.delenv(name, raising=False)
    stand_in = ShownTables(copy.deepcopy(rule_3_tables))
    httpd = make_server("127.0.0.1", 0, stand_in, handler_class=QuietHandler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield stand_in, f"http://127.0.0.1:{httpd.server_port}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def readers_of(stored: dict[str, list[dict[str, Any]]]) -> list[str]:
    return sorted(set().union(*(concealing.readers(log) for log in stored.values())) | {NO_ONE})


def test_the_synthetic_logs_conceal_every_kind_of_part(rule_3_tables: dict[str, list[dict[str, Any]]]) -> None:
    """So that the tests below cover face-down cards, stood totals, piles set aside and stage-2 hands."""
    hidden = [e for log in rule_3_tables.values() for e in concealing.view(log, NO_ONE) if e.get("concealed")]
    assert {"CardDealt", "HandStood", "CardsSetAside", "Stage2Began"} <= {e["type"] for e in hidden}
    assert a_face_down_card(rule_3_tables[MID_SHOE])


def test_verify_shoe_checks_every_digest_of_a_rule_3_table_from_every_readers_view(
    shown: tuple[ShownTables, str], capsys: pytest.CaptureFixture[str]
) -> None:
    stand_in, base = shown
    for reader in readers_of(stand_in.stored):
        stand_in.reader = reader
        for table_id, stored in stand_in.stored.items():
            code = verify_shoe.main([f"{base}/tables/{table_id}"])
            out, err = capsys.readouterr()
            assert code == 0, (reader, out, err)
            assert f"chain: {len(stored)} events, ok" in out and "chained under rule 3" in out, (reader, out)


def test_verify_shoe_reads_the_table_a_desk_url_names(shown: tuple[ShownTables, str],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    stand_in, base = shown
    table_id = next(iter(stand_in.stored))
    for page in ("", "/rounds", "/rounds/2", "/verify", "?version=7"):
        for desk in ("desk/tables", "desk/seat/tables"):
            code = verify_shoe.main([f"{base}/{desk}/{table_id}{page}"])
            out, err = capsys.readouterr()
            assert code == 0 and "chained under rule 3" in out, (desk, page, out + err)


def test_a_hidden_card_swapped_in_a_readers_view_breaks_the_chain_at_its_version(
    shown: tuple[ShownTables, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A server showing an owner another card than the one committed to is caught by the owner, and by
    nobody else: to another reader the card is hidden, and its commitment is the one recorded."""
    stand_in, base = shown
    table_id = MID_SHOE
    dealt = a_face_down_card(stand_in.stored[table_id])
    stand_in.reader = dealt["data"]["to"]

    def swap(events: list[dict[str, Any]]) -> None:
        card = events[dealt["version"] - 1]["data"]
        if card["card"] != concealing.HIDDEN:
            card["card"] = "Ah" if card["card"] != "Ah" else "Kh"

    stand_in.alter = swap
    code = verify_shoe.main([f"{base}/tables/{table_id}"])
    out, _ = capsys.readouterr()

    assert code == 1
    assert f"chain: {len(stand_in.stored[table_id])} events, broken at version {dealt['version']}: digest" in out
    stand_in.reader = NO_ONE
    assert verify_shoe.main([f"{base}/tables/{table_id}"]) == 0
    capsys.readouterr()


def test_the_audit_checks_every_digest_and_every_rounds_events_of_rule_3_tables_from_every_view(
    shown: tuple[ShownTables, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    stand_in, base = shown
    heads = tmp_path / "heads.jsonl"
    for reader in readers_of(stand_in.stored):
        stand_in.reader = reader
        code = audit.main([base, "--all", "--rounds", "--save-heads", str(heads)])
        out, err = capsys.readouterr()
        assert code == 0, (reader, out, err)
        code = audit.main([base, "--heads", str(heads)])
        out, err = capsys.readouterr()
        assert code == 0, (reader, out, err)
        for table_id in stand_in.stored:
            assert (row_of(out, table_id)["chain"], row_of(out, table_id)["heads"]) == ("ok", "ok")


def test_a_rounds_audit_showing_another_card_than_the_log_commits_to_is_named(
    shown: tuple[ShownTables, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The round's audit shows the owner a card other than the one committed to, the log itself being
    honest: the audit names the round and the version."""
    stand_in, base = shown
    table_id = MID_SHOE
    dealt = a_face_down_card(stand_in.stored[table_id])
    stand_in.reader = dealt["data"]["to"]
    number = (dealt["version"] - 1) // ShownTables.ROUND + 1

    def swapped(_: str, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        events = copy.deepcopy(events)
        for event in events:
            if event["version"] == dealt["version"]:
                event["data"]["card"] = "Ah" if event["data"]["card"] != "Ah" else "Kh"
        return events

    stand_in.round_events = swapped
    code = audit.main([f"{base}/tables/{table_id}", "--rounds"])
    out, err = capsys.readouterr()

    assert code == 1, out + err
    assert row_of(out, table_id)["chain"] == "ok"  # the log is the one committed to
    named = [line for line in problem_lines(out, table_id) if line.startswith(f"round {number} events")]
    assert len(named) == 1 and f"version {dealt['version']}" in named[0] and "recomputed" in named[0], out
