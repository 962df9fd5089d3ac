"""What the benchmarks share: the PostgreSQL test schema, progress lines, building a table of a given
length by random legal play, writing one section of docs/benchmarks.md, and the arithmetic and tables of
their reports (percentiles, medians over rounds, ratios against targets, Markdown tables)."""

from __future__ import annotations

import math
import os
import random
import re
import statistics
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from service.application import TablesService  # noqa: E402
from service.config import load  # noqa: E402
from tests.helpers import pick, postgres_location  # noqa: E402

# The database the benchmarks make their schemas in: the library's own variables, defaulting, as the tests'
# does, to postgres@127.0.0.1:5432/test.
PG = postgres_location(os.environ)
PG_PASSWORD = PG.pop("password") or ""
FAST = {"SNAPSHOT_INTERVAL": "50", "AGGREGATE_CACHE_MAXSIZE": "1000"}
PROGRESS_EVERY = 5000


def progress(text: str) -> None:
    print(f"  {text}", file=sys.stderr, flush=True)


def build(env: dict[str, str], size: int, rng: random.Random, label: str) -> tuple[str, int, float]:
    """A 4-player, 4-deck Chemin de fer table of at least ``size`` events, by random legal play through one
    service with snapshots and the aggregate cache. Returns the table, its head version and the seconds."""
    service = TablesService(load({**env, **FAST}))
    start = time.perf_counter()
    table_id = service.open_table("chemin-de-fer", ["anna", "boris", "vera", "gleb"], {"decks": 4})["table_id"]
    version, next_report = 1, PROGRESS_EVERY
    last_t, last_v = start, version
    while version < size:
        state = service.current_state(table_id)
        command, player, args = pick(state, rng)
        version = service.execute(table_id, command, player, args)["version"]
        if version >= next_report:
            now = time.perf_counter()
            progress(f"{label}: built {version:,}/{size:,} events, {(version - last_v) / (now - last_t):,.0f} events/s "
                     f"(average {version / (now - start):,.0f})")
            last_t, last_v, next_report = now, version, next_report + PROGRESS_EVERY
    seconds = time.perf_counter() - start
    service.close()
    progress(f"{label}: built {version:,} events in {seconds:.1f} s ({version / seconds:,.0f} events/s)")
    return table_id, version, seconds


def pg_connect(**kwargs: object):  # type: ignore[no-untyped-def]
    import psycopg

    return psycopg.connect(**PG, **({"password": PG_PASSWORD} if PG_PASSWORD else {}), **kwargs)  # type: ignore[arg-type]


def postgres_env() -> tuple[dict[str, str], str] | None:
    try:
        schema = f"zametano_bench_{uuid.uuid4().hex[:8]}"
        with pg_connect(autocommit=True, connect_timeout=3) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
    except Exception as exc:  # noqa: BLE001
        progress(f"PostgreSQL skipped (not reachable at {PG['host']}:{PG['port']}): {exc}")
        return None
    return {
        "PERSISTENCE_MODULE": "eventsourcing.postgres", "POSTGRES_HOST": PG["host"], "POSTGRES_PORT": PG["port"],
        "POSTGRES_USER": PG["user"], "POSTGRES_PASSWORD": PG_PASSWORD, "POSTGRES_DBNAME": PG["dbname"], "POSTGRES_SCHEMA": schema,
    }, schema


def drop_schema(schema: str) -> None:
    with pg_connect(autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


def write_section(path: Path, title: str, section: str) -> None:
    """Replaces this benchmark's section of the file (or appends it), leaving every other section as it is."""
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    pattern = re.compile(rf"^{re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda _: section.rstrip("\n") + "\n\n", text, count=1).rstrip("\n") + "\n"
    else:
        text = text.rstrip("\n") + "\n\n" + section.rstrip("\n") + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def percentile(samples: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of the samples, interpolated between the two nearest ranks."""
    if not samples:
        raise ValueError("no samples")
    if not 0 <= q <= 100:
        raise ValueError("q is a percentage, 0 to 100")
    ordered = sorted(samples)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def median_of(values: Sequence[float | None]) -> float | None:
    """The median of what was measured (a round that measured nothing is left out); None if nothing was."""
    measured = [v for v in values if v is not None]
    return statistics.median(measured) if measured else None


def rotated(names: Sequence[str], round_index: int, rounds: int) -> list[str]:
    """Every name once, starting ``round_index / rounds`` of the way along: over the rounds each
    configuration runs early, midway and late, so a slow spell of the machine does not fall on one alone."""
    if not names:
        return []
    start = (round_index * len(names)) // max(rounds, 1) % len(names)
    return list(names[start:]) + list(names[:start])


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]], align: str = "") -> str:
    """A Markdown table; ``align`` has an ``l`` (text) or ``r`` (numbers) per column, by default text first
    and numbers after."""
    align = align or "l" + "r" * (len(headers) - 1)
    if len(align) != len(headers):
        raise ValueError(f"{len(align)} alignments for {len(headers)} columns")
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join("---:" if a == "r" else "---" for a in align) + " |"]
    for row in rows:
        if len(row) != len(headers):
            raise ValueError(f"a row of {len(row)} cells in a table of {len(headers)} columns")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def number(value: float | None, digits: int = 1) -> str:
    """A measured value for a table: thousands separated, a dash for one not measured."""
    return "-" if value is None else f"{value:,.{digits}f}"


@dataclass(frozen=True)
class Target:
    """One ratio a benchmark aims at: ``measured / reference`` at least or at most ``bound``."""

    what: str
    measured: float | None
    reference: float | None
    bound: float
    at_least: bool  # True: the ratio must be at least the bound; False: at most
    unit: str = ""
    missing: str = "not measured"  # the verdict when there is no reference to compare with

    @property
    def ratio(self) -> float | None:
        if self.measured is None or not self.reference:
            return None
        return self.measured / self.reference

    @property
    def verdict(self) -> str:
        ratio = self.ratio
        if self.measured is None:
            return "not measured"
        if ratio is None:
            return self.missing
        # compared at the precision shown, so a ratio printed as the bound is never "not met"
        shown = round(ratio, 2)
        return "met" if (shown >= self.bound if self.at_least else shown <= self.bound) else "not met"

    def row(self) -> list[str]:
        unit = f" {self.unit}" if self.unit else ""
        measured = "-" if self.measured is None else f"{number(self.measured, 2 if self.measured < 100 else 0)}{unit}"
        reference = "-" if self.reference is None else f"{number(self.reference, 2 if self.reference < 100 else 0)}{unit}"
        ratio = "-" if self.ratio is None else f"{self.ratio:.2f}"
        return [self.what, measured, reference, ratio, f"{'>=' if self.at_least else '<='} {self.bound:g}", self.verdict]


def targets_table(targets: Sequence[Target]) -> str:
    return markdown_table(["comparison", "measured", "reference", "ratio", "target", "verdict"],
                          [t.row() for t in targets], align="lrrrrl")
