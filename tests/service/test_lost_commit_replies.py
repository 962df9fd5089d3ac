"""Whole shoes played on PostgreSQL through a proxy that loses the reply to every COMMIT the server received:
every command answered is recorded exactly once, nothing refused is recorded, and the money adds up, with
and without Idempotency-Key, with group commit on and off."""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest

from service.application import TablesService
from service.config import load
from tests.pg_proxy import CommitDropper
from tests.unit.test_punto_banco_table import fields_within

pytestmark = pytest.mark.postgres

PLAYERS = ["marta", "anna", "boris", "vera"]
TABLES = 2  # played at once, so that group commit writes batches of both


@pytest.fixture
def dropper(postgres_env: dict[str, str]):  # type: ignore[no-untyped-def]
    proxy = CommitDropper((postgres_env["POSTGRES_HOST"], int(postgres_env["POSTGRES_PORT"])))
    try:
        yield proxy
    finally:
        proxy.close()


def through(proxy: CommitDropper, postgres_env: dict[str, str], tmp_path: Any, group_commit: bool) -> TablesService:
    env = {**postgres_env, "POSTGRES_HOST": "127.0.0.1", "POSTGRES_PORT": str(proxy.port),
           "ZAMETANO_DATA_DIR": str(tmp_path)}
    return TablesService(load(env), group_commit=group_commit)


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


# Each lost answer costs the library's retry (0.2 s) and a new connection: a shoe takes minutes.
@pytest.mark.timeout(900)
@pytest.mark.parametrize("group_commit", [False, True], ids=["one-by-one", "group-commit"])
@pytest.mark.parametrize("keyed", [False, True], ids=["no-key", "idempotency-key"])
def test_a_shoe_whose_every_commit_reply_is_lost_records_each_answered_command_once(
    dropper, postgres_env, tmp_path, group_commit, keyed
):
    service = through(dropper, postgres_env, tmp_path, group_commit)
    try:
        tables = [service.open_table("punto-banco", PLAYERS, {"decks": 6, "stop_card": 52}, croupier="marta")["table_id"]
                  for _ in range(TABLES)]
        answers: dict[str, list[tuple[str, Any]]] = {}
        dropper.dropping = True

        def play(i: int) -> None:
            answers[tables[i]] = play_a_shoe(service, tables[i], keyed, seed=i)

        players = [threading.Thread(target=play, args=(i,)) for i in range(TABLES)]
        for t in players:
            t.start()
        for t in players:
            t.join()
        dropping, dropper.dropping = dropper.dropped, False
        commands = sum(len(a) for a in answers.values())
        assert len(answers) == TABLES
        # every command's first save lost its reply after the server had its COMMIT
        assert dropping >= commands
        for table_id in tables:
            assert_recorded_exactly_once(service, table_id, answers[table_id])
            errors = [(c, r) for c, r in answers[table_id] if not isinstance(r, dict)]
            assert errors == []
            report = service.verify(table_id)
            assert report["ok"] is True, report["problems"]
            state = service.current_state(table_id)
            assert sum(state["balances"].values()) + state["house"] == 0
        print(f"{commands} commands, {dropping} COMMIT replies lost")
    finally:
        service.close()
