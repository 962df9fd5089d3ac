"""scripts/verify-shoe: the stand-alone verifier an outside auditor runs against the events API.

The script is loaded from its file (it has no .py extension) and checked against the reference
vectors, then run end to end against a small event log served over HTTP by the standard library.
The log is built here, with digests computed here from docs/design.md, so the script is not checking
itself.
"""

from __future__ import annotations

import hashlib
import json
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests import helpers

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "verify-shoe"
VECTORS = ROOT / "tests" / "vectors"
TABLE_ID = "t-1"

# Shuffle vector 2 (seed 00 01 02 ... 1f, one deck, cut 17): its first cards are known independently.
SEED = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
COMMITMENT = "630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd"
CUT = 17
FIRST_CARDS = ["Kh", "6h", "2d", "8h"]


def load_script() -> Any:
    return helpers.load_script("verify-shoe", "verify_shoe")


verify_shoe = load_script()


def shuffle_vectors() -> list[dict[str, Any]]:
    return json.loads((VECTORS / "shuffle.json").read_text(encoding="utf-8"))["vectors"]


def chain_vector_events() -> list[dict[str, Any]]:
    return json.loads((VECTORS / "chain.json").read_text(encoding="utf-8"))["events"]


# --- the shuffle and the chain against the reference vectors --------------------------------------


@pytest.mark.parametrize("vector", shuffle_vectors(), ids=lambda v: f"{v['decks']}-decks-cut-{v['cut']}")
def test_the_recomputed_shoe_matches_the_reference_vector(vector: dict[str, Any]) -> None:
    seed = bytes.fromhex(vector["seed"])

    order = verify_shoe.recompute_order(seed, vector["decks"], vector["cut"])

    assert len(order) == 52 * vector["decks"]
    assert order[:10] == vector["first_10"]
    assert order[-3:] == vector["last_3"]
    assert hashlib.sha256(",".join(order).encode()).hexdigest() == vector["order_sha256"]
    assert verify_shoe.commitment_of(seed) == vector["commitment"]


def test_words_at_or_above_the_rejection_limit_are_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    # For 52 cards the limit is 2**32 - 48: taking such a word mod 52 would make the low positions
    # come up more often, so it is drawn again. The first usable word here is 5, then zeros.
    words = iter([2**32 - 48, 2**32 - 1, 5] + [0] * 50)
    monkeypatch.setattr(verify_shoe, "word_stream", lambda seed: words)
    expected = [r + s for s in "shdc" for r in "23456789TJQKA"]
    for i, j in zip(range(51, 0, -1), [5] + [0] * 50):
        expected[i], expected[j] = expected[j], expected[i]

    assert verify_shoe.recompute_order(b"any seed", 1, 0) == expected


def test_the_reference_chain_is_intact() -> None:
    report = verify_shoe.check_chain(chain_vector_events())

    assert report.ok
    assert (report.events, report.broken_at) == (4, None)


def test_a_changed_stake_in_the_reference_chain_breaks_it_at_that_version() -> None:
    events = chain_vector_events()
    events[2]["data"]["amount"] = 51

    report = verify_shoe.check_chain(events)

    assert not report.ok
    assert report.broken_at == 3
    assert "digest" in report.problem


def test_a_seed_stays_outside_the_chain_so_changing_it_keeps_the_chain_intact() -> None:
    events = chain_vector_events()
    events[3]["data"]["seed"] = "ff" * 32

    assert verify_shoe.check_chain(events).ok


def test_an_event_shown_with_a_hidden_card_is_skipped_and_the_links_after_it_are_still_checked() -> None:
    events = chain_vector_events()
    events[1]["data"] = {**events[1]["data"], "card": "??"}  # as a reader shown a face-down card sees it

    assert verify_shoe.check_chain(events).ok
    events[2]["data"]["amount"] = 51
    assert verify_shoe.check_chain(events).broken_at == 3


def test_a_missing_version_breaks_the_chain() -> None:
    events = chain_vector_events()
    del events[1]

    report = verify_shoe.check_chain(events)

    assert report.broken_at == 2
    assert "version 3 found where 2 was expected" in report.problem


def test_every_break_is_a_finding_at_its_version_and_the_first_one_is_the_verdict() -> None:
    events = chained(table_bodies())
    events[2]["data"]["position"] = 3  # an altered cut at version 3
    del events[5]  # version 6 missing

    report = verify_shoe.check_chain(events)

    assert (report.broken_at, report.ok) == (3, False)
    assert [f.version for f in report.findings] == [3, 6]
    assert report.findings[0].message.startswith("digest")
    assert report.findings[1].message.endswith("version 6 is missing, the log goes from 5 to 7")


def test_a_timestamp_that_does_not_advance_breaks_the_chain() -> None:
    events = chain_vector_events()
    events[2]["timestamp"] = events[1]["timestamp"]

    report = verify_shoe.check_chain(events)

    assert report.broken_at == 3
    assert "does not come after" in report.problem


# --- a synthetic table served over HTTP ------------------------------------------------------------


Body = tuple[str, str, dict[str, Any]]  # (type, actor, data) of an event before it is chained


def digest(prev: str, event: dict[str, Any]) -> str:
    """docs/design.md's digest, written out here rather than taken from the script under test."""
    envelope = {
        "prev": prev,
        "version": event["version"],
        "type": event["type"],
        "timestamp": event["timestamp"],
        "actor": event["actor"],
        "data": {k: v for k, v in event["data"].items() if k != "seed"},
    }
    text = json.dumps(envelope, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def chained(bodies: list[Body]) -> list[dict[str, Any]]:
    """Events with versions, rising timestamps and correct digests, from (type, actor, data)."""
    events, prev = [], ""
    for version, (type_, actor, data) in enumerate(bodies, start=1):
        event = {
            "version": version,
            "type": type_,
            "timestamp": f"2026-11-29T20:15:{version:02d}.000000+00:00",
            "actor": actor,
            "data": data,
        }
        event["digest"] = prev = digest(prev, event)
        events.append(event)
    return events


def dealt(position: int, card: str, to: str) -> Body:
    return ("CardDealt", "boris", {"shoe": 1, "position": position, "card": card, "to": to, "face_up": True})


def table_bodies(cards: list[str] = FIRST_CARDS, reveal: bool = True) -> list[Body]:
    """A table opened, one deck shuffled and cut, `cards` dealt from it, the seed revealed."""
    shuffled = {"shoe": 1, "deck": "shoe", "decks": 1, "algorithm": verify_shoe.ALGORITHM}
    bodies = [
        ("TableOpened", "service", {"game": "chemin-de-fer", "players": ["anna", "boris"], "rules": {}}),
        ("ShoeShuffled", "boris", {**shuffled, "commitment": COMMITMENT}),
        ("ShoeCut", "anna", {"shoe": 1, "position": CUT}),
        *(dealt(i, card, "anna" if i % 2 == 0 else "boris") for i, card in enumerate(cards)),
    ]
    if reveal:
        bodies.append(("ShoeRevealed", "service", {"shoe": 1, "seed": SEED}))
    return bodies


class EventsServer:
    """The events API of one table: pages of at most `page_size`, whatever limit the client asks for."""

    def __init__(self, events: list[dict[str, Any]], page_size: int = 2, token: str | None = None) -> None:
        self.events = events
        self.page_size = page_size
        self.token = token
        self.requests: list[dict[str, str]] = []
        self.authorizations: list[str | None] = []

    def page(self, after: int, limit: int) -> dict[str, Any]:
        rest = [e for e in self.events if e["version"] > after]
        events = rest[: min(limit, self.page_size)]
        more = len(rest) > len(events)
        return {"events": events, "next_after": events[-1]["version"] if more else None}

    def handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urllib.parse.urlsplit(self.path)
                query = dict(urllib.parse.parse_qsl(url.query))
                server.requests.append(query)
                server.authorizations.append(self.headers.get("Authorization"))
                if url.path == "/openapi.json":  # open, as the service's own: how a script knows it is there
                    self.reply(200, {"openapi": "3.0.2", "x-games": {"chemin-de-fer": {}}})
                elif server.token and self.headers.get("Authorization") != f"Bearer {server.token}":
                    self.reply(401, {"code": 401, "status": "Unauthorized", "message": "unknown token"})
                elif url.path != f"/tables/{TABLE_ID}/events":
                    self.reply(404, {"code": 404, "status": "Not Found", "message": "no such table"})
                else:
                    self.reply(200, server.page(int(query.get("after", 0)), int(query.get("limit", 100))))

            def reply(self, status: int, body: dict[str, Any]) -> None:
                payload = json.dumps(body).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


@pytest.fixture
def serve(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """serve(events) -> (table URL, server); every server is shut down after the test."""
    monkeypatch.delenv("ZAMETANO_TOKEN", raising=False)
    running: list[tuple[ThreadingHTTPServer, threading.Thread]] = []

    def start(events: list[dict[str, Any]], **options: Any) -> tuple[str, EventsServer]:
        api = EventsServer(events, **options)
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), api.handler())
        thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
        thread.start()
        running.append((httpd, thread))
        host, port = httpd.server_address[:2]
        return f"http://{host}:{port}/tables/{TABLE_ID}", api

    yield start
    for httpd, thread in running:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def run(url: str, capsys: pytest.CaptureFixture[str], *options: str) -> tuple[int, str, str]:
    code = verify_shoe.main([url, *options])
    out, err = capsys.readouterr()
    return code, out, err


def shoe_row(out: str) -> list[str]:
    """The cells of shoe 1's row: shoe, deck, decks, cut, dealt, revealed, result."""
    line = next(line for line in out.splitlines() if line.startswith("1 "))
    return line.split(None, 6)


def test_an_honest_table_is_fetched_page_by_page_and_verifies(serve: Any, capsys: Any) -> None:
    events = chained(table_bodies())
    url, api = serve(events)

    code, out, err = run(url, capsys)

    assert code == 0, out
    assert [r["after"] for r in api.requests] == ["0", "2", "4", "6"]
    assert all(r["limit"] == "500" for r in api.requests)
    assert "fetched 8 events" in err
    assert shoe_row(out) == ["1", "shoe", "1", str(CUT), "4", "yes", "ok"]
    assert f"chain: {len(events)} events, ok" in out


def test_a_shoe_not_revealed_yet_is_not_a_failure(serve: Any, capsys: Any) -> None:
    url, _ = serve(chained(table_bodies(reveal=False)))

    code, out, _ = run(url, capsys)

    assert code == 0, out
    assert shoe_row(out)[5:] == ["no", "not revealed yet"]


def test_a_dealt_card_that_differs_from_the_revealed_shoe_is_reported(serve: Any, capsys: Any) -> None:
    url, _ = serve(chained(table_bodies(cards=["Kh", "6h", "As", "8h"])))

    code, out, _ = run(url, capsys)

    assert code == 1
    assert "card at position 2 (version 6) is 'As', the revealed shoe has 2d" in shoe_row(out)[6]
    assert "chain: 8 events, ok" in out


def test_an_altered_event_breaks_the_chain_from_that_version(serve: Any, capsys: Any) -> None:
    events = chained(table_bodies())
    events[3]["data"]["to"] = "boris"
    url, _ = serve(events)

    code, out, _ = run(url, capsys)

    assert code == 1
    assert "chain: 8 events, broken at version 4: digest" in out


def test_a_revealed_seed_that_does_not_match_the_commitment_is_reported(serve: Any, capsys: Any) -> None:
    bodies = table_bodies()
    bodies[-1] = ("ShoeRevealed", "service", {"shoe": 1, "seed": "00" * 32})
    url, _ = serve(chained(bodies))

    code, out, _ = run(url, capsys)

    assert code == 1
    assert "revealed seed does not match the commitment" in shoe_row(out)[6]


def test_a_seed_in_the_shuffle_event_is_reported_as_leaked(serve: Any, capsys: Any) -> None:
    bodies = table_bodies(reveal=False)
    bodies[1][2]["seed"] = SEED
    url, _ = serve(chained(bodies))

    code, out, _ = run(url, capsys)

    assert code == 1
    assert "seed leaked before reveal" in shoe_row(out)[6]
    assert "chain: 7 events, ok" in out  # the seed is outside the chain: only the leak check sees it


def test_a_skipped_position_is_reported_even_before_the_reveal(serve: Any, capsys: Any) -> None:
    bodies = table_bodies(reveal=False)
    del bodies[4]  # the card at position 1
    url, _ = serve(chained(bodies))

    code, out, _ = run(url, capsys)

    assert code == 1
    assert "position 2 dealt at version 5 where 1 was expected" in shoe_row(out)[6]


def test_a_lots_deck_without_a_cut_is_checked_from_position_zero(serve: Any, capsys: Any) -> None:
    lots = shuffle_vectors()[0]  # cut 0
    shuffled = {"shoe": 1, "deck": "lots", "decks": 1, "algorithm": verify_shoe.ALGORITHM}
    bodies = [
        ("TableOpened", "service", {"game": "chemin-de-fer", "players": ["anna", "boris"], "rules": {}}),
        ("ShoeShuffled", "service", {**shuffled, "commitment": lots["commitment"]}),
        dealt(0, lots["first_10"][0], "anna"),
        dealt(1, lots["first_10"][1], "boris"),
        ("ShoeRevealed", "service", {"shoe": 1, "seed": lots["seed"]}),
    ]
    url, _ = serve(chained(bodies))

    code, out, _ = run(url, capsys)

    assert code == 0, out
    assert shoe_row(out) == ["1", "lots", "1", "0", "2", "yes", "ok"]


def test_the_token_is_sent_and_a_refusal_shows_the_servers_message(serve: Any, capsys: Any) -> None:
    url, api = serve(chained(table_bodies()), token="s3cret")

    assert run(url, capsys, "--token", "s3cret")[0] == 0
    assert set(api.authorizations) == {"Bearer s3cret"}

    code, out, err = run(url, capsys, "--token", "wrong")
    assert code == 2
    assert out == ""
    assert "HTTP 401" in err and "unknown token" in err
    assert "Traceback" not in err


def test_the_token_can_come_from_the_environment(serve: Any, capsys: Any, monkeypatch: Any) -> None:
    url, _ = serve(chained(table_bodies()), token="from-env")
    monkeypatch.setenv("ZAMETANO_TOKEN", "from-env")

    assert run(url, capsys)[0] == 0


def test_an_unknown_table_is_a_network_error_with_the_servers_message(serve: Any, capsys: Any) -> None:
    url, _ = serve(chained(table_bodies()))

    code, _, err = run(url.replace(TABLE_ID, "nope"), capsys)

    assert code == 2
    assert "HTTP 404" in err and "no such table" in err


def test_a_server_that_cannot_be_reached_is_a_clear_error(capsys: Any) -> None:
    closed = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = closed.server_address[1]
    closed.server_close()  # nothing listens on the port any more

    code, out, err = run(f"http://127.0.0.1:{port}/tables/{TABLE_ID}", capsys)

    assert code == 2
    assert out == ""
    assert "cannot reach" in err
    assert "Traceback" not in err


def test_a_url_that_is_not_http_is_a_usage_error(capsys: Any) -> None:
    with pytest.raises(SystemExit) as exit_:
        verify_shoe.main(["ftp://example/tables/t-1"])

    assert exit_.value.code == 2
    assert "is not an http(s) URL" in capsys.readouterr().err


@pytest.mark.parametrize("given", ["http://127.0.0.1:8000", "127.0.0.1:8000/", "http://127.0.0.1:8000/tables",
                                   f"http://127.0.0.1:8000/tables/{TABLE_ID}/events"])
def test_a_url_that_names_no_table_is_a_usage_error_saying_what_url_is_expected(given: str, capsys: Any) -> None:
    with pytest.raises(SystemExit) as exit_:
        verify_shoe.main([given])

    assert exit_.value.code == 2
    assert "is not a table's URL: give one such as http://127.0.0.1:8000/tables/<table_id>" in capsys.readouterr().err


def test_a_gap_in_the_served_log_is_reported_at_the_missing_version(serve: Any, capsys: Any) -> None:
    events = chained(table_bodies())
    del events[3:5]  # versions 4 and 5

    code, out, _ = run(serve(events, page_size=100)[0], capsys)

    assert code == 1
    assert "chain: 6 events, broken at version 4: version 6 found where 4 was expected: versions 4 to 5 are " \
           "missing, the log goes from 3 to 6" in out


def test_a_version_served_twice_is_reported_at_that_version(serve: Any, capsys: Any) -> None:
    events = chained(table_bodies())
    events.insert(4, dict(events[3]))  # version 4 again, right after itself

    code, out, _ = run(serve(events, page_size=100)[0], capsys)

    assert code == 1
    assert "broken at version 4: version 4 appears a second time (event 5 of the log)" in out


def test_versions_served_out_of_order_are_reported_at_the_version(serve: Any, capsys: Any) -> None:
    events = chained(table_bodies())
    events[3], events[4] = events[4], events[3]  # versions 5 then 4

    code, out, _ = run(serve(events, page_size=100)[0], capsys)

    assert code == 1
    assert "broken at version 4: version 4 comes after version 5: the log is out of order" in out


def test_contents_exchanged_between_two_versions_are_reported_at_both(serve: Any, capsys: Any) -> None:
    events = chained(table_bodies())
    events[3], events[4] = {**events[4], "version": 4}, {**events[3], "version": 5}

    code, out, _ = run(serve(events)[0], capsys)

    assert code == 1
    assert "broken at version 4: digest" in out
    assert "  at version 5: timestamp" in out and "does not come after the one before" in out
