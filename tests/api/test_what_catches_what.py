"""What catches what: every way of tampering with a played store, against the three checks an auditor has.

A Chemin de fer table is played past the reveal of a whole shoe, with payments (tests/served.py), and its
signed heads are saved by `scripts/audit BASE --all --save-heads` while the store is honest. Each tampering
is then made on a fresh copy of that store, as someone with write access to the database could, and a new
server process on the copy is asked three things:

- verify: does GET /tables/<id>/verify answer `ok: false`?
- audit:  does `scripts/audit BASE --all` exit 1?
- heads:  does `scripts/audit BASE --all --heads FILE` exit 1 because the heads check itself failed (a
          problem of the source `heads` naming the table at the version the house signed), or only because
          the audit's other checks caught the damage anyway, as they would without the file?

The measured matrix must equal the one docs/auditing.md shows, and every tampering must be caught by something.
On SQLite and on PostgreSQL.
"""

from __future__ import annotations

import sqlite3
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, closing, contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol

import pytest

from service.application import TablesService
from service.config import load
from service.readmodel import rows as index
from tests.served import (SNAPSHOT_INTERVAL, Played, audit, call, copy_store, events_of, play_tables, problem_lines,
                          row_of, serving, sqlite_env)
from tests.helpers import postgres_location
from tests.tampering import Rows

CUT = 20  # events cut off the end of the log (to the start of their command)
FORGED_SEED = "ab" * 32

CAUGHT, MISSED = "✓", "–"
HELD = "– (held; exit 1 from the other checks)"  # the heads check passed, the audit's other checks did not

# tampering: (verify, audit, audit --heads): the table "What catches what" of docs/auditing.md, cell for cell
EXPECTED = {
    "last 20 events deleted, snapshots kept": (CAUGHT, CAUGHT, CAUGHT),
    "last 20 events and the snapshots past the cut deleted": (CAUGHT, CAUGHT, CAUGHT),
    "the same, then the read model rebuilt from the log": (MISSED, MISSED, CAUGHT),
    "every timestamp an hour earlier, digests recomputed": (CAUGHT, CAUGHT, CAUGHT),
    "one event row in the middle deleted": (CAUGHT, CAUGHT, HELD),
    "the revealed seed changed": (CAUGHT, CAUGHT, HELD),
    "the seed changed in the shuffle and the reveal": (CAUGHT, CAUGHT, HELD),
    "a payment's amount changed, digests recomputed": (CAUGHT, CAUGHT, CAUGHT),
    "a dealt card changed, digests recomputed": (CAUGHT, CAUGHT, CAUGHT),
    "two rows' contents exchanged": (CAUGHT, CAUGHT, HELD),
    "one event row made unreadable": (CAUGHT, CAUGHT, HELD),
}


@dataclass
class Facts:
    """What the tamperings need to know of the honest table."""

    table_id: str
    head: int
    cut: int  # the first version cut off: the first of the command that holds the 20th event from the end
    middle: int  # a version inside a finished round, away from the snapshots (every 10 events)
    shuffled: int  # the ShoeShuffled and ShoeRevealed of a whole shoe
    revealed: int
    payment: int
    dealt: int  # a CardDealt from that shoe
    round: int  # the round that holds `middle`


def facts_of(base: str, table_id: str) -> Facts:
    events = events_of(base, table_id)
    rounds = call("GET", f"{base}/tables/{table_id}/rounds?limit=1000")["rounds"]
    shoe = next(e for e in events if e["type"] == "ShoeRevealed" and e["data"]["shoe"] > 1)
    shuffled = next(e for e in events if e["type"] == "ShoeShuffled" and e["data"]["shoe"] == shoe["data"]["shoe"])
    row = rounds[len(rounds) // 2]
    middle = next(v for v in range(row["first_version"] + 2, row["last_version"] - 1) if v % 10 not in (9, 0, 1))
    return Facts(
        table_id=table_id,
        head=events[-1]["version"],
        cut=next(e["version"] for e in events if e["command"] == events[-CUT]["command"]),
        middle=middle,
        shuffled=shuffled["version"],
        revealed=shoe["version"],
        payment=next(e["version"] for e in events if e["type"] == "PaymentMade"),
        dealt=next(e["version"] for e in events if e["type"] == "CardDealt" and e["data"]["shoe"] == shoe["data"]["shoe"]),
        round=row["round"],
    )


# --- the tamperings -----------------------------------------------------------------------------------


def cut(rows: Rows, facts: Facts, env: dict[str, str]) -> None:
    """The last 20 events and the rest of the command they begin in, so that the log ends where a command
    did: a cut inside a command is caught by the rules whatever else was done."""
    assert rows.snapshot_versions()[-1] >= facts.cut  # a snapshot lies past the cut
    rows.delete(facts.cut)


def cut_with_snapshots(rows: Rows, facts: Facts, env: dict[str, str]) -> None:
    cut(rows, facts, env)
    rows.drop_snapshots(after=facts.cut - 1)


def cut_and_read_model_rebuilt(rows: Rows, facts: Facts, env: dict[str, str]) -> None:
    """Everything derived from the log dropped, so that the next server counts the tables again from the
    truncated log: nothing left in the database remembers the end that was cut."""
    cut_with_snapshots(rows, facts, env)
    drop_read_model(env)


def an_hour_earlier(rows: Rows, facts: Facts, env: dict[str, str]) -> None:
    assert rows.shift_time(timedelta(hours=-1))


def row_deleted(rows: Rows, facts: Facts, env: dict[str, str]) -> None:
    rows.delete(facts.middle, facts.middle)


def forge_seed(rows: Rows, version: int) -> None:
    state = rows.state(version)
    assert "seed" in state
    rows.write(version, {**state, "seed": FORGED_SEED})


def revealed_seed(rows: Rows, facts: Facts, env: dict[str, str]) -> None:
    forge_seed(rows, facts.revealed)


def both_seeds(rows: Rows, facts: Facts, env: dict[str, str]) -> None:
    forge_seed(rows, facts.shuffled)
    forge_seed(rows, facts.revealed)


def amount_rechained(rows: Rows, facts: Facts, env: dict[str, str]) -> None:
    edit = lambda v, t, e: {**e, "amount": e["amount"] + 1} if v == facts.payment else None  # noqa: E731
    assert rows.rechain(edit) == [facts.payment]


def card_rechained(rows: Rows, facts: Facts, env: dict[str, str]) -> None:
    edit = lambda v, t, e: {**e, "card": "2h" if e["card"] != "2h" else "3h"} if v == facts.dealt else None  # noqa: E731
    assert rows.rechain(edit) == [facts.dealt]


def rows_exchanged(rows: Rows, facts: Facts, env: dict[str, str]) -> None:
    rows.exchange(facts.middle, facts.middle + 1)


def row_unreadable(rows: Rows, facts: Facts, env: dict[str, str]) -> None:
    rows.write(facts.middle, b"\xff\xfe not an event")


TAMPERINGS: dict[str, Callable[[Rows, Facts, dict[str, str]], None]] = {
    "last 20 events deleted, snapshots kept": cut,
    "last 20 events and the snapshots past the cut deleted": cut_with_snapshots,
    "the same, then the read model rebuilt from the log": cut_and_read_model_rebuilt,
    "every timestamp an hour earlier, digests recomputed": an_hour_earlier,
    "one event row in the middle deleted": row_deleted,
    "the revealed seed changed": revealed_seed,
    "the seed changed in the shuffle and the reveal": both_seeds,
    "a payment's amount changed, digests recomputed": amount_rechained,
    "a dealt card changed, digests recomputed": card_rechained,
    "two rows' contents exchanged": rows_exchanged,
    "one event row made unreadable": row_unreadable,
}

# The read model of service/readmodel/: its four tables, and its position in the notification log (a row of
# the library's tracking table). A table left behind would hold rows the rebuild writes again.
READ_MODEL_TABLES = (index.TABLES, index.ROUNDS, index.SHOES, index.SEAT_ROUNDS)


def drop_read_model(env: dict[str, str]) -> None:
    if env["PERSISTENCE_MODULE"] == "eventsourcing.sqlite":
        with closing(sqlite3.connect(env["SQLITE_DBNAME"])) as db, db:
            for table in READ_MODEL_TABLES:
                db.execute(f"DROP TABLE {table}")
            db.execute("DELETE FROM tracking WHERE application_name = ?", (index.POSITION,))
        return
    import psycopg

    schema = env["POSTGRES_SCHEMA"]
    with psycopg.connect(**postgres_location(env)) as db:
        for table in READ_MODEL_TABLES:
            db.execute(f"DROP TABLE {schema}.{table}")
        db.execute(f"DELETE FROM {schema}.zametano_tracking WHERE application_name = %s", (index.POSITION,))


# --- the three verdicts ---------------------------------------------------------------------------------


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as refused:
        refused.close()
        return refused.code


def verdicts(name: str, base: str, facts: Facts, other: str, heads: Path,
             capsys: pytest.CaptureFixture[str]) -> tuple[str, ...]:
    table = f"{base}/tables/{facts.table_id}"
    answered = {path: status(table + path) for path in (
        "", "/head", "/events?after=0&limit=1000", f"/state?version={facts.middle - 3}", "/verify",
        "/rounds?limit=1000", f"/rounds/{facts.round}")}
    assert {path: code for path, code in answered.items() if code >= 500} == {}, name

    verified = call("GET", f"{table}/verify")
    plain = audit.main([base, "--all"])
    out, err = capsys.readouterr()
    assert plain in (0, 1), f"{name}\n{out}{err}"  # 2 would be an audit that could not finish
    assert "HTTP 5" not in out + err and "Traceback" not in err, name
    held = audit.main([base, "--all", "--heads", str(heads)])
    out, err = capsys.readouterr()
    assert held in (0, 1), f"{name}\n{out}{err}"
    assert "HTTP 5" not in out + err and "Traceback" not in err, name

    heads = row_of(out, facts.table_id)["heads"]
    assert heads in ("ok", "FAILED"), f"{name}\n{out}"  # the heads check ran to its end
    if heads == "FAILED":  # and names the table, at the version the house signed
        assert held == 1 and any(line.startswith(f"heads          version {facts.head} ")
                                 for line in problem_lines(out, facts.table_id)), f"{name}\n{out}"
    assert row_of(out, other)["result"] == "ok", out  # the other table is untouched
    return (
        CAUGHT if verified["ok"] is False else MISSED,
        CAUGHT if plain == 1 else MISSED,
        CAUGHT if heads == "FAILED" else HELD if held == 1 else MISSED,
    )


# --- the stores: an honest one, and a fresh copy of it for each tampering ---------------------------------


class Stores(Protocol):
    """The honest store's settings, and fresh copies of it (their settings)."""

    honest: dict[str, str]

    def copy(self, number: int) -> AbstractContextManager[dict[str, str]]: ...


class SQLiteStores:
    def __init__(self, played: Played, folder: Path) -> None:
        (folder / "honest").mkdir()
        self.folder = folder
        self.honest = sqlite_env(copy_store(played.db, folder / "honest"))

    @contextmanager
    def copy(self, number: int) -> Iterator[dict[str, str]]:
        (self.folder / str(number)).mkdir()
        yield sqlite_env(copy_store(Path(self.honest["SQLITE_DBNAME"]), self.folder / str(number)))


class PostgresStores:
    """The tables played again on PostgreSQL; a copy is a schema of its own, whose tables the service makes
    and which then takes every row of the honest schema's."""

    def __init__(self, env: dict[str, str], folder: Path) -> None:
        self.honest = {**env, "ZAMETANO_DATA_DIR": str(folder), "SNAPSHOT_INTERVAL": SNAPSHOT_INTERVAL}
        with serving(self.honest, steady=True) as base:
            self.tables = play_tables(base)

    def connect(self) -> Any:
        import psycopg

        return psycopg.connect(**postgres_location(self.honest), autocommit=True)

    @contextmanager
    def copy(self, number: int) -> Iterator[dict[str, str]]:
        honest = self.honest["POSTGRES_SCHEMA"]
        env = {**self.honest, "POSTGRES_SCHEMA": f"{honest}_{number}"}
        with self.connect() as db:
            db.execute(f"CREATE SCHEMA {env['POSTGRES_SCHEMA']}")
        try:
            TablesService(load(env)).close()  # makes its tables, empty
            with self.connect() as db, db.transaction():
                names = [name for (name,) in db.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (honest,))]
                for name in names:
                    db.execute(f"DELETE FROM {env['POSTGRES_SCHEMA']}.{name}")
                    db.execute(f"INSERT INTO {env['POSTGRES_SCHEMA']}.{name} OVERRIDING SYSTEM VALUE "
                               f"SELECT * FROM {honest}.{name}")
            yield env
        finally:
            with self.connect() as db:
                db.execute(f"DROP SCHEMA {env['POSTGRES_SCHEMA']} CASCADE")


@pytest.fixture(params=["sqlite", "postgres"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Stores, str, str]]:
    """The stores, and the ids of the two tables played on them: (Chemin de fer, card lottery)."""
    if request.param == "sqlite":
        played = request.getfixturevalue("played")
        yield SQLiteStores(played, tmp_path), played.chemin_de_fer, played.lottery
    else:
        postgres = PostgresStores(request.getfixturevalue("postgres_env"), tmp_path)
        yield postgres, *postgres.tables


def test_every_tampering_is_caught_and_the_matrix_is_the_one_the_readme_shows(
    stores: tuple[Stores, str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ZAMETANO_TOKEN", raising=False)
    store, table_id, other = stores
    heads = tmp_path / "heads.jsonl"
    with serving(store.honest) as base:  # lists every table: the read model catches up, as a live one is
        assert audit.main([base, "--all", "--save-heads", str(heads)]) == 0
        facts = facts_of(base, table_id)
    capsys.readouterr()

    measured = {}
    for number, (name, tamper) in enumerate(TAMPERINGS.items()):
        with store.copy(number) as env:
            tamper(Rows(env, table_id), facts, env)
            with serving(env) as base:
                measured[name] = verdicts(name, base, facts, other, heads, capsys)

    assert measured == EXPECTED, "\n".join(f"{name}: {row}" for name, row in measured.items())
    assert all(CAUGHT in row for row in EXPECTED.values())


def test_the_auditing_page_shows_the_matrix_the_tampering_test_measures() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "auditing.md").read_text(encoding="utf-8")
    section = page.split("## What catches what\n", 1)[1].split("\n#", 1)[0]
    rows = [line.strip("|").split("|") for line in section.splitlines() if line.startswith("| ")]
    shown = {cells[0].strip(): tuple(cell.strip() for cell in cells[1:]) for cells in rows[2:]}  # past the header

    assert shown == EXPECTED
