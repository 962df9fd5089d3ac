"""Latency of commands and reads as a table's history grows (see scripts/bench-commands)."""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts._args import Parser, whole, sizes as sizes_text  # noqa: E402

from _bench import build, drop_schema, postgres_env, progress, write_section  # noqa: E402
from service.application import TablesService  # noqa: E402
from service.config import load  # noqa: E402
from tests.helpers import pick  # noqa: E402

SECTION = "## Command and read latency against history length"

EXPLANATION = (
    "With snapshots (every 50 events) and the aggregate cache, the cost of a command, a read and a replay to "
    "a version does not grow with the table's history. Without them every operation replays the whole table "
    "(about 24 us an event on SQLite and 38 us on PostgreSQL in the run recorded here). A command on PostgreSQL "
    "costs more than on SQLite because of the network round trips of the version check and the insert."
)
MODES = {
    "snapshots + cache": {"SNAPSHOT_INTERVAL": "50", "AGGREGATE_CACHE_MAXSIZE": "1000"},
    "neither": {"IS_SNAPSHOTTING_ENABLED": "n", "AGGREGATE_CACHE_MAXSIZE": ""},
}


def measure(env: dict[str, str], mode: str, table_id: str, ops: int, repeat: int, rng: random.Random) -> dict[str, float]:
    settings_env = {**env, **MODES[mode]}
    settings = load(settings_env)
    service = TablesService(settings, env={k: v for k, v in MODES[mode].items()})
    if mode == "neither":
        service.snapshotting_intervals = {}
    samples: dict[str, list[float]] = {"command": [], "read": [], "state at version": []}
    head = service.current_state(table_id)["version"]
    for _ in range(repeat):
        for _ in range(ops):
            state = service.current_state(table_id)
            command, player, args = pick(state, rng)
            t = time.perf_counter()
            service.execute(table_id, command, player, args)
            samples["command"].append(time.perf_counter() - t)
            t = time.perf_counter()
            service.current_state(table_id)
            samples["read"].append(time.perf_counter() - t)
            t = time.perf_counter()
            service.state_at_version(table_id, rng.randint(max(1, head // 2), head))
            samples["state at version"].append(time.perf_counter() - t)
    service.close()
    return {k: statistics.median(v) * 1000 for k, v in samples.items()}


def main(argv: list[str] | None = None) -> int:
    parser = Parser(description=__doc__)
    parser.add_argument("--sizes", type=sizes_text, default="100,2000,10000")
    parser.add_argument("--repeat", type=whole(1), default=5)
    parser.add_argument("--ops", type=whole(1), default=20)
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--output", default=str(ROOT / "docs" / "benchmarks.md"))
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    rng = random.Random(1)
    backends: list[tuple[str, dict[str, str], str | None]] = []
    tmp = tempfile.TemporaryDirectory()
    backends.append(("SQLite", {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": f"{tmp.name}/bench.sqlite"}, None))
    if not args.no_postgres:
        pg = postgres_env()
        if pg:
            backends.append(("PostgreSQL", pg[0], pg[1]))
    rows = []
    try:
        for name, env, _ in backends:
            for size in sizes:
                progress(f"{name}: building a table of {size} events")
                table_id, _, _ = build(env, size, rng, name)
                for mode in MODES:
                    progress(f"{name}: {size} events, {mode}: {args.repeat} x {args.ops} operations")
                    rows.append((name, size, mode, measure(env, mode, table_id, args.ops, args.repeat, rng)))
    finally:
        for _, _, schema in backends:
            if schema:
                drop_schema(schema)
        tmp.cleanup()
    lines = [
        "| store | events | snapshots and cache | command (ms) | read (ms) | state at version (ms) |",
        "| --- | ---: | --- | ---: | ---: | ---: |",
    ]
    for name, size, mode, m in rows:
        lines.append(f"| {name} | {size:,} | {mode} | {m['command']:.2f} | {m['read']:.2f} | {m['state at version']:.2f} |")
    table = "\n".join(lines)
    print(table)
    write_section(
        Path(args.output),
        SECTION,
        f"{SECTION}\n\n`./scripts/bench-commands --sizes {args.sizes} --repeat {args.repeat} --ops {args.ops}`: medians of "
        f"{args.repeat * args.ops} operations per cell, through the service layer (no HTTP), on one table of a "
        "4-player, 4-deck Chemin de fer game built by random legal play. 'command' is a random legal command "
        "(read, decide, save); 'read' the current state; 'state at version' a random version in the second half "
        "of the history. Machine: 2 cores.\n\n" + table + "\n\n" + EXPLANATION + "\n",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
