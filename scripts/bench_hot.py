"""One busy table against many quiet ones: N bettors staking on one open punto banco table, then the same N each on
a table of his own, over HTTP, on PostgreSQL and SQLite (see scripts/bench-hot)."""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _bench import PG, PG_PASSWORD, drop_schema, markdown_table, percentile, pg_connect, progress, write_section  # noqa: E402
from bench_http import Backends, BenchError, Client, Servers, machine, temporary, tree_cpu  # noqa: E402
from scripts._args import Parser, seconds, sizes, whole  # noqa: E402

SECTION = "## One busy table (bench-hot)"
RULES = {"open_seats": True, "min_stake": 1, "max_stake": 10**12, "commission_percent": 0}
STAKE = {"command": "place_stake", "spot": "player", "amount": 1}
WARMUP = 2  # stakes each bettor places before the clock starts (he joins with the first)


class Bettor:
    """One client staking 1 on the player in a loop, without If-Match, on its table."""

    def __init__(self, port: int, name: str, table: str) -> None:
        self.client, self.name, self.table = Client(port), name, table
        self.latencies: list[float] = []
        self.statuses: dict[int, int] = {}
        self.error: BaseException | None = None

    def stake(self, timed: bool) -> None:
        t = time.perf_counter()
        status, raw = self.client.call("POST", f"/tables/{self.table}/commands", {**STAKE, "player": self.name})
        if status not in (200, 409):
            raise BenchError(f"a stake by {self.name} answered {status}: {raw[:300].decode(errors='replace')}")
        if timed:
            self.latencies.append(time.perf_counter() - t)
            self.statuses[status] = self.statuses.get(status, 0) + 1

    def run(self, barrier: threading.Barrier, deadline: list[float]) -> None:
        try:
            for _ in range(WARMUP):
                self.stake(False)
            barrier.wait()
            while time.monotonic() < deadline[0]:
                self.stake(True)
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            self.error = exc
            barrier.abort()
        finally:
            self.client.close()


def open_table(client: Client) -> str:
    """An open punto banco table, shuffled and cut: its stakes are open."""
    table = client.json("POST", "/tables", {"game": "punto-banco", "players": ["marta"], "croupier": "marta",
                                            "rules": RULES})["table_id"]
    client.json("POST", f"/tables/{table}/commands", {"command": "shuffle", "player": "marta"})
    client.json("POST", f"/tables/{table}/commands", {"command": "cut", "player": "marta", "position": 40})
    return table


def measure(port: int, pid: int, n: int, spread: bool, seconds: float, backends: Backends | None,
            appname: str) -> dict[str, float]:
    setup = Client(port)
    try:
        tables = [open_table(setup) for _ in range(n)] if spread else [open_table(setup)] * n
    finally:
        setup.close()
    tag = uuid.uuid4().hex[:6]
    bettors = [Bettor(port, f"bettor-{tag}-{i}", tables[i]) for i in range(n)]
    deadline, marks = [0.0], {}

    def start() -> None:
        marks["cpu"] = tree_cpu(pid)
        marks["pg"] = backends.snapshot(appname) if backends else None
        deadline[0] = time.monotonic() + seconds

    barrier = threading.Barrier(n, action=start)
    threads = [threading.Thread(target=b.run, args=(barrier, deadline), daemon=True) for b in bettors]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    errors = [b.error for b in bettors if b.error is not None and not isinstance(b.error, threading.BrokenBarrierError)]
    if errors:
        raise BenchError(f"a bettor failed: {errors[0]!r}") from errors[0]
    cpu = tree_cpu(pid) - marks["cpu"]
    pg = Backends.spent(marks["pg"], backends.snapshot(appname)) if backends else None
    latencies = [x for b in bettors for x in b.latencies]
    taken = sum(b.statuses.get(200, 0) for b in bettors)
    conflicts = sum(b.statuses.get(409, 0) for b in bettors)
    return {"rate": taken / seconds, "409": float(conflicts), "p50": percentile(latencies, 50) * 1000,
            "p99": percentile(latencies, 99) * 1000, "cpu": (cpu + (pg or 0.0)) / max(taken, 1) * 1000}


def run(args: argparse.Namespace, tmp: Path) -> list[list[str]]:
    rows = []
    run_id = uuid.uuid4().hex[:8]
    for store in args.stores.split(","):
        pg_env, backends, schema = None, None, None
        if store == "pg":
            schema = f"zametano_bench_hot_{run_id}"
            with pg_connect(autocommit=True, connect_timeout=3) as conn:
                conn.execute(f"CREATE SCHEMA {schema}")
            pg_env = {"PERSISTENCE_MODULE": "eventsourcing.postgres", "POSTGRES_HOST": PG["host"],
                      "POSTGRES_PORT": PG["port"], "POSTGRES_USER": PG["user"], "POSTGRES_PASSWORD": PG_PASSWORD,
                      "POSTGRES_DBNAME": PG["dbname"], "POSTGRES_SCHEMA": schema}
            backends = Backends()
        appname = f"zametano-bench-hot-{run_id}"
        servers = Servers(tmp, pg_env, appname)
        try:
            served = servers.ensure(f"{store}-{args.workers}")
            for n in [int(x) for x in args.bettors.split(",")]:
                for spread in (False, True):
                    label = f"{store}, {n} bettors, {'each on his own table' if spread else 'one table'}"
                    progress(f"{label}: {args.seconds:g} s")
                    m = measure(served.port, served.pid, n, spread, args.seconds, backends, appname)
                    progress(f"{label}: {m['rate']:,.0f} stakes/s, {m['409']:.0f} answered 409, p50 {m['p50']:.0f} ms, "
                             f"p99 {m['p99']:.0f} ms, {m['cpu']:.1f} ms CPU a stake")
                    rows.append([{"pg": "PostgreSQL", "sqlite": "SQLite"}[store], str(n),
                                 "each on his own" if spread else "one table", f"{m['rate']:,.0f}", f"{m['409']:.0f}",
                                 f"{m['p50']:.0f} ms", f"{m['p99']:.0f} ms", f"{m['cpu']:.1f} ms"])
        finally:
            servers.stop()
            if backends is not None:
                backends.close()
            if schema is not None:
                drop_schema(schema)
    return rows


def stores(text: str) -> str:
    """An argparse type: pg, sqlite or both, comma-separated."""
    if not text or any(part not in ("pg", "sqlite") for part in text.split(",")):
        raise argparse.ArgumentTypeError(f"must be pg, sqlite or pg,sqlite, not {text!r}")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = Parser(description=__doc__)
    parser.add_argument("--bettors", type=sizes, default="14,100,500", help="the numbers of bettors, comma-separated")
    parser.add_argument("--stores", type=stores, default="pg,sqlite", help="pg, sqlite or both (pg,sqlite)")
    parser.add_argument("--seconds", type=seconds(0.5), default=6.0, help="each measurement's length")
    parser.add_argument("--workers", type=whole(1, 64), default=4, help="the server's worker processes")
    parser.add_argument("--threads", type=whole(1, 256), default=16,
                        help="requests each worker serves at once (WEB_THREADS): a table's batch in a worker is at most this")
    parser.add_argument("--load", default="", help="what else ran on the machine, for the docs")
    parser.add_argument("--no-docs", action="store_true", help="print the table, do not write docs/benchmarks.md")
    args = parser.parse_args(argv)
    os.environ["WEB_THREADS"] = str(args.threads)  # the servers started take this process's environment
    with temporary() as tmp:
        rows = run(args, tmp)
    table = markdown_table(["store", "bettors", "tables", "stakes/s", "answered 409", "p50", "p99", "CPU a stake"],
                           rows, "lrlrrrrr")
    print(table)
    if not args.no_docs:
        when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        section = (f"{SECTION}\n\n`./scripts/bench-hot --seconds {args.seconds:g} --workers {args.workers} --threads {args.threads}`, one run, "
                   f"{when}, {machine()}{'; ' + args.load if args.load else ''}. Each bettor stakes 1 on the player in a "
                   "loop without `If-Match`, on one open punto banco table, then the same bettors each on a table of "
                   f"his own; CPU a stake counts the server's processes and PostgreSQL's backends.\n\n{table}\n")
        write_section(ROOT / "docs" / "benchmarks.md", SECTION, section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
