"""The browser's own verification (api/static/desk/verify.js) run in a real Chromium on tables played over the
service, and held to scripts/audit: the same verdict on honest tables of every game and on every tampering of
tests/tampering.py's matrix (where the audit learns something only the server knows, the test says so), the
same shuffle as the reference vectors and the same canonical JSON as Python's.

The module is loaded by the page from /desk/static/verify.js, the URL the desk serves it at. The app is
wrapped here so that, where the app itself does not serve that URL openly (404, or 401 once tokens are set),
the wrapper serves the file; a blank page of the same origin gives the module a secure context (WebCrypto)
and the API without CORS."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import random
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from domain.chain import canonical_json, commit, committed
from domain.shuffle import shoe_order
from tests.api.test_what_catches_what import TAMPERINGS, Facts, SQLiteStores, facts_of
from tests.served import Played, audit, copy_store, events_of, play, problem_lines, serving, sqlite_env
from tests.tampering import Rows

ROOT = Path(__file__).resolve().parents[2]
VERIFY_JS = ROOT / "api" / "static" / "desk" / "verify.js"
MODULE_URL = "/desk/static/verify.js"
BLANK = "/verify-test-page"  # answered by the wrapper alone
PAGE = b'<!doctype html><title>verify</title><link rel="icon" href="data:,">'  # no favicon asked for


def with_verify_js(app: Any) -> Any:
    """The app, with a blank page at BLANK, and the module at MODULE_URL where the app does not serve it."""

    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        path = environ.get("PATH_INFO")
        if path == BLANK:
            return _answer(start_response, "text/html; charset=utf-8", PAGE)
        if path != MODULE_URL:
            return app(environ, start_response)
        said: list[Any] = []
        body = app(environ, lambda status, headers, exc_info=None: said.append((status, headers)))
        if said and said[0][0][:3] in ("404", "401"):
            getattr(body, "close", lambda: None)()
            return _answer(start_response, "text/javascript; charset=utf-8", VERIFY_JS.read_bytes())
        start_response(*said[0])
        return body

    return wrapped


def _answer(start_response: Callable[..., Any], content_type: str, body: bytes) -> list[bytes]:
    start_response("200 OK", [("Content-Type", content_type), ("Content-Length", str(len(body))),
                              ("Cache-Control", "no-store")])
    return [body]


@contextmanager
def desk(store: Path | dict[str, str], tokens: str = "") -> Iterator[str]:
    with serving(store, tokens=tokens, wrap=with_verify_js) as base:
        yield base


def in_page(page: Any, base: str, script: str, arg: Any = None) -> Any:
    """Runs `script` (an async function of `arg`, given the module as `m`) in a blank page of `base`."""
    if not page.url.startswith(base):
        page.goto(base + BLANK)
    return page.evaluate(f"async (arg) => {{ const m = await import({json.dumps(MODULE_URL)}); "
                         f"return await ({script})(arg); }}", arg)


VERIFY = """async ({tableId, receipts}) => {
    const table = await m.readTable("", tableId);
    const result = await m.verifyTable({...table, receipts});
    return {...result, unreadable: table.unreadable, headError: table.headError};
}"""


def browser_verdict(page: Any, base: str, table_id: str, receipts: list[dict[str, Any]] | None = None,
                    refused: int | None = None) -> Any:
    """verify.js's result on the table as readTable reads it; `refused`: the status of a page the service is
    expected to refuse (the browser logs the failed load; the module reads around it)."""
    result = in_page(page, base, VERIFY, {"tableId": table_id, "receipts": receipts})
    errors = list(page.console_errors)
    page.console_errors.clear()
    if refused is None:
        assert errors == []
    else:
        assert len(errors) == 1 and f"responded with a status of {refused} " in errors[0], errors
    return result


def audit_verdict(capsys: pytest.CaptureFixture[str], base: str,
                  table_id: str) -> tuple[int, list[tuple[str, int | None]]]:
    """scripts/audit on one table, as an auditor runs it (no kept heads): its exit status, and its problems
    as (source, version)."""
    capsys.readouterr()
    code = audit.main([f"{base}/tables/{table_id}"])
    out, err = capsys.readouterr()
    assert code in (0, 1), out + err
    named = []
    for line in problem_lines(out, table_id) if code == 1 else []:
        if line.startswith("... and "):
            continue  # the problems past those shown, counted
        found = re.match(r"(.+?)\s+(?:version (\d+)|-)\s", line)
        assert found, line
        named.append((found.group(1), int(found.group(2)) if found.group(2) else None))
    return code, named


# --- honest tables of the three games ----------------------------------------------------------------------


def a_shoe_revealed(events: list[dict[str, Any]]) -> bool:
    return any(e["type"] == "ShoeRevealed" for e in events)


@pytest.fixture(scope="module")
def three_games(played: Played, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A copy of the played store (Chemin de fer past a whole shoe, the card lottery to its end) with a punto
    banco table played to the reveal of its shoe: {game: table id}."""
    db = copy_store(played.db, tmp_path_factory.mktemp("three-games"))
    with serving(sqlite_env(db)) as base:
        punto_banco = play(base, {"game": "punto-banco", "players": ["marta", "anna", "boris"], "croupier": "marta",
                                  "rules": {"decks": 6, "stop_card": 52}}, a_shoe_revealed, seed=13)
    return db, {"chemin-de-fer": played.chemin_de_fer, "card-lottery": played.lottery, "punto-banco": punto_banco}


def test_honest_tables_of_every_game_verify_in_the_browser_and_the_audit_agrees(
    three_games: tuple[Path, dict[str, str]], page: Any, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ZAMETANO_TOKEN", raising=False)
    db, tables = three_games
    with desk(db) as base:
        for game, table_id in tables.items():
            result = browser_verdict(page, base, table_id)
            events = events_of(base, table_id)
            assert (result["ok"], result["failedVersion"], result["findings"]) == (True, None, []), game
            assert result["headError"] is None and result["unreadable"] == [], game
            assert result["events"] == len(events) and result["receipts"] == 1, game  # the head's signature
            revealed = [shoe for shoe in result["shoes"] if shoe["revealed"]]
            assert revealed and all(shoe["ok"] is True for shoe in revealed), (game, result["shoes"])
            assert all(shoe["ok"] is None for shoe in result["shoes"] if not shoe["revealed"]), game
            # every card the revealed shoes dealt was recomputed, burns included
            dealt = sum(1 for e in events if e["type"] == "CardDealt" and e["data"]["shoe"] in
                        {shoe["shoe"] for shoe in revealed})
            assert dealt > 0 and dealt == sum(shoe["dealt"] for shoe in revealed), game
            assert audit_verdict(capsys, base, table_id) == (0, []), game


def chained_data(e: dict[str, Any]) -> dict[str, Any]:
    """The data an event's digest covers, as the service's own chain makes it: without the seed, each part of
    ``salts`` as its commitment (what the reader is given here: a service without tokens shows every part)."""
    data = {k: v for k, v in e["data"].items() if k != "seed"}
    parts = {where: commit(salt, _at(data, where)) for where, salt in (e.get("salts") or {}).items()}
    return committed(data, {**parts, **(e.get("concealed") or {})})


def _at(data: Any, where: str) -> Any:
    for token in where[1:].split("/"):
        data = data[int(token)] if isinstance(data, list) else data[token]
    return data


def test_the_browsers_canonical_json_is_pythons_on_every_event_of_the_played_tables(
    three_games: tuple[Path, dict[str, str]], page: Any,
) -> None:
    """What each digest hashes, made by the browser from the log it read and by Python from the same log: the
    same text, event by event (so the chain verifying in both is no coincidence of two wrongs); under chain rule 3
    each concealed part as its commitment (docs/design.md "Concealed parts (chain rule 3)")."""
    db, tables = three_games
    script = """async (tableId) => {
        const { events } = await m.readTable("", tableId);
        const chained = await Promise.all(events.map((e) => m.chainedData(e)));
        return events.map((e, i) => m.canonicalJson({
            prev: i ? events[i - 1].digest : "", version: e.version, type: e.type, timestamp: e.timestamp,
            actor: e.actor, data: chained[i].data,
        }));
    }"""
    with desk(db) as base:
        for game, table_id in tables.items():
            events = events_of(base, table_id)
            python = [canonical_json({"prev": events[i - 1]["digest"] if i else "", "version": e["version"],
                                      "type": e["type"], "timestamp": e["timestamp"], "actor": e["actor"],
                                      "data": chained_data(e)})
                      for i, e in enumerate(events)]
            assert any(e.get("salts") for e in events), game  # rule 3 tables: the commitments are exercised
            assert in_page(page, base, script, table_id) == python, game
            assert all(hashlib.sha256(text.encode()).hexdigest() == e["digest"] for text, e in zip(python, events))


def test_the_log_is_read_with_the_auditors_token_and_without_one_the_refusal_is_said(
    three_games: tuple[Path, dict[str, str]], page: Any,
) -> None:
    db, tables = three_games
    script = """async ({tableId, token}) => {
        try { return (await m.verifyTable(await m.readTable("", tableId, {token}))).ok; }
        catch (e) { return e.message; }
    }"""
    with desk(db, tokens="auditor:seen-only-0123456789,operator:plays-0123456789") as base:
        assert in_page(page, base, script, {"tableId": tables["punto-banco"], "token": "seen-only-0123456789"}) is True
        refused = in_page(page, base, script, {"tableId": tables["punto-banco"], "token": None})
    assert "answered HTTP 401: Send 'Authorization: Bearer <token>'" in refused
    assert len(page.console_errors) == 1 and "status of 401" in page.console_errors[0]


# --- the pieces, against Python and the reference vectors ----------------------------------------------------

TRICKY: list[Any] = [
    "plain", "", "ставка", "Zürich café", "東京", "😀 and 𝄞", "quote \" and backslash \\ and slash /",
    "".join(chr(c) for c in range(0x20)), "\x7f\x80\x9f", "\u2028\u2029", "\ufeff\ufffd", "tab\there\nnewline\r",
    {"b": 1, "a": [1, 2, {"d": None, "c": True}], "ä": False, "A": "", "": 0},
    {"\uffff": 1, "\U0001F600": 2, "\ue000": 3, "z": 4},  # by code point, as Python sorts: U+E000, U+FFFF, U+1F600
    {"nested": {"deeper": {"deepest": [[], {}, [{}], "ставка"]}}},
    [0, -1, 2**53 - 1, -(2**53 - 1), 1.5, -2.25, 0.1, 1e-05, 1.5e-07, 123456.789, 1e-4],
    {"__proto__": {"x": 1}, "constructor": "c", "toString": 0},
    [True, False, None, "true", "null"],
]


def test_the_browsers_canonical_json_is_pythons_for_tricky_values(page: Any, tmp_path: Path) -> None:
    with desk(sqlite_env(tmp_path / "empty.sqlite")) as base:
        # Given as JSON text, as the browser gets every value: JSON.parse keeps "__proto__" an ordinary key.
        texts = in_page(page, base, "async (text) => JSON.parse(text).map(m.canonicalJson)", json.dumps(TRICKY))
    assert texts == [canonical_json(value) for value in TRICKY]


def test_a_number_the_browser_cannot_read_exactly_is_refused_not_written_otherwise(page: Any, tmp_path: Path) -> None:
    with desk(sqlite_env(tmp_path / "empty.sqlite")) as base:
        said = in_page(page, base, """async () => {
            try { return m.canonicalJson(JSON.parse("[9007199254740993]")); } catch (e) { return e.message; }
        }""")
    assert "beyond what a browser reads exactly" in said


# A seed whose stream gives, in a 12-deck shuffle, a word the rejection sampling refuses (such words come
# about once in 20,000 shuffles; this is sha256(b"rejection 787"), found by searching).
REJECTING_SEED = "7c720b562ebb7d12304464f55f3f1777c497a133a6f08bb7c6a3e322447e91aa"


def rejected_words(seed: bytes, decks: int) -> int:
    """How many words of the seed's stream the shuffle refuses (domain/shuffle.py's loop, counting)."""
    words = (int.from_bytes(block[i:i + 4], "big") for k in itertools.count()
             for block in [hmac.new(seed, str(k).encode(), hashlib.sha256).digest()] for i in range(0, 32, 4))
    refused = 0
    for n in range(52 * decks, 1, -1):
        while next(words) >= 2**32 - 2**32 % n:
            refused += 1
    return refused


def test_the_browsers_shuffle_gives_the_reference_vectors_and_pythons_order(page: Any, tmp_path: Path) -> None:
    vectors = json.loads((ROOT / "tests" / "vectors" / "shuffle.json").read_text(encoding="utf-8"))["vectors"]
    rng = random.Random(5)
    drawn = [(rng.randbytes(32).hex(), decks, rng.randrange(52 * decks)) for decks in (1, 2, 3, 6, 8, 12)]
    drawn.append((REJECTING_SEED, 12, 0))
    assert rejected_words(bytes.fromhex(REJECTING_SEED), 12) > 0
    script = """async ({vectors, drawn}) => ({
        vectors: await Promise.all(vectors.map(async (v) => {
            const order = await m.shoeOrder(v.seed, v.decks, v.cut);
            const hash = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(order.join(",")));
            return {order, hash: Array.from(new Uint8Array(hash), (b) => b.toString(16).padStart(2, "0")).join("")};
        })),
        drawn: await Promise.all(drawn.map(([seed, decks, cut]) => m.shoeOrder(seed, decks, cut))),
    })"""
    with desk(sqlite_env(tmp_path / "empty.sqlite")) as base:
        found = in_page(page, base, script, {"vectors": vectors, "drawn": drawn})
    for vector, got in zip(vectors, found["vectors"]):
        assert got["order"][:10] == vector["first_10"] and got["order"][-3:] == vector["last_3"], vector["seed"]
        assert got["hash"] == vector["order_sha256"], vector["seed"]
    for (seed, decks, cut), order in zip(drawn, found["drawn"]):
        assert order == shoe_order(bytes.fromhex(seed), decks, cut), (seed, decks, cut)


def test_the_browsers_digests_are_the_chain_vectors(page: Any, tmp_path: Path) -> None:
    """The vectors computed by an independent implementation, the seed of versions 2 and 4 left out."""
    events = json.loads((ROOT / "tests" / "vectors" / "chain.json").read_text(encoding="utf-8"))["events"]
    script = """async (events) => Promise.all(events.map((e, i) => m.eventDigest(i ? events[i - 1].digest : "", e)))"""
    with desk(sqlite_env(tmp_path / "empty.sqlite")) as base:
        assert in_page(page, base, script, events) == [e["digest"] for e in events]


# --- what the checks name, on an honest log altered in the page -----------------------------------------------

# Each case alters the honest log, head or keys in the page (`events`, `head`, `keys`, `receipts`), and sets
# `version`, where the finding must be (and `first`, the version named first, when another comes before it);
# `rechained`: every digest is then made to follow again, as one with the database could.
CASES = {  # case: (the check that names it, words of its message, the alteration)
    "seed shown": ("cards", "shows the seed of shoe", """
        const e = at("ShoeShuffled", 1); version = e.version; e.data.seed = "00".repeat(32);"""),
    "position skipped": ("cards", "was next", """
        const e = at("CardDealt", 5); version = e.version; e.data.position += 1; rechained = true;"""),
    "algorithm renamed": ("cards", "the only one is hmac-sha256-fisher-yates-v1", """
        const e = at("ShoeShuffled", 1); version = e.version; e.data.algorithm = "mine-v2"; rechained = true;"""),
    "cut after the deal": ("cards", "is cut after dealing began", """
        // exchanged with its shoe's first card (its salts with it: rule 3), which is then dealt uncut
        const cut = at("ShoeCut");
        const dealt = events.find((e) => e.type === "CardDealt" && e.data.shoe === cut.data.shoe);
        for (const name of ["type", "actor", "data", "salts"]) [cut[name], dealt[name]] = [dealt[name], cut[name]];
        for (const e of [cut, dealt]) if (e.salts === undefined) delete e.salts;
        version = dealt.version; first = cut.version; rechained = true;"""),
    "time going back": ("chain", "is not after", """
        const e = events[100]; version = e.version; e.timestamp = events[99].timestamp; rechained = true;"""),
    "a version twice": ("chain", "is in the log twice", """
        version = events[100].version; events.splice(101, 0, structuredClone(events[100]));"""),
    "signature altered": ("receipt", "does not verify with key", """
        version = head.version;
        const signature = head.receipt.signature.replace(/^./, (c) => (c === "A" ? "B" : "A"));
        receipts = [{...head.receipt, signature}];"""),
    "key not listed": ("receipt", "which the keys given do not list", """
        version = head.version; keys = {keys: []};"""),
    "another table's receipt": ("receipt", "is for table another", """
        version = head.version; receipts = [{...head.receipt, table_id: "another"}];"""),
    "no head": ("receipt", "no signed head was given", """
        version = null; head = null;"""),
}

ALTERED = """async (tableId) => {
    const table = await m.readTable("", tableId);
    const events = table.events.map((e) => structuredClone(e));
    const at = (type, n = 0) => events.filter((e) => e.type === type)[n];
    let receipts, keys = table.keys, head = table.head, version, first, rechained = false;
    ALTERATION
    for (let i = 0; rechained && i < events.length; i += 1) {
        const { data } = await m.chainedData(events[i]);  // rule 3: concealed parts as their commitments
        events[i].digest = await m.eventDigest(i ? events[i - 1].digest : "", events[i], data);
    }
    const result = await m.verifyTable({events, keys, head, receipts});
    return {version, first: first === undefined ? version : first, rechained, head: table.head.version, result};
}"""


@pytest.mark.parametrize("case", CASES)
def test_each_check_names_what_it_finds_at_its_version(case: str, three_games: tuple[Path, dict[str, str]],
                                                       page: Any) -> None:
    db, tables = three_games
    check, words, alteration = CASES[case]
    with desk(db) as base:
        found = in_page(page, base, ALTERED.replace("ALTERATION", alteration), tables["chemin-de-fer"])
    result = found["result"]
    assert result["ok"] is False and result["failedVersion"] == found["first"], result
    assert any(f["version"] == found["version"] and words in f["message"] for f in result["findings"]), result
    assert {f["check"] for f in result["findings"]} == {check} | ({"receipt"} if found["rechained"] else set()), result["findings"]
    # a log chained again no longer ends with the digest the house signed: the head names its version
    signed = [f["version"] for f in result["findings"] if f["check"] == "receipt"]
    assert check == "receipt" or signed == ([found["head"]] if found["rechained"] else [])


def test_a_browser_without_webcrypto_says_it_cannot_check_rather_than_giving_a_verdict(
    three_games: tuple[Path, dict[str, str]], page: Any,
) -> None:
    db, tables = three_games
    with desk(db) as base:
        said = in_page(page, base, """async (tableId) => {
            const table = await m.readTable("", tableId);
            Object.defineProperty(globalThis, "crypto", {value: {}, configurable: true});
            try { return await m.verifyTable(table); } catch (e) { return e.message; }
        }""", tables["card-lottery"])
    assert isinstance(said, str) and "no WebCrypto" in said


# --- every tampering of the matrix -----------------------------------------------------------------------

CAUGHT, MISSED = "caught", "missed"


# tampering: (the browser's verdict, scripts/audit's, the version the browser names first). Where they differ
# the audit's problems all come from the server's /verify, which knows what no public read shows: the
# snapshots and the read model that counted past a cut log, and the game's rules that give another payment.
# The browser, like any outside reader without a kept head, cannot see those; given the heads kept while
# the store was honest it catches every one (test below).
EXPECTED: dict[str, tuple[str, str, Callable[[Facts], int | None]]] = {
    "last 20 events deleted, snapshots kept": (MISSED, CAUGHT, lambda f: None),
    "last 20 events and the snapshots past the cut deleted": (MISSED, CAUGHT, lambda f: None),
    "the same, then the read model rebuilt from the log": (MISSED, MISSED, lambda f: None),
    "every timestamp an hour earlier, digests recomputed": (MISSED, CAUGHT, lambda f: None),
    "one event row in the middle deleted": (CAUGHT, CAUGHT, lambda f: f.middle),
    "the revealed seed changed": (CAUGHT, CAUGHT, lambda f: f.revealed),
    "the seed changed in the shuffle and the reveal": (CAUGHT, CAUGHT, lambda f: f.revealed),
    "a payment's amount changed, digests recomputed": (MISSED, CAUGHT, lambda f: None),
    "a dealt card changed, digests recomputed": (CAUGHT, CAUGHT, lambda f: f.dealt),
    "two rows' contents exchanged": (CAUGHT, CAUGHT, lambda f: f.middle),
    "one event row made unreadable": (CAUGHT, CAUGHT, lambda f: f.middle),
}
# The audit also names a version before the browser's: the server's rules check replays the shuffle with the
# seed the store holds in the ShoeShuffled itself, which no response shows (it is not public until revealed).
AUDIT_NAMES_THE_SHUFFLE = "the seed changed in the shuffle and the reveal"


def test_on_every_tampering_the_browser_agrees_with_the_audit_but_where_only_the_server_knows_and_kept_heads_catch_all(
    played: Played, tmp_path: Path, page: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ZAMETANO_TOKEN", raising=False)
    assert set(EXPECTED) == set(TAMPERINGS)
    stores, table_id = SQLiteStores(played, tmp_path), played.chemin_de_fer
    heads = tmp_path / "heads.jsonl"
    with desk(stores.honest) as base:
        assert audit.main([base, "--all", "--save-heads", str(heads)]) == 0
        facts = facts_of(base, table_id)
    kept = [line["receipt"] for line in map(json.loads, heads.read_text(encoding="utf-8").splitlines())
            if "receipt" in line and line["receipt"]["table_id"] == table_id]
    assert len(kept) == 1

    measured, with_heads = {}, {}
    for number, (name, tamper) in enumerate(TAMPERINGS.items()):
        with stores.copy(number) as env:
            tamper(Rows(env, table_id), facts, env)
            with desk(env) as base:
                code, named = audit_verdict(capsys, base, table_id)
                refused = 409 if name == "one event row made unreadable" else None
                mine = browser_verdict(page, base, table_id, refused=refused)
                held = browser_verdict(page, base, table_id, receipts=kept, refused=refused)
                held_by_audit = audit.main([base, "--all", "--heads", str(heads)])
        capsys.readouterr()
        measured[name] = (MISSED if mine["ok"] else CAUGHT, CAUGHT if code == 1 else MISSED, mine["failedVersion"])
        expected_verdicts = EXPECTED[name][:2]
        if expected_verdicts[0] != expected_verdicts[1]:
            assert named and all(source.startswith("server ") for source, _ in named), (name, named)
        elif code == 1:
            first_named = min(v for _, v in named if v is not None)
            if name == AUDIT_NAMES_THE_SHUFFLE:  # and names the browser's version with its own cards check
                assert first_named == facts.shuffled and ("server cards", mine["failedVersion"]) in named, named
            else:
                assert first_named == mine["failedVersion"], (name, named, mine["findings"])
        # the kept head: the browser then catches every tampering, as the audit with the heads file does
        assert held["ok"] is False and held_by_audit == 1, (name, held["findings"])
        with_heads[name] = held["failedVersion"]
        assert mine["unreadable"] == ([facts.middle] if name == "one event row made unreadable" else []), name

    assert measured == {name: (b, a, version(facts)) for name, (b, a, version) in EXPECTED.items()}
    # where the browser's own checks find nothing, the kept head names the version the house signed
    assert {name for name, version in with_heads.items() if version == facts.head} >= {
        name for name, (b, _, _) in EXPECTED.items() if b == MISSED}


def test_the_design_shows_what_the_browser_catches_as_the_tampering_test_measures_it() -> None:
    design = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    section = design.split("## Checking in the browser\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip("|").split("|") for line in section.splitlines() if line.startswith("| ")][2:]
    shown = {cells[0].strip(): tuple(cell.strip() for cell in cells[1:]) for cells in rows}
    assert set(shown) == set(EXPECTED)
    for name, (browser, audit_verdict_, _) in EXPECTED.items():
        mine, held = shown[name]
        assert mine.startswith("✓" if browser == CAUGHT else "–"), name
        assert ("the audit:" in mine) == (browser != audit_verdict_), name  # says why the audit differs
        assert held == "✓", name  # the tampering test requires every one caught with the kept head


def test_the_browser_binds_a_rule_2_log_to_its_table_and_leaves_a_rule_1_log_unbound(page: Any, tmp_path: Path) -> None:
    """docs/design.md "The table in the chain": the rule 2 vectors verify as their own table and are refused at
    version 1 served as another; the rule 1 vectors bind no table."""
    bound = json.loads((ROOT / "tests" / "vectors" / "chain-bound.json").read_text(encoding="utf-8"))
    old = json.loads((ROOT / "tests" / "vectors" / "chain.json").read_text(encoding="utf-8"))["events"]
    script = """async ({bound, old}) => {
        const chain = async (events, tableId) => {
            const result = await m.verifyTable({events, keys: {keys: []}, head: null, tableId});
            return {rule: result.chainRule, found: result.findings.filter((f) => f.check === "chain")};
        };
        return {own: await chain(bound.events, bound.table_id), moved: await chain(bound.events, bound.moved_to),
                old: await chain(old, bound.moved_to)};
    }"""
    with desk(sqlite_env(tmp_path / "empty.sqlite")) as base:
        found = in_page(page, base, script, {"bound": bound, "old": old})
    assert found["own"] == {"rule": 2, "found": []}
    assert found["moved"]["rule"] == 2 and [f["version"] for f in found["moved"]["found"]] == [1]
    assert "moved from another table" in found["moved"]["found"][0]["message"]
    assert found["old"] == {"rule": 1, "found": []}


CONCEALED = json.loads((ROOT / "tests" / "vectors" / "chain-concealed.json").read_text(encoding="utf-8"))
RULE_3 = """async ({views, tableId, alterations}) => {
    const check = async (events, tableId) => {
        const result = await m.verifyTable({events, keys: {keys: []}, head: null, tableId});
        return {rule: result.chainRule, hidden: result.hidden, found: result.findings.filter((f) => f.check === "chain")};
    };
    const verdicts = {};
    for (const [name, events] of Object.entries(views)) verdicts[name] = await check(events, tableId);
    verdicts.moved = await check(views.boris, "another-table");
    const altered = {};
    for (const [name, [view, alteration]] of Object.entries(alterations)) {
        const events = structuredClone(views[view]);
        new Function("events", alteration)(events);
        altered[name] = await check(events, tableId);
    }
    return {verdicts, altered};
}"""
# Each alteration of a view of the vectors: (view, the alteration, the version named, words of its finding).
RULE_3_ALTERED = {
    "hidden card without commitment": ("boris", "delete events[1].concealed;", 2, "shows /card hidden with no commitment"),
    "hidden total without commitment": ("boris", "delete events[2].concealed;", 3, "shows /total hidden"),
    "pointer to nothing": ("boris", 'events[1].concealed["/nothing"] = events[1].concealed["/card"];', 2,
                           '"/nothing" names no part of its data'),
    "pointer in both": ("anna", 'events[1].concealed = {"/card": "commit:" + "0".repeat(64)};', 2,
                        "is both among its salts and concealed"),
    "salt not lowercase hex": ("anna", 'events[2].salts["/total"] = "F".repeat(32);', 3, "not 32 lowercase hex"),
    "commitment without its prefix": ("boris", 'events[1].concealed["/card"] = "0".repeat(64);', 2,
                                      'not "commit:" and 64 lowercase hex'),
    "another card under the salt": ("anna", 'events[1].data.card = "9d";', 2, "recomputed"),
    "a rule it does not know": ("boris", "events[0].data.chain = 4;", 1, "which this check does not know"),
}


def test_the_browser_checks_every_digest_of_a_rule_3_log_from_every_view_and_names_what_is_malformed(
    page: Any, tmp_path: Path,
) -> None:
    """docs/design.md "Concealed parts (chain rule 3)": the vectors as stored, as anna and as boris see them all
    verify, none left out as hidden; served as another table they are refused at version 1; a malformed or
    altered rule-3 event is a finding at its version."""
    views = {name: CONCEALED[name] for name in ("stored", "anna", "boris")}
    alterations = {name: [view, alteration] for name, (view, alteration, _, _) in RULE_3_ALTERED.items()}
    table_id = CONCEALED["stored"][0]["data"]["table_id"]
    with desk(sqlite_env(tmp_path / "empty.sqlite")) as base:
        found = in_page(page, base, RULE_3, {"views": views, "tableId": table_id, "alterations": alterations})
    for name in views:
        assert found["verdicts"][name] == {"rule": 3, "hidden": [], "found": []}, name
    moved = found["verdicts"]["moved"]["found"]
    assert [f["version"] for f in moved] == [1] and "moved from another table" in moved[0]["message"]
    for name, (_, _, version, words) in RULE_3_ALTERED.items():
        named = found["altered"][name]["found"]
        assert named and named[0]["version"] == version, (name, named)
        assert any(f["version"] == version and words in f["message"] for f in named), (name, named)
