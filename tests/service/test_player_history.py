"""A player's history (GET /players/{player}/rounds): every round he took part in at every table, newest first,
paged, with his stakes, result and balance after, each checked against the tables' own states, and the
theoretical loss against the table's decisions summary."""

from __future__ import annotations

import random
import sqlite3
from typing import Any

import pytest

from domain.errors import InvalidPlayers
from service.application import TablesService
from service.config import load
from tests.helpers import Seeds, StepClock, pick

PLAYERS = ["anna", "boris", "vera"]
# Each game's players besides PLAYERS, and its roles.
GAMES = {
    "chemin-de-fer": ([], {}),
    "punto-banco": (["marta"], {"croupier": "marta"}),
    "card-lottery": (["olga", "ivan"], {"banker": "olga", "dealer": "ivan"}),
}


def play(service: TablesService, table_id: str, rounds: int, seed: int) -> None:
    """Random legal play until ``rounds`` rounds are finished."""
    rng = random.Random(seed)
    for _ in range(3000):
        if service.list_rounds(table_id, limit=1000)["rounds"][rounds - 1:]:
            return
        state = service.current_state(table_id)
        if not state["expects"]:
            break
        service.execute(table_id, *pick(state, rng))
    raise AssertionError(f"{rounds} rounds did not finish")


def history(service: TablesService, player: str, limit: int = 3) -> list[dict[str, Any]]:
    """The player's whole history, page by page."""
    rows, after = [], 0
    while True:
        page = service.player_rounds(player, after=after, limit=limit)
        assert len(page["rounds"]) <= limit
        rows += page["rounds"]
        if page["next_after"] is None:
            return rows
        after = page["next_after"]


def open_tables(service: TablesService) -> dict[str, str]:
    tables = {}
    for n, (game, (others, roles)) in enumerate(GAMES.items()):
        tables[service.open_table(game, [*PLAYERS, *others], {}, **roles)["table_id"]] = game
        play(service, list(tables)[-1], 2, seed=n)
    return tables


def test_every_round_a_player_took_part_in_is_listed_newest_first_across_tables_and_games(service):
    tables = open_tables(service)
    for player in PLAYERS:
        rows = history(service, player)
        assert {r["table_id"] for r in rows} == set(tables)
        assert [r["ended_at"] for r in rows] == sorted((r["ended_at"] for r in rows), reverse=True)
        assert len({(r["table_id"], r["round"]) for r in rows}) == len(rows)
        for table_id, game in tables.items():
            mine = [r for r in rows if r["table_id"] == table_id]
            assert all(r["game"] == game and r["player"] == player for r in mine)
            finished = service.list_rounds(table_id, limit=1000)["rounds"]
            moved = [r["round"] for r in finished if balance_at(service, table_id, r["last_version"], player)
                     != balance_at(service, table_id, r["first_version"] - 1, player)]
            assert set(moved) <= {r["round"] for r in mine}  # every round that moved his money is his


def balance_at(service: TablesService, table_id: str, version: int, player: str) -> int:
    return service.state_at(table_id, version)["balances"][player]


def test_each_round_shows_his_stakes_result_and_balance_after_as_the_table_recorded_them(service):
    tables = open_tables(service)
    for player in PLAYERS:
        for row in history(service, player, limit=100):
            table_id = row["table_id"]
            before = balance_at(service, table_id, row["first_version"] - 1, player)
            assert row["balance"] == balance_at(service, table_id, row["last_version"], player)
            assert row["result"] == row["balance"] - before
            assert row["staked"] == sum(row["stakes"].values())
            audit = service.round_audit(table_id, row["round"])
            assert (row["first_version"], row["last_version"], row["summary"]) == (
                audit["first_version"], audit["last_version"], audit["summary"])
            if tables[table_id] == "punto-banco":
                closed = next(e for e in audit["events"] if e["type"] == "StakesClosed")
                assert row["stakes"] == closed["data"]["stakes"].get(player, {})


def test_stakes_and_theoretical_losses_add_up_to_the_tables_decisions_summary(service):
    tables = open_tables(service)
    for table_id, game in tables.items():
        summary = service.decisions(table_id)["players"]
        for player in PLAYERS:
            mine = [r for r in history(service, player, limit=100) if r["table_id"] == table_id]
            if game == "card-lottery":
                assert all(r["theoretical_loss"] is None and set(r["stakes"]) == {"pot"} for r in mine)
                continue
            assert sum(r["staked"] for r in mine) == summary[player]["staked"]
            # Each round's loss is rounded to 1/10000 of a unit; the summary's is the rounded exact sum.
            loss = sum(r["theoretical_loss"] for r in mine)
            assert abs(loss - summary[player]["theoretical_loss"]) <= 0.0001 * (len(mine) + 1)
            assert sum(r["result"] for r in mine) == summary[player]["result"]


def test_a_player_is_found_by_his_name_as_names_are_compared_and_no_one_else_is(service):
    open_tables(service)
    assert history(service, "ANNA") == history(service, "anna") != []
    assert service.player_rounds("ＡＮＮＡ")["rounds"] == service.player_rounds("anna")["rounds"]
    assert service.player_rounds("marta")["rounds"] == []  # the croupier stakes nothing
    assert service.player_rounds("nobody") == {"player": "nobody", "rounds": [], "next_after": None}
    for name in (" anna", "", "house"):  # no table could seat these
        with pytest.raises(InvalidPlayers):
            service.player_rounds(name)


def test_a_page_after_the_last_row_is_empty_and_pages_do_not_overlap(service):
    open_tables(service)
    whole = history(service, "boris", limit=1000)
    paged = history(service, "boris", limit=2)
    assert paged == whole
    first = service.player_rounds("boris", limit=1)
    assert first["rounds"] == whole[:1] and first["next_after"] is not None


def test_the_history_is_rebuilt_from_the_log_alone_when_the_read_model_is_dropped(tmp_path):
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "s.sqlite"),
           "ZAMETANO_DATA_DIR": str(tmp_path)}
    first = TablesService(load(env), clock=StepClock(), new_seed=Seeds())
    try:
        open_tables(first)
        before = {p: history(first, p, limit=100) for p in PLAYERS}
    finally:
        first.close()
    with sqlite3.connect(env["SQLITE_DBNAME"]) as db:
        for table in ("zametano_tables_v3", "zametano_rounds_v3", "zametano_shoes_v3", "zametano_seat_rounds_v3"):
            db.execute(f"DROP TABLE {table}")
        db.execute("DELETE FROM tracking WHERE application_name = 'zametano-read-model-v3'")
    again = TablesService(load(env))
    try:
        assert {p: history(again, p, limit=100) for p in PLAYERS} == before
        assert all(before.values())
    finally:
        again.close()
