"""What the benchmarks share: the PostgreSQL test schema, progress lines, building a table of a given
length by random legal play, and writing one section of docs/benchmarks.md."""

from __future__ import annotations

import random
import re
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from service.application import TablesService  # noqa: E402
from service.config import load  # noqa: E402
from tests.helpers import pick  # noqa: E402

PG = {"host": "127.0.0.1", "port": "5432", "user": "postgres", "dbname": "test"}
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


def postgres_env() -> tuple[dict[str, str], str] | None:
    try:
        import psycopg

        schema = f"zametano_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(**PG, autocommit=True, connect_timeout=3) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
    except Exception as exc:  # noqa: BLE001
        progress(f"PostgreSQL skipped (not reachable at {PG['host']}:{PG['port']}): {exc}")
        return None
    return {
        "PERSISTENCE_MODULE": "eventsourcing.postgres", "POSTGRES_HOST": PG["host"], "POSTGRES_PORT": PG["port"],
        "POSTGRES_USER": PG["user"], "POSTGRES_PASSWORD": "", "POSTGRES_DBNAME": PG["dbname"], "POSTGRES_SCHEMA": schema,
    }, schema


def drop_schema(schema: str) -> None:
    import psycopg

    with psycopg.connect(**PG, autocommit=True) as conn:
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
