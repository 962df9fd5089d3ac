"""What a desk page costs a browser: bytes moved, requests, and the time until the table's state is shown, on a
first visit (nothing cached) and on a repeat visit (the same browser, its cache kept), in Chromium driven by
Playwright against the real server (see scripts/bench-desk)."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts._args import Parser, whole  # noqa: E402

from _bench import markdown_table, median_of, number, progress, write_section  # noqa: E402
from bench_http import BenchError, Player, Servers, machine  # noqa: E402

SECTION = "## The desk in a browser (bench-desk)"
EVENTS = 40  # the table the page shows: a few rounds of Chemin de fer
SHOWN_TIMEOUT = 30_000  # ms
STATE = '[data-testid="state"][data-version]'  # the state view, once it shows a version of the table


@dataclass
class Visit:
    bytes: int  # as moved on the wire (compressed where the answer was), every request of the page
    requests: int
    shown_ms: float  # from navigation to the state shown


@dataclass
class Round:
    first: list[Visit] = field(default_factory=list)
    repeat: list[Visit] = field(default_factory=list)


def chromium_path(given: str | None) -> str:
    path = given or os.environ.get("ZAMETANO_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        raise BenchError("no Chromium found: apt-get install chromium, or pass --chromium PATH")
    return path


def played_table(port: int) -> str:
    """A Chemin de fer table played with random legal commands to EVENTS events (bench-http's client)."""
    player = Player(port, seed=7)
    try:
        player.open()
        while player.state["version"] < EVENTS:
            player.step(None)
        return player.table
    finally:
        player.client.close()


def visit(context: Any, url: str) -> Visit:
    """One navigation in ``context``, counted by Chromium's own network events (bytes as received)."""
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    moved: list[int] = []
    requests: list[str] = []
    cdp.on("Network.requestWillBeSent", lambda e: requests.append(e["requestId"]))
    cdp.on("Network.loadingFinished", lambda e: moved.append(int(e["encodedDataLength"])))
    try:
        start = time.perf_counter()
        page.goto(url)
        page.wait_for_selector(STATE, timeout=SHOWN_TIMEOUT)
        shown = (time.perf_counter() - start) * 1000
        settle(page, moved)
        return Visit(sum(moved), len(set(requests)), shown)
    finally:
        cdp.detach()
        page.close()


def settle(page: Any, finished: list[int], quiet: float = 0.5, longest: float = 5.0) -> None:
    """Waits until no request has finished for ``quiet`` seconds (never "network idle": the page keeps its live
    stream open), at most ``longest``."""
    deadline, count, since = time.monotonic() + longest, len(finished), time.monotonic()
    while time.monotonic() < deadline:
        page.wait_for_timeout(100)
        if len(finished) != count:
            count, since = len(finished), time.monotonic()
        elif time.monotonic() - since >= quiet:
            return


def measure(browser: Any, url: str, visits: int) -> Round:
    """``visits`` first visits, each in a new browser context (an empty cache), each followed by a repeat visit
    in the same context (its cache kept: the desk's files and documents are asked again with their validators)."""
    measured = Round()
    for _ in range(visits):
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        try:
            measured.first.append(visit(context, url))
            measured.repeat.append(visit(context, url))
        finally:
            context.close()
    return measured


def summary(rounds: list[Round]) -> str:
    def med(kind: str, attr: str) -> float | None:
        return median_of([getattr(v, attr) for r in rounds for v in getattr(r, kind)])

    def spread(kind: str, attr: str) -> str:
        values = [getattr(v, attr) for r in rounds for v in getattr(r, kind)]
        return f"{min(values):,.0f}-{max(values):,.0f}" if values else "-"

    rows = []
    for kind, label in (("first", "first visit"), ("repeat", "repeat visit")):
        rows.append([f"{label}: bytes moved", f"{(med(kind, 'bytes') or 0) / 1024:,.1f} KB", spread(kind, "bytes")])
        rows.append([f"{label}: requests", number(med(kind, "requests"), 0), spread(kind, "requests")])
        rows.append([f"{label}: time to the state shown", f"{number(med(kind, 'shown_ms'), 0)} ms", spread(kind, "shown_ms")])
    return markdown_table(["measure", "median", "range (bytes, requests, ms)"], rows, "lrr")


def section(args: argparse.Namespace, rounds: list[Round], elapsed: float, load: tuple[float, float]) -> str:
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    note = f" {args.note}" if args.note else ""
    return (
        f"{SECTION}\n\n"
        f"`./scripts/bench-desk --rounds {args.rounds} --visits {args.visits}`, {when}, {elapsed / 60:.1f} minutes. "
        f"Machine: {machine()}; load average {load[0]:.2f} before the run and {load[1]:.2f} after.{note}\n\n"
        f"The desk's page of a Chemin de fer table of {EVENTS} events on SQLite (the server with two workers, "
        "open mode), in headless Chromium driven by Playwright. A first visit opens the page in a new browser "
        "context (nothing cached); a repeat visit opens it again in the same context. Bytes are as Chromium "
        "received them (compressed where the answer was), for every request of the page but its live stream "
        "(which stays open); the time runs from "
        "the navigation until the state view shows a version of the table. Medians over every visit of every "
        "round.\n\n"
        f"{summary(rounds)}\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=whole(1), default=2, help="times the visits are made (a new browser each)")
    parser.add_argument("--visits", type=whole(1), default=4, help="first visits (each with its repeat visit) a round")
    parser.add_argument("--chromium", help="Chromium's executable (else ZAMETANO_CHROMIUM, else chromium on PATH)")
    parser.add_argument("--no-docs", action="store_true", help="print the table, leave docs/benchmarks.md alone")
    parser.add_argument("--output", default=str(ROOT / "docs" / "benchmarks.md"))
    parser.add_argument("--note", help="a sentence for the docs about the run (what else ran on the machine)")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.visits < 1:
        parser.error("--rounds and --visits are whole numbers of at least 1")
    from playwright.sync_api import sync_playwright

    started, load = time.monotonic(), os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        # bench-http's servers: api.server with two workers on SQLite, no token set (open mode: the desk asks for none)
        servers = Servers(Path(tmp), None, "zametano-bench-desk")
        try:
            port = servers.ensure("sqlite-2").port
            progress(f"playing a table to {EVENTS} events")
            url = f"http://127.0.0.1:{port}/desk/tables/{played_table(port)}"
            rounds = []
            with sync_playwright() as playwright:
                for r in range(args.rounds):
                    browser = playwright.chromium.launch(executable_path=chromium_path(args.chromium), headless=True,
                                                         args=["--no-sandbox", "--disable-dev-shm-usage"])
                    try:
                        rounds.append(measure(browser, url, args.visits))
                    finally:
                        browser.close()
                    first, repeat = rounds[-1].first, rounds[-1].repeat
                    progress(f"round {r + 1}/{args.rounds}: first visit {median_of([v.shown_ms for v in first]):.0f} ms, "
                             f"repeat {median_of([v.shown_ms for v in repeat]):.0f} ms to the state shown")
        except BenchError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        finally:
            servers.stop()
    text = section(args, rounds, time.monotonic() - started, (load, os.getloadavg()[0]))
    print(text)
    if not args.no_docs:
        write_section(Path(args.output), SECTION, text)
        progress(f"wrote the section '{SECTION[3:]}' of {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
