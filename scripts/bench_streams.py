"""Commands with and without live streams open, on PostgreSQL under the real server (see scripts/bench-streams)."""

from __future__ import annotations

import argparse
import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts._args import Parser, whole, seconds  # noqa: E402

from _bench import (  # noqa: E402
    Target,
    drop_schema,
    markdown_table,
    median_of,
    number,
    percentile,
    postgres_env,
    progress,
    rotated,
    targets_table,
    write_section,
)
from bench_http import WARMUP, BenchError, Player, Window, die_with_parent, free_port, machine  # noqa: E402

SECTION = "## Live streams (bench-streams)"
MAX_STREAMS = 32  # per worker: 4 workers hold 128
# Short, so that a closed stream's place is free again (the worker notices at its next write) before the next
# measurement opens its own.
HEARTBEAT = "1"
START_TIMEOUT = 60.0
OPEN_TIMEOUT = 60.0
DELIVERY_WAIT = 10.0  # seconds after the window for the streams to receive the last commands' events
ID_LINE = re.compile(rb"^id: (\d+)\r?$")


class Timed(Player):
    """bench-http's client (its own table, random legal commands), noting when each version was answered."""

    def __init__(self, port: int, seed: int) -> None:
        super().__init__(port, seed)
        self.answered: dict[int, float] = {}  # head version -> when the answer came, for commands in the window

    def open(self) -> None:
        if not self.table:  # opened before the streams are, which follow it; run() opens it again otherwise
            super().open()

    def step(self, deadline: float | None) -> None:
        before = self.state.get("version")
        super().step(deadline)
        version = self.state.get("version")
        if deadline is not None and version != before and isinstance(version, int):
            self.answered[version] = time.monotonic()


@dataclass
class Stream:
    table: str
    sock: socket.socket
    buffer: bytes = b""
    arrivals: dict[int, float] = field(default_factory=dict)  # version -> when its message arrived


def open_stream(port: int, table: str) -> Stream | None:
    """A stream of the table's events after version 1, or None when the worker that took it was full (503)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    # The host as the client connected to it: without tokens the service answers only loopback Hosts (421).
    sock.sendall(f"GET /tables/{table}/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n"
                 "Last-Event-ID: 1\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        data = sock.recv(65536)
        if not data:
            raise BenchError("a stream's connection closed before its answer")
        head += data
    status = int(head.split(b" ", 2)[1])
    if status == 503:
        sock.close()
        return None
    if status != 200:
        raise BenchError(f"a stream was answered {status}: {head[:300]!r}")
    sock.setblocking(False)
    return Stream(table, sock, head.partition(b"\r\n\r\n")[2])


class Streams:
    """Streams read by one thread (a selector over their sockets), each message's arrival noted."""

    def __init__(self, port: int, tables: list[str], count: int) -> None:
        self.streams: list[Stream] = []
        self.refused = 0
        deadline = time.monotonic() + OPEN_TIMEOUT
        while len(self.streams) < count:
            if time.monotonic() > deadline:
                raise BenchError(f"only {len(self.streams)} of {count} streams opened")
            stream = open_stream(port, tables[len(self.streams) % len(tables)])
            if stream is None:
                self.refused += 1  # that worker holds 32: the next connection may reach another
            else:
                self.streams.append(stream)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        selector = selectors.DefaultSelector()
        for stream in self.streams:
            selector.register(stream.sock, selectors.EVENT_READ, stream)
            self._lines(stream, b"")
        while not self._stop.is_set():
            for key, _ in selector.select(timeout=0.2):
                try:
                    data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                except BlockingIOError:
                    continue
                if data:
                    self._lines(key.data, data)
                else:
                    selector.unregister(key.fileobj)
        selector.close()

    @staticmethod
    def _lines(stream: Stream, data: bytes) -> None:
        now = time.monotonic()
        *lines, stream.buffer = (stream.buffer + data).split(b"\n")
        for line in lines:
            found = ID_LINE.match(line)
            if found:
                stream.arrivals.setdefault(int(found.group(1)), now)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        for stream in self.streams:
            stream.sock.close()


# --- the server ---------------------------------------------------------------------------------------------


def start_server(tmp: Path, pg: dict[str, str], workers: int) -> tuple[subprocess.Popen, int]:  # type: ignore[type-arg]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ZAMETANO_", "POSTGRES_", "SQLITE_", "WEB_"))}
    env.pop("PERSISTENCE_MODULE", None)
    env.update(pg)
    env.update({"ZAMETANO_DATA_DIR": str(tmp / "data"), "ZAMETANO_MAX_STREAMS": str(MAX_STREAMS),
                "ZAMETANO_STREAM_HEARTBEAT": HEARTBEAT, "PROMETHEUS_MULTIPROC_DIR": str(tmp / "metrics")})
    port = free_port()
    argv = [sys.executable, "-m", "api.server", "--port", str(port), "--workers", str(workers)]
    with open(tmp / "server.log", "ab") as err:
        process = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=err,
                                   preexec_fn=die_with_parent)
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if process.poll() is not None:
            raise BenchError(f"the server stopped (exit {process.returncode}):\n{(tmp / 'server.log').read_text()[-2000:]}")
        if time.monotonic() > deadline:
            raise BenchError(f"the server did not answer within {START_TIMEOUT:.0f} s")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:
                if answer.status == 200:
                    return process, port
        except OSError:
            pass
        time.sleep(0.2)


def stop_server(process: subprocess.Popen) -> None:  # type: ignore[type-arg]
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def open_streams(port: int) -> float:
    """The server's open streams, from /metrics (every worker's, added up)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    return sum(float(m.group(1)) for m in re.finditer(r'^zametano_streams_open\{kind="\w+"\} (\S+)$', text, re.M))


def until_no_streams(port: int) -> None:
    deadline = time.monotonic() + 30
    while open_streams(port) > 0:
        if time.monotonic() > deadline:
            raise BenchError("the closed streams' places were not freed within 30 s")
        time.sleep(0.2)


# --- one measurement ----------------------------------------------------------------------------------------

Measure = dict[str, float | None]


def measure(port: int, clients: int, streams: int, seconds: float, seed: int, idle: bool = False) -> Measure:
    """``idle``: the streams follow tables of their own that nobody plays, so they cost only what an open
    stream costs (its thread, its heartbeats); otherwise they follow the played tables, and every command's
    events go out to a share of them."""
    players = [Timed(port, seed * 1000 + n) for n in range(clients)]
    opened: Streams | None = None
    try:
        for player in players:
            player.open()
        if streams:
            followed = [p.table for p in players]
            if idle:
                quiet = [Timed(port, seed * 1000 + 500 + n) for n in range(clients)]
                for table in quiet:
                    table.open()
                    table.client.close()
                followed = [t.table for t in quiet]
            opened = Streams(port, followed, streams)
        window = Window()

        def start() -> None:  # run by the last client to be warm, before any is released
            window.deadline = time.monotonic() + seconds

        barrier = threading.Barrier(clients, action=start)
        threads = [threading.Thread(target=p.run, args=(barrier, window, WARMUP)) for p in players]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for player in players:
            if player.error is not None:
                raise player.error
        delivered = deliveries(players, opened) if opened and not idle else None
    finally:
        if opened is not None:
            opened.close()
        for player in players:
            player.client.close()
    latencies = [s * 1000 for p in players for s in p.latencies]
    return {
        "commands": float(sum(p.in_window for p in players)),
        "rate": sum(p.in_window for p in players) / seconds,
        "p50": percentile(latencies, 50) if latencies else None,
        "p95": percentile(latencies, 95) if latencies else None,
        "delivery p50": percentile(delivered, 50) if delivered else None,
        "delivery p95": percentile(delivered, 95) if delivered else None,
        "refused": float(opened.refused) if opened else 0.0,
    }


def deliveries(players: list[Timed], opened: Streams) -> list[float]:
    """Milliseconds from each command's answer to its last event's message, for every stream of its table."""
    by_table = {p.table: p for p in players}
    deadline = time.monotonic() + DELIVERY_WAIT
    for stream in opened.streams:
        last = max(by_table[stream.table].answered, default=0)
        while last and last not in stream.arrivals:
            if time.monotonic() > deadline:
                raise BenchError(f"a stream of {stream.table} never received version {last}")
            time.sleep(0.05)
    return [(stream.arrivals[v] - at) * 1000 for stream in opened.streams
            for v, at in by_table[stream.table].answered.items()]


# --- the report -----------------------------------------------------------------------------------------------


def results_table(med: dict[str, Measure], runs: dict[str, list[Measure]]) -> str:
    rows = []
    for name, m in med.items():
        p95s = [r["p95"] for r in runs[name] if r["p95"] is not None]
        spread = f"{min(p95s):.2f}-{max(p95s):.2f}" if p95s else "-"
        rows.append([name, number(m["rate"]), number(m["p50"], 2), number(m["p95"], 2), spread,
                     number(m["delivery p50"], 1), number(m["delivery p95"], 1)])
    return markdown_table(["configuration", "commands/s", "p50 ms", "p95 ms", "p95 range", "delivery p50 ms",
                           "delivery p95 ms"], rows)


def medians(runs: dict[str, list[Measure]]) -> dict[str, Measure]:
    keys = ("rate", "p50", "p95", "delivery p50", "delivery p95", "refused")
    return {name: {k: median_of([r[k] for r in rs]) for k in keys} for name, rs in runs.items()}


def main(argv: list[str] | None = None) -> int:
    parser = Parser(description=__doc__)
    parser.add_argument("--rounds", type=whole(1), default=3, help="times each configuration runs (interleaved)")
    parser.add_argument("--seconds", type=seconds(0.1), default=5.0, help="timed seconds per measurement")
    parser.add_argument("--clients", type=whole(1), default=4, help="clients playing a table each")
    parser.add_argument("--streams", type=whole(1), default=100, help="streams open in the second configuration")
    parser.add_argument("--workers", type=whole(1), default=4)
    parser.add_argument("--no-docs", action="store_true", help="print the tables, leave docs/benchmarks.md alone")
    parser.add_argument("--output", default=str(ROOT / "docs" / "benchmarks.md"))
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.seconds <= 0 or args.clients < 1 or not 0 < args.streams <= args.workers * MAX_STREAMS:
        raise SystemExit(f"error: --rounds and --clients at least 1, --seconds above 0, --streams 1 to "
                         f"{args.workers * MAX_STREAMS} (the workers' {MAX_STREAMS} each)")
    made = postgres_env()
    if made is None:
        raise SystemExit("error: this benchmark needs PostgreSQL (POSTGRES_HOST, ...)")
    pg, schema = made
    idle, busy_name = f"{args.streams} streams of idle tables", f"{args.streams} streams of the played tables"
    names = {"0 streams": (0, False), idle: (args.streams, True), busy_name: (args.streams, False)}
    runs: dict[str, list[Measure]] = {name: [] for name in names}
    began, load_before = time.monotonic(), os.getloadavg()
    try:
        with tempfile.TemporaryDirectory(prefix="zametano-bench-streams-") as tmp:
            process, port = start_server(Path(tmp), pg, args.workers)
            try:
                for r in range(args.rounds):
                    for i, name in enumerate(rotated(list(names), r, args.rounds), 1):
                        until_no_streams(port)
                        count, only_idle = names[name]
                        m = measure(port, args.clients, count, args.seconds, seed=r * 10 + i, idle=only_idle)
                        runs[name].append(m)
                        progress(f"round {r + 1}/{args.rounds} [{i}/{len(names)}] {name}: {m['rate']:.0f} commands/s, "
                                 f"p50 {number(m['p50'], 2)} ms, p95 {number(m['p95'], 2)} ms, delivery p50 "
                                 f"{number(m['delivery p50'], 1)} ms, {m['refused']:.0f} streams sent elsewhere (503)")
            finally:
                stop_server(process)
    finally:
        drop_schema(schema)
    elapsed, load_after = time.monotonic() - began, os.getloadavg()
    med = medians(runs)
    quiet, still, busy = med["0 streams"], med[idle], med[busy_name]
    goals = [Target(f"command p50 with {args.streams} streams of idle tables open / without", still["p50"], quiet["p50"],
                    1.5, False, "ms"),
             Target(f"command p95 with {args.streams} streams of idle tables open / without", still["p95"], quiet["p95"],
                    1.5, False, "ms"),
             Target(f"command p50 with {args.streams} streams following the played tables / without", busy["p50"],
                    quiet["p50"], 1.5, False, "ms"),
             Target(f"command p95 with {args.streams} streams following the played tables / without", busy["p95"],
                    quiet["p95"], 1.5, False, "ms")]
    table, goals_text = results_table(med, runs), targets_table(goals)
    print(table)
    print()
    print(goals_text)
    print(f"\ntotal run time {elapsed:.0f} s; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    if args.no_docs:
        progress("docs/benchmarks.md left as it is")
        return 0
    write_section(Path(args.output), SECTION, section(args, elapsed, load_before, load_after, table, goals_text))
    progress(f"wrote the section {SECTION[3:]!r} of {args.output}")
    return 0


def section(args: argparse.Namespace, elapsed: float, load_before: tuple[float, ...], load_after: tuple[float, ...],
            table: str, goals: str) -> str:
    today = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = (f"./scripts/bench-streams --rounds {args.rounds} --seconds {args.seconds:g} --clients {args.clients} "
               f"--streams {args.streams} --workers {args.workers}")
    return "\n\n".join([
        SECTION,
        f"`{command}`, {today}, {elapsed:.0f} s. Machine: {machine()}; load average {load_before[0]:.2f} before the "
        f"run and {load_after[0]:.2f} after.",
        f"One server on PostgreSQL (`scripts/run`'s gunicorn, {args.workers} threaded workers, `WEB_THREADS` at its "
        f"default, `ZAMETANO_MAX_STREAMS={MAX_STREAMS}`, so {MAX_STREAMS} more threads per worker, and "
        f"`ZAMETANO_STREAM_HEARTBEAT={HEARTBEAT}`, so that a closed stream's place is free before the next "
        f"measurement). {args.clients} clients each play their own Chemin de fer table with random legal commands, "
        "one at a time over a kept-alive connection, as bench-http's do; the first "
        f"{WARMUP} commands of each are not timed. 'Streams of idle tables': {args.streams} streams are open on "
        f"{args.clients} other tables that nobody plays, so they cost what an open stream costs (a thread, its "
        f"heartbeats) and nothing else. 'Streams of the played tables': {args.streams} streams of the played tables' "
        "events are open (spread evenly over the tables, read by one thread of the benchmark), so every command's "
        f"events go out to 1/{args.clients} of them on top of the command itself; a stream refused by a full worker "
        "(503) connects again and reaches another. "
        f"Both configurations ran once per round, {args.rounds} rounds in rotated order, {args.seconds:g} s each; "
        "figures are medians over the rounds. Delivery is the time from a command's answer to the arrival of its "
        "last event's message on each stream of its table (negative when the message comes first: a stream in the "
        "worker that ran the command hears of it before the answer is written).",
        table,
        "Commands keep their latency while the streams are open (at most 1.5 times):",
        goals,
    ]) + "\n"


if __name__ == "__main__":
    sys.exit(main())
