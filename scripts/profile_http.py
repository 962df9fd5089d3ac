"""Where a worker's CPU goes while it serves commands on PostgreSQL (see scripts/profile-http).

One gunicorn worker (threaded, as the service runs by default) serves clients that each play their own
Chemin de fer table, as bench-http's do. py-spy samples every thread of the worker from outside (it does not
pause it); only samples of threads on the CPU count. Each sample is put down to the innermost frame that
belongs to a part named below, so the standard library's frames count for whoever called them. The shares,
times the worker's CPU per command read from /proc over the same window, give milliseconds per command."""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts._args import Parser, whole, seconds  # noqa: E402
sys.path.insert(0, str(ROOT / "scripts"))

from _bench import PG, PG_PASSWORD, drop_schema, markdown_table, pg_connect, progress, write_section  # noqa: E402
from bench_http import Backends, Servers, children_of, cpu_of, measure_http  # noqa: E402

SECTION = "## Where a worker's CPU goes (profile-http)"
# (part, pattern on a frame's file): the first part whose pattern the innermost matching frame has.
PARTS = [
    ("receipts: Ed25519 signing", r"(^|/)(service/signing\.py|cryptography/)"),
    ("group commit", r"(^|/)service/groupcommit\.py"),
    ("read model follower", r"(^|/)service/readmodel/"),
    ("Zametano service layer", r"(^|/)service/"),
    ("Zametano domain: rules, views, hash chain", r"(^|/)domain/"),
    ("Zametano web layer", r"(^|/)api/"),
    ("eventsourcing PostgreSQL recorder", r"(^|/)eventsourcing/postgres\.py"),
    ("eventsourcing: aggregates, mapper, snapshots", r"(^|/)eventsourcing/"),
    ("psycopg and its pool", r"(^|/)psycopg(_pool|_binary)?/"),
    ("marshmallow, flask-smorest, webargs", r"(^|/)(marshmallow|flask_smorest|webargs)/"),
    ("Flask and Werkzeug", r"(^|/)(flask|werkzeug)/"),
    ("gunicorn: sockets, HTTP parsing", r"(^|/)gunicorn/"),
    ("JSON", r"(^|/)json/"),
    ("copies (pickle, copy)", r"(^|/)(pickle|copy|copyreg)\.py"),
]
OTHER = "Python and its standard library, other"
FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?)(:\d+)?\)$")


def part_of(stack: list[str]) -> str:
    """The part of the innermost frame (the stack is outermost first) that belongs to one."""
    for frame in reversed(stack):
        m = FRAME.match(frame)
        path = m.group("file") if m else frame
        for name, pattern in PARTS:
            if re.search(pattern, path):
                return name
    return OTHER


def tally(raw: str) -> Counter[str]:
    """py-spy's raw (collapsed) output: one line per distinct stack, frames joined by ';', then a count."""
    parts: Counter[str] = Counter()
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            parts[part_of(stack.split(";"))] += int(count)
    return parts


def profile(args: argparse.Namespace, tmp: Path) -> tuple[Counter[str], dict[str, float], float]:
    schema = f"zametano_profile_{uuid.uuid4().hex[:8]}"
    with pg_connect(autocommit=True, connect_timeout=3) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    env = {"PERSISTENCE_MODULE": "eventsourcing.postgres", "POSTGRES_HOST": PG["host"], "POSTGRES_PORT": PG["port"],
           "POSTGRES_USER": PG["user"], "POSTGRES_PASSWORD": PG_PASSWORD, "POSTGRES_DBNAME": PG["dbname"],
           "POSTGRES_SCHEMA": schema}
    appname = f"zametano-profile-{schema}"
    servers, backends = Servers(tmp, env, appname), Backends()
    try:
        served = servers.ensure("pg-1")
        (worker,) = children_of(served.pid)
        out = tmp / "profile.txt"
        result: dict[str, object] = {}

        def load() -> None:
            try:
                result["measure"] = measure_http(served, args.clients, args.seconds + 2, 1, backends, appname, 5)
            except BaseException as exc:  # noqa: BLE001 - raised below
                result["error"] = exc

        loader = threading.Thread(target=load)
        loader.start()
        time.sleep(1.5)  # the clients open their tables and warm up first
        progress(f"sampling worker {worker} for {args.seconds:.0f} s at {args.rate} Hz, {args.clients} clients")
        cpu_before = cpu_of(worker) or 0.0
        spy = subprocess.run([shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy"), "record",
                              "--pid", str(worker), "--rate", str(args.rate), "--duration", str(int(args.seconds)),
                              "--format", "raw", "--nonblocking", "--gil", "--output", str(out)],
                             capture_output=True, text=True, check=False)
        worker_cpu = (cpu_of(worker) or 0.0) - cpu_before
        loader.join()
        if spy.returncode != 0 or not out.exists():
            raise SystemExit(f"error: py-spy failed: {spy.stderr.strip()[-500:]}")
        if "error" in result:
            raise SystemExit(f"error: the load failed: {result['error']!r}")
        measure = result["measure"]
        assert isinstance(measure, dict)
        commands = measure["rate"] * args.seconds  # commands finished while py-spy sampled (about)
        return tally(out.read_text()), measure, worker_cpu / commands * 1000
    finally:
        servers.stop()
        backends.close()
        drop_schema(schema)


def report(parts: Counter[str], measure: dict[str, float], worker_ms: float, args: argparse.Namespace) -> str:
    total = sum(parts.values())
    rows = [[name, f"{n / total * 100:.1f}%", f"{n / total * worker_ms:.2f}"]
            for name, n in parts.most_common()]
    rows.append(["total (the worker's CPU per command, from /proc)", "100%", f"{worker_ms:.2f}"])
    head = (f"`./scripts/profile-http --seconds {args.seconds:.0f} --clients {args.clients}`, "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: one gunicorn worker (threaded) on PostgreSQL, "
            f"{args.clients} clients each playing its own table, {measure['rate']:.0f} commands/s, p50 {measure['p50']:.1f} ms; "
            f"the PostgreSQL backends spent {measure['pg cpu']:.2f} ms of CPU a command besides. "
            f"{total:,} samples of threads on the CPU.")
    return SECTION + "\n\n" + head + "\n\n" + markdown_table(["part", "share of the worker's CPU", "ms a command"], rows,
                                          align="lrr")


def main(argv: list[str] | None = None) -> int:
    parser = Parser(description=__doc__)
    parser.add_argument("--seconds", type=seconds(0.1), default=20.0, help="sampled seconds")
    parser.add_argument("--clients", type=whole(1), default=4, help="clients, each with its own table")
    parser.add_argument("--rate", type=whole(1), default=250, help="samples a second")
    parser.add_argument("--no-docs", action="store_true", help="print the table, leave docs/benchmarks.md alone")
    parser.add_argument("--output", default=str(ROOT / "docs" / "benchmarks.md"))
    parser.add_argument("--keep-raw", help="also keep py-spy's collapsed stacks in this file")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="zametano-profile-") as tmp:
        parts, measure, worker_ms = profile(args, Path(tmp))
        if args.keep_raw:
            shutil.copy(Path(tmp) / "profile.txt", args.keep_raw)
    text = report(parts, measure, worker_ms, args)
    print(text)
    if not args.no_docs:
        write_section(Path(args.output), SECTION, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
