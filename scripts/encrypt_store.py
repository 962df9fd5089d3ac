"""scripts/encrypt-store TARGET: copies the server's store into a new encrypted one and checks every head.

The source is the store the server's settings name (the same environment: PERSISTENCE_MODULE, SQLITE_DBNAME
or POSTGRES_*, ZAMETANO_DATA_DIR, CIPHER_KEY...), read with the cipher it has (none for a store kept in
clear). TARGET is a new SQLite file, or for PostgreSQL a schema of the same database (made when missing);
it must hold no events. Every stored event (in the order of the log, idempotency records included) and
every table's latest snapshot are copied as they are stored, byte for byte once decrypted, and encrypted
under the target's key: CIPHER_KEY when set, else the cipher key file (ZAMETANO_CIPHER_KEY_FILE, else
cipher-key in the data folder, made now if missing). The read model is not copied: the server rebuilds it
from the log. Then every table's head (version and digest) is read from both stores and must be the same.

Stop the server first: events recorded while the copy runs are not copied (the script says so and fails).
Exit status: 0 copied and every head matches; 1 a head differs, or the source grew during the copy;
2 refused (a setting, a key, a target that is not empty), one line saying why.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts._args import Parser, whole  # noqa: E402

BATCH = 1000
PROGRESS_EVERY = 2.0  # seconds between progress lines


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = Parser(
        prog="scripts/encrypt-store",
        description=__doc__.splitlines()[0].split(": ", 1)[1],
        epilog="Example: ./scripts/encrypt-store var/zametano-encrypted.sqlite, then stop the server, set "
               "SQLITE_DBNAME=var/zametano-encrypted.sqlite (PostgreSQL: POSTGRES_SCHEMA=<the schema>) and start it.",
    )
    parser.add_argument("target", help="the new store: an SQLite file (SQLite), or a schema name (PostgreSQL)")
    parser.add_argument("--batch", type=whole(1), default=BATCH, help=f"events copied per transaction (default {BATCH})")
    return parser.parse_args(argv)


def target_env(env: dict[str, str], module: str, target: str) -> dict[str, str]:
    """The settings of the target store: the source's, with another file or schema."""
    from service.config import ConfigError

    if module == "eventsourcing.sqlite":
        if Path(target).resolve() == Path(env.get("SQLITE_DBNAME", "")).resolve():
            raise ConfigError(f"the target {target} is the source itself: name a new file")
        return {**env, "SQLITE_DBNAME": target, "CREATE_TABLE": "y"}
    if module == "eventsourcing.postgres":
        if not target.isidentifier() or target.lower() != target:
            raise ConfigError(f"a PostgreSQL target is a schema name in lower case (letters, digits, _), not {target!r}")
        if target == env.get("POSTGRES_SCHEMA", "public"):
            raise ConfigError(f"the target schema {target} is the source itself: name a new schema")
        return {**env, "POSTGRES_SCHEMA": target, "CREATE_TABLE": "y"}
    raise ConfigError(f"PERSISTENCE_MODULE={module} is not a store at rest: there is nothing to encrypt")


def make_schema(persistence: dict[str, str], schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(host=persistence.get("POSTGRES_HOST"), port=persistence.get("POSTGRES_PORT", "5432"),
                         dbname=persistence.get("POSTGRES_DBNAME"), user=persistence.get("POSTGRES_USER"),
                         password=persistence.get("POSTGRES_PASSWORD") or None, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))


class Progress:
    """A line on stderr at most every two seconds, and one at the end."""

    def __init__(self, what: str, total: int) -> None:
        self.what, self.total, self.last, self.said = what, total, 0.0, -1

    def __call__(self, done: int, final: bool = False) -> None:
        now = time.monotonic()
        if (final and done != self.said) or now - self.last >= PROGRESS_EVERY:
            self.last, self.said = now, done
            share = 100 * done // self.total if self.total else 100
            print(f"{self.what}: {done} of {self.total} ({share}%)", file=sys.stderr, flush=True)


def recoded(state: bytes, source: Any, target: Any) -> bytes:
    """A stored state as the target keeps it: decrypted with the source's cipher (if any), encrypted with the target's."""
    if source is not None:
        state = source.decrypt(state)
    return target.encrypt(state)


def is_record(topic: str) -> bool:
    """An idempotency record's event (one per command), not a table's: it has no head and no snapshot."""
    from eventsourcing.utils import resolve_topic

    from service.idempotency import IdempotencyRecord

    try:
        cls = resolve_topic(topic)
    except Exception:  # noqa: BLE001 - a class that no longer exists: its head is compared as a table's
        return False
    return isinstance(cls, type) and issubclass(cls, IdempotencyRecord.Created)


def copy_events(source: Any, target: Any, last: int, batch: int) -> list[Any]:
    """Copies the log up to notification ``last`` in its order; returns the ids of its tables, in order."""
    from eventsourcing.persistence import StoredEvent

    progress = Progress("events copied", last)
    seen: dict[Any, None] = {}  # the tables only: a store holds one record per command, many more than tables
    done, start = 0, 1
    while start <= last:
        notes = source.recorder.select_notifications(start, batch, stop=last)
        if not notes:
            break
        target.recorder.insert_events([
            StoredEvent(n.originator_id, n.originator_version, n.topic,
                        recoded(n.state, source.mapper.cipher, target.mapper.cipher)) for n in notes])
        seen.update(dict.fromkeys(n.originator_id for n in notes if not is_record(n.topic)))
        done, start = done + len(notes), notes[-1].id + 1
        progress(min(notes[-1].id, last))
    progress(last, final=True)
    print(f"{done} events copied", file=sys.stderr)
    return list(seen)


def copy_snapshots(source: Any, target: Any, originators: list[Any]) -> int:
    """Copies each aggregate's latest snapshot (older ones serve nothing the latest does not)."""
    from eventsourcing.persistence import StoredEvent

    if source.snapshots is None or target.snapshots is None:
        return 0
    copied = 0
    for originator in originators:
        for snap in source.snapshots.recorder.select_events(originator, desc=True, limit=1):
            target.snapshots.recorder.insert_events([StoredEvent(
                snap.originator_id, snap.originator_version, snap.topic,
                recoded(snap.state, source.mapper.cipher, target.mapper.cipher))])
            copied += 1
    return copied


def compare_heads(source: Any, target: Any, originators: list[Any]) -> tuple[int, list[str]]:
    """Every table's head (version, digest) in both stores; returns the tables compared and the differences."""
    from service.errors import TableNotFound

    progress = Progress("heads compared", len(originators))
    tables, differences = 0, []
    for number, originator in enumerate(originators, 1):
        try:
            before = source.head(str(originator))
        except TableNotFound:
            continue  # an aggregate of an unknown class that holds no table's events
        tables += 1
        try:
            after = target.head(str(originator))
        except Exception as exc:  # noqa: BLE001 - whatever stops the target's head is a difference to report
            differences.append(f"table {originator}: the copy has no readable head ({type(exc).__name__}: {exc})")
            continue
        if (before["version"], before["digest"]) != (after["version"], after["digest"]):
            differences.append(f"table {originator}: version {before['version']} digest {before['digest']} in the "
                               f"source, version {after['version']} digest {after['digest']} in the copy")
        progress(number)
    progress(len(originators), final=True)
    return tables, differences


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    import os

    from service.application import TablesService
    from service.config import ConfigError, load

    if args.batch < 1:
        print("error: --batch is at least 1", file=sys.stderr)
        return 2
    source = target = None
    try:
        env = dict(os.environ)
        settings = load(env)
        goal = target_env(settings.persistence | {k: v for k, v in env.items() if k.startswith("ZAMETANO_")},
                          settings.module, args.target)
        if settings.module == "eventsourcing.postgres":
            make_schema(settings.persistence, args.target)
        source = TablesService(settings, group_commit=False)
        source.check_store()
        last = source.recorder.max_notification_id() or 0
        target = TablesService(load(goal), group_commit=False)
        held = target.recorder.max_notification_id() or 0
        if held:
            raise ConfigError(f"the target {args.target} already holds {held} events: name a new file or an empty schema")
        if target.mapper.cipher is None:
            raise ConfigError(f"the target {args.target} would not be encrypted")
        print(f"copying {last} events from {source.at_rest.describe()} into {args.target}; "
              f"{target.at_rest.describe()}", file=sys.stderr)
        originators = copy_events(source, target, last, args.batch)
        snapshots = copy_snapshots(source, target, originators)
        tables, differences = compare_heads(source, target, originators)
        grown = (source.recorder.max_notification_id() or 0) - last
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        for service in (source, target):
            if service is not None:
                service.close()
    for line in differences:
        print(f"differs: {line}")
    if grown > 0:
        print(f"the source recorded {grown} events during the copy: stop the server, then copy again into a new target")
    if differences or grown > 0:
        return 1
    print(f"ok: {last} events, {snapshots} snapshots and {tables} tables copied into {args.target}, encrypted; "
          "every table's head (version and digest) is the same in both")
    return 0


if __name__ == "__main__":
    sys.exit(main())
