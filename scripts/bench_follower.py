"""The first round audit after a burst of commands, with and without the read model's follower (see
scripts/bench-follower)."""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts._args import Parser, whole  # noqa: E402

from _bench import FAST, drop_schema, postgres_env, progress, write_section  # noqa: E402
from service.application import TablesService  # noqa: E402
from service.config import load  # noqa: E402
from tests.helpers import pick  # noqa: E402

SECTION = "## The first round audit after a burst of commands"
EXPLANATION = (
    "The follower shares the process (and here the machine's two cores, with the database) with the commands: "
    "it reads and indexes what was recorded every quarter of a second, one transaction for the whole batch. A "
    "command's median latency barely moves; a command that overlaps one of those batches waits for it, which "
    "shows in the 90th percentile. What the follower has not indexed yet when the audit comes (the lag) is "
    "indexed at once, the audit waking it."
)
PLAYERS = ["anna", "boris", "vera", "gleb"]


def burst(env: dict[str, str], follow: bool, commands: int, tables: int, seed: int) -> dict[str, float]:
    """``commands`` random legal commands spread over ``tables`` new tables, one after another, then at once
    the audit of the last round finished; a fresh store each time, so both modes start from nothing."""
    rng = random.Random(seed)
    service = TablesService(load({**env, **FAST}), follow=follow)
    try:
        ids = [service.open_table("chemin-de-fer", PLAYERS, {"decks": 4})["table_id"] for _ in range(tables)]
        service.list_tables()  # the read model starts level with the log in both modes
        latencies = []
        for i in range(commands):
            table_id = ids[i % tables]
            command, player, args = pick(service.current_state(table_id), rng)
            t = time.perf_counter()
            service.execute(table_id, command, player, args)
            latencies.append(time.perf_counter() - t)
        lag = service.read_model_status()["lag"]
        table_id = max(ids, key=lambda t: service.current_state(t)["round"])
        number = service.current_state(table_id)["round"] - 1
        t = time.perf_counter()
        service.round_audit(table_id, number)
        audit = time.perf_counter() - t
    finally:
        service.close()
    return {"command": statistics.median(latencies) * 1000, "p90": sorted(latencies)[len(latencies) * 9 // 10] * 1000,
            "lag": lag, "audit": audit * 1000}


def fresh_store(name: str, tmp: str, run: int) -> tuple[dict[str, str], str | None]:
    if name == "SQLite":
        return {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": f"{tmp}/follower-{run}.sqlite"}, None
    pg = postgres_env()
    if pg is None:
        raise RuntimeError("PostgreSQL is not reachable")
    return pg


def main(argv: list[str] | None = None) -> int:
    parser = Parser(description=__doc__)
    parser.add_argument("--commands", type=whole(1), default=1000)
    parser.add_argument("--tables", type=whole(1), default=4)
    parser.add_argument("--repeat", type=whole(1), default=3)
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--output", default=str(ROOT / "docs" / "benchmarks.md"))
    args = parser.parse_args(argv)
    backends = ["SQLite"] + ([] if args.no_postgres or postgres_env_missing() else ["PostgreSQL"])
    results: dict[tuple[str, bool], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        run = 0
        for name in backends:
            for r in range(args.repeat):
                for follow in (False, True):  # interleaved, so that a busier moment of the machine hits both
                    run += 1
                    env, schema = fresh_store(name, tmp, run)
                    progress(f"{name}, {'follower' if follow else 'no follower'}: run {r + 1}/{args.repeat}, "
                             f"{args.commands} commands")
                    try:
                        results.setdefault((name, follow), []).append(burst(env, follow, args.commands, args.tables, r))
                    finally:
                        if schema:
                            drop_schema(schema)
    rows = [(name, follow, {k: statistics.median(x[k] for x in runs) for k in runs[0]})
            for (name, follow), runs in results.items()]
    lines = [
        "| store | read model | command median (ms) | command p90 (ms) | lag after the burst (events) | first round audit (ms) |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for name, follow, m in rows:
        mode = "follower" if follow else "indexed by the query"
        lines.append(f"| {name} | {mode} | {m['command']:.2f} | {m['p90']:.2f} | {m['lag']:,.0f} | {m['audit']:.1f} |")
    table = "\n".join(lines)
    print(table)
    write_section(
        Path(args.output),
        SECTION,
        f"{SECTION}\n\n`./scripts/bench-follower --commands {args.commands} --tables {args.tables} --repeat "
        f"{args.repeat}`: medians of {args.repeat} runs of each kind (interleaved), each on a new store: {args.commands} random legal "
        f"commands spread over {args.tables} new 4-player Chemin de fer tables through one service (no HTTP), "
        "then at once the audit of the last finished round, which needs the read model to hold everything "
        "recorded before it. Without a follower that audit indexes the whole burst first; with one it finds the "
        "read model (nearly) level with the log. Machine: 2 cores.\n\n" + table + "\n\n" + EXPLANATION + "\n",
    )
    return 0


def postgres_env_missing() -> bool:
    pg = postgres_env()
    if pg is None:
        return True
    drop_schema(pg[1])
    return False


if __name__ == "__main__":
    sys.exit(main())
