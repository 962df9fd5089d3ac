"""Replay and round audit against a table's history length, from a fresh service (see scripts/bench-replay)."""

from __future__ import annotations

import os
import random
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts._args import Parser, whole, sizes as sizes_text  # noqa: E402

from _bench import FAST, build, drop_schema, postgres_env, progress, write_section  # noqa: E402
from service.application import TablesService  # noqa: E402
from service.config import load  # noqa: E402
OPERATIONS = ("state at version", "state at moment", "round audit")
SECTION = "## Replay and audit against history length"
TARGET = 2.0
GROWTH = (
    "What grows with the history (found with cProfile): 'state at version' reads the nearest snapshot and at "
    "most 49 events after it, whatever the length, with the same statements at every size. 'state at moment' is "
    "a binary search over single events, so it reads one more event each time the history doubles: about 10 "
    "reads at 1,000 events and 17 at 100,000, logarithmic by design. 'round audit' reads the round's events, a "
    "few events on either side to widen it to whole commands, the snapshot of the state before it (the rows "
    "read give the states before and after it), and only the shoes its cards came from; nothing it reads "
    "depends on the length of the history."
)
TIMESTAMP_SAMPLE = 200


def finished_rounds(service: TablesService, table_id: str) -> list[int]:
    numbers: list[int] = []
    after = 0
    while True:
        page = service.list_rounds(table_id, after, limit=1000)
        numbers += [r["round"] for r in page["rounds"]]
        after = page["next_after"]
        if after is None:
            return numbers


def measure(env: dict[str, str], table_id: str, ops: int, repeat: int, rng: random.Random) -> dict[str, Any]:
    """Medians and 90th percentiles of ``repeat`` runs of ``ops`` of each operation, from a new service
    (cold cache, snapshots in the store), after one timed catch-up of the read model."""
    service = TablesService(load({**env, **FAST}))
    try:
        t = time.perf_counter()
        service.index.catch_up()
        catch_up = time.perf_counter() - t
        head = service.current_state(table_id)["version"]
        rounds = finished_rounds(service, table_id)
        counted = service.index.view.get_tables([table_id])[table_id]["rounds"]
        if len(rounds) != counted or not rounds:
            raise SystemExit(f"error: the read model lists {len(rounds)} finished rounds and counts {counted}")
        shoes = len(service.index.view.get_shoes(table_id))
        moments = []
        for v in sorted(rng.sample(range(1, head + 1), min(head, TIMESTAMP_SAMPLE))):
            event = service.events_page(table_id, after=v - 1, limit=1)["events"][0]
            moments.append((v, datetime.fromisoformat(event["timestamp"])))
        samples: dict[str, list[float]] = {op: [] for op in OPERATIONS}
        run_medians: dict[str, list[float]] = {op: [] for op in OPERATIONS}
        failed_audits = 0
        for _ in range(repeat):
            run: dict[str, list[float]] = {op: [] for op in OPERATIONS}
            for _ in range(ops):
                version = rng.randint(1, head)
                t = time.perf_counter()
                state = service.state_at_version(table_id, version)
                run["state at version"].append(time.perf_counter() - t)
                assert state["version"] == version
                expected, moment = rng.choice(moments)
                t = time.perf_counter()
                state = service.state_at_moment(table_id, moment)
                run["state at moment"].append(time.perf_counter() - t)
                assert state["version"] == expected
                number = rng.choice(rounds)
                t = time.perf_counter()
                audit = service.round_audit(table_id, number)
                run["round audit"].append(time.perf_counter() - t)
                failed_audits += not all(v is not False for v in audit["checks"].values())
            for op in OPERATIONS:
                samples[op] += run[op]
                run_medians[op].append(statistics.median(run[op]) * 1000)
    finally:
        service.close()
    return {
        "median": {op: statistics.median(v) * 1000 for op, v in samples.items()},
        "p90": {op: statistics.quantiles(v, n=10, method="inclusive")[-1] * 1000 for op, v in samples.items()},
        "run medians": run_medians,
        "catch-up": catch_up,
        "events": head,
        "rounds": len(rounds),
        "shoes": shoes,
        "failed audits": failed_audits,
    }


def duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} minutes"


def main(argv: list[str] | None = None) -> int:
    parser = Parser(description=__doc__)
    parser.add_argument("--sizes", type=sizes_text, default="1000,10000,100000", help="history lengths, comma-separated")
    parser.add_argument("--repeat", type=whole(1), default=5, help="runs per cell")
    parser.add_argument("--ops", type=whole(1), default=20, help="operations of each kind per run")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--output", default=str(ROOT / "docs" / "benchmarks.md"))
    args = parser.parse_args(argv)
    sizes = sorted(int(s) for s in args.sizes.split(","))
    began = time.perf_counter()
    rng = random.Random(args.seed)
    tmp = tempfile.TemporaryDirectory()
    backends: list[tuple[str, dict[str, str], str | None]] = [
        ("SQLite", {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": f"{tmp.name}/bench.sqlite"}, None)
    ]
    if not args.no_postgres:
        pg = postgres_env()
        if pg:
            backends.append(("PostgreSQL", pg[0], pg[1]))
    results: list[tuple[str, int, float, dict[str, Any]]] = []
    try:
        for name, env, _ in backends:
            for size in sizes:
                progress(f"{name}: building a table of {size:,} events")
                table_id, _, built = build(env, size, rng, name)
                progress(f"{name}: {size:,} events: fresh service, {args.repeat} x {args.ops} of each operation")
                m = measure(env, table_id, args.ops, args.repeat, rng)
                progress(f"{name}: {size:,} events: read-model catch-up {m['catch-up']:.2f} s; medians "
                         + ", ".join(f"{op} {m['median'][op]:.2f} ms" for op in OPERATIONS))
                results.append((name, size, built, m))
    finally:
        for _, _, schema in backends:
            if schema:
                drop_schema(schema)
        tmp.cleanup()

    smallest = {name: m for name, size, _, m in results if size == sizes[0]}
    lines = [
        "| store | events | operation | median (ms) | p90 (ms) | ratio to the smallest size |",
        "| --- | ---: | --- | ---: | ---: | ---: |",
    ]
    for name, size, _, m in results:
        for op in OPERATIONS:
            ratio = m["median"][op] / smallest[name]["median"][op]
            lines.append(f"| {name} | {m['events']:,} | {op} | {m['median'][op]:.2f} | {m['p90'][op]:.2f} | {ratio:.2f} |")
    table = "\n".join(lines)

    setup = [
        "| store | events | finished rounds | shoes | build (s) | build (events/s) | read-model catch-up (s) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, size, built, m in results:
        setup.append(f"| {name} | {m['events']:,} | {m['rounds']:,} | {m['shoes']:,} | {built:.1f} | {m['events'] / built:,.0f} | "
                     f"{m['catch-up']:.2f} |")

    verdicts = []
    largest = {name: m for name, size, _, m in results if size == sizes[-1]}
    for name in largest:
        for op in OPERATIONS:
            ratio = largest[name]["median"][op] / smallest[name]["median"][op]
            ok = ratio <= TARGET
            verdicts.append(f"- {name}, {op}: {sizes[-1]:,}/{sizes[0]:,} events = {ratio:.2f} "
                            f"({'PASS' if ok else 'FAIL'}, target at most {TARGET:g})")
    failed = sum(m["failed audits"] for *_, m in results)
    elapsed = time.perf_counter() - began

    print(table)
    print()
    print("\n".join(setup))
    print()
    print("\n".join(verdicts))
    if failed:
        print(f"\nwarning: {failed} round audits reported a failed check")
    print(f"\ntotal run time {duration(elapsed)}")

    cores = os.cpu_count() or 1
    command = f"./scripts/bench-replay --sizes {','.join(map(str, sizes))} --repeat {args.repeat} --ops {args.ops}"
    if args.no_postgres:
        command += " --no-postgres"
    section = (
        f"{SECTION}\n\n"
        f"`{command}`: one 4-player, 4-deck Chemin de fer table per size, built by random legal play through the "
        "service (snapshots every 50 events, aggregate cache on). Each size is then measured from a new "
        "`TablesService` (empty aggregate cache, snapshots in the store), after one catch-up of the read model "
        f"that is timed apart. Medians and 90th percentiles of {args.repeat} runs of {args.ops} operations of each "
        "kind (interleaved): 'state at version' is a random version of the whole history, 'state at moment' the "
        "timestamp of a random event (a sample of "
        f"{TIMESTAMP_SAMPLE}), 'round audit' a random finished round with all its checks. Machine: {cores} "
        f"core{'s' if cores != 1 else ''}; the whole run took {duration(elapsed)}.\n\n"
        + table + "\n\n"
        + f"Ratios of the largest to the smallest size (target: at most {TARGET:g}):\n\n"
        + "\n".join(verdicts) + "\n\n"
        + GROWTH + "\n\n"
        + "Building the tables and catching the read model up from the log (once, from a new read model; a "
        "running service catches up incrementally):\n\n"
        + "\n".join(setup) + "\n"
    )
    write_section(Path(args.output), SECTION, section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
