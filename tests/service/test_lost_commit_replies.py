"""Whole shoes played on PostgreSQL through a proxy that loses the reply to every COMMIT the server received:
every command answered is recorded exactly once, nothing refused is recorded, and the money adds up, with
and without Idempotency-Key, with group commit on and off."""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import eventsourcing.utils
import psycopg
import pytest

from service.application import TablesService
from service.config import load
from tests.conftest import PG
from tests.pg_proxy import CommitDropper
from tests.unit.test_punto_banco_table import fields_within

pytestmark = pytest.mark.postgres

PLAYERS = ["marta", "anna", "boris", "vera"]
TABLES = 2  # played at once, so that group commit writes batches of both


VARIANTS = [(keyed, group_commit) for keyed in (False, True) for group_commit in (False, True)]


@dataclass
class Shoes:
    """One variant's service (through its own proxy) and its tables' answers, once every shoe is over."""

    service: TablesService
    proxy: CommitDropper
    answers: dict[str, list[tuple[str, Any]]] = field(default_factory=dict)
    dropped: int = 0
    failure: BaseException | None = None


def through(proxy: CommitDropper, env: dict[str, str], folder: Path, group_commit: bool) -> TablesService:
    env = {**env, "POSTGRES_HOST": "127.0.0.1", "POSTGRES_PORT": str(proxy.port), "ZAMETANO_DATA_DIR": str(folder)}
    return TablesService(load(env), group_commit=group_commit)


def play_the_variant(shoes: Shoes, keyed: bool) -> None:
    try:
        tables = [shoes.service.open_table("punto-banco", PLAYERS, {"decks": 6, "stop_card": 52},
                                           croupier="marta")["table_id"] for _ in range(TABLES)]
        shoes.proxy.dropping = True

        def play(i: int) -> None:
            shoes.answers[tables[i]] = play_a_shoe(shoes.service, tables[i], keyed, seed=i)

        players = [threading.Thread(target=play, args=(i,)) for i in range(TABLES)]
        for t in players:
            t.start()
        for t in players:
            t.join()
        shoes.dropped, shoes.proxy.dropping = shoes.proxy.dropped, False
    except BaseException as exc:  # noqa: BLE001 - reported by the variant's test
        shoes.failure = exc


@pytest.fixture(scope="module")
def played(postgres_available, tmp_path_factory) -> Iterator[dict[tuple[bool, bool], Shoes]]:  # type: ignore[no-untyped-def]
    """Every variant played at once, each on a schema and a proxy of its own: a lost answer costs the library's
    pause before it tries again (0.2 s) and a new connection, so a shoe is mostly waiting. The pause is
    shortened to a tenth here (what is tested is what is decided after it, not how long it is); with it, and
    played one after the other, the four would hold a test process for ten minutes."""
    schemas, variants = [], {}
    patch = pytest.MonkeyPatch()
    patch.setattr(eventsourcing.utils, "sleep", lambda seconds: time.sleep(seconds / 10))
    try:
        for keyed, group_commit in VARIANTS:
            schema = f"zametano_test_{uuid.uuid4().hex[:12]}"
            with psycopg.connect(**PG, autocommit=True) as conn:
                conn.execute(f"CREATE SCHEMA {schema}")
            schemas.append(schema)
            env = {"PERSISTENCE_MODULE": "eventsourcing.postgres", "POSTGRES_HOST": PG["host"],
                   "POSTGRES_PORT": PG["port"], "POSTGRES_USER": PG["user"], "POSTGRES_PASSWORD": PG["password"] or "",
                   "POSTGRES_DBNAME": PG["dbname"], "POSTGRES_SCHEMA": schema}
            proxy = CommitDropper((PG["host"], int(PG["port"])))
            variants[keyed, group_commit] = Shoes(through(proxy, env, tmp_path_factory.mktemp("lost"), group_commit), proxy)
        runs = [threading.Thread(target=play_the_variant, args=(variants[v], v[0])) for v in VARIANTS]
        for run in runs:
            run.start()
        for run in runs:
            run.join(timeout=1200)
        yield variants
    finally:
        patch.undo()
        for shoes in variants.values():
            shoes.service.close()
            shoes.proxy.close()
        for schema in schemas:
            with psycopg.connect(**PG, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA {schema} CASCADE")


def play_a_shoe(service: TablesService, table_id: str, keyed: bool, seed: int) -> list[tuple[str, Any]]:
    """Random legal play until the shoe is revealed; every command's answer (its result or its error)."""
    rng = random.Random(seed)
    state = service.current_state(table_id)
    answers: list[tuple[str, Any]] = []
    for n in range(2000):
        entry = rng.choices(state["expects"], [1 if e["command"] == "place_stake" else 12 for e in state["expects"]])[0]
        key = f"{table_id}-{n}" if keyed else None
        try:
            result = service.execute(table_id, entry["command"], entry["player"], fields_within(entry, rng),
                                     idempotency_key=key)
        except Exception as exc:  # noqa: BLE001 - an error answer is checked against the log
            answers.append((entry["command"], exc))
            state = service.current_state(table_id)
            continue
        answers.append((entry["command"], result))
        state = result["state"]
        if any(e["type"] == "ShoeRevealed" for e in result["events"]):
            return answers
    raise AssertionError("the shoe never ended")


def assert_recorded_exactly_once(service: TablesService, table_id: str, answers: list[tuple[str, Any]]) -> None:
    """The stored log is the opening and, after it, exactly the events of the commands answered with a
    result, each at the versions its answer gave: none twice, none missing, nothing of a refused command."""
    stored = list(service.iter_events(table_id))
    answered = [e for _, result in answers if isinstance(result, dict) for e in result["events"]]
    opening = [e for e in stored if e["version"] < answered[0]["version"]]
    assert [e["version"] for e in stored] == list(range(1, len(stored) + 1))
    assert [(e["version"], e["type"], e["data"]) for e in stored[len(opening):]] == [
        (e["version"], e["type"], e["data"]) for e in answered
    ]
    stakes = sum(command == "place_stake" and isinstance(result, dict) for command, result in answers)
    assert sum(e["type"] == "StakePlaced" for e in stored) == stakes


@pytest.mark.timeout(1500)
@pytest.mark.parametrize("group_commit", [False, True], ids=["one-by-one", "group-commit"])
@pytest.mark.parametrize("keyed", [False, True], ids=["no-key", "idempotency-key"])
def test_a_shoe_whose_every_commit_reply_is_lost_records_each_answered_command_once(played, keyed, group_commit):
    shoes = played[keyed, group_commit]
    if shoes.failure is not None:
        raise shoes.failure
    service, answers = shoes.service, shoes.answers
    commands = sum(len(a) for a in answers.values())
    assert len(answers) == TABLES
    # every command's first save lost its reply after the server had its COMMIT
    assert shoes.dropped >= commands
    for table_id, answered in answers.items():
        assert_recorded_exactly_once(service, table_id, answered)
        errors = [(c, r) for c, r in answered if not isinstance(r, dict)]
        assert errors == []
        report = service.verify(table_id)
        assert report["ok"] is True, report["problems"]
        state = service.current_state(table_id)
        assert sum(state["balances"].values()) + state["house"] == 0
    print(f"{commands} commands, {shoes.dropped} COMMIT replies lost")
