"""Latency of commands and reads as a table's history grows (see scripts/bench-commands)."""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from service.application import TablesService  # noqa: E402
from service.config import load  # noqa: E402
from tests.helpers import pick  # noqa: E402

PG = {"host": "127.0.0.1", "port": "5432", "user": "postgres", "dbname": "test"}
MODES = {
    "snapshots + cache": {"SNAPSHOT_INTERVAL": "50", "AGGREGATE_CACHE_MAXSIZE": "1000"},
    "neither": {"IS_SNAPSHOTTING_ENABLED": "n", "AGGREGATE_CACHE_MAXSIZE": ""},
}


def progress(text: str) -> None:
    print(f"  {text}", file=sys.stderr, flush=True)


def build(env: dict[str, str], size: int, rng: random.Random) -> str:
    service = TablesService(load({**env, **MODES["snapshots + cache"]}))
    table_id = service.open_table("chemin-de-fer", ["anna", "boris", "vera", "gleb"], {"decks": 4})["table_id"]
    version = 1
    while version < size:
        state = service.current_state(table_id)
        command, player, args = pick(state, rng)
        version = service.execute(table_id, command, player, args)["version"]
        if version % 2000 < 10:
            progress(f"built {version}/{size} events")
    service.close()
    return table_id


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


def postgres_env() -> tuple[dict[str, str], str] | None:
    try:
        import psycopg

        schema = f"zametano_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(**PG, autocommit=True, connect_timeout=3) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
    except Exception as exc:  # noqa: BLE001
        progress(f"PostgreSQL skipped: {exc}")
        return None
    return {
        "PERSISTENCE_MODULE": "eventsourcing.postgres", "POSTGRES_HOST": PG["host"], "POSTGRES_PORT": PG["port"],
        "POSTGRES_USER": PG["user"], "POSTGRES_PASSWORD": "", "POSTGRES_DBNAME": PG["dbname"], "POSTGRES_SCHEMA": schema,
    }, schema


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="100,2000,10000")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--ops", type=int, default=20)
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--output", default=str(ROOT / "docs" / "benchmarks.md"))
    args = parser.parse_args()
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
                table_id = build(env, size, rng)
                for mode in MODES:
                    progress(f"{name}: {size} events, {mode}: {args.repeat} x {args.ops} operations")
                    rows.append((name, size, mode, measure(env, mode, table_id, args.ops, args.repeat, rng)))
    finally:
        for _, _, schema in backends:
            if schema:
                import psycopg

                with psycopg.connect(**PG, autocommit=True) as conn:
                    conn.execute(f"DROP SCHEMA {schema} CASCADE")
        tmp.cleanup()
    lines = [
        "| store | events | snapshots and cache | command (ms) | read (ms) | state at version (ms) |",
        "| --- | ---: | --- | ---: | ---: | ---: |",
    ]
    for name, size, mode, m in rows:
        lines.append(f"| {name} | {size:,} | {mode} | {m['command']:.2f} | {m['read']:.2f} | {m['state at version']:.2f} |")
    table = "\n".join(lines)
    print(table)
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(
        "# Benchmarks\n\n## Command and read latency against history length\n\n"
        f"`./scripts/bench-commands --sizes {args.sizes} --repeat {args.repeat} --ops {args.ops}`: medians of "
        f"{args.repeat * args.ops} operations per cell, through the service layer (no HTTP), on one table of a "
        "4-player, 4-deck Chemin de fer game built by random legal play. 'command' is a random legal command "
        "(read, decide, save); 'read' the current state; 'state at version' a random version in the second half "
        "of the history. Machine: 2 cores.\n\n" + table + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
