"""What each command moves of each player's money (domain/money.py) and a player's purse (domain/purse.py): the
movements of every game add up to its balances at every step, a debit is the acting player's own (but where a
game's rule takes it from others), a purse refuses what it does not hold and chains its log as a table's does."""

from __future__ import annotations

import random
from collections import Counter
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain import chain
from domain import money as M
from domain.errors import BadArgument
from domain.games import GAMES
from domain.purse import PURSES, WALLET, Purse, PurseShort, purse_id
from domain.sight import EVERYTHING
from tests.helpers import pick
from tests.unit.test_corrections import Played

NOW = datetime(2026, 12, 6, 10, 0, tzinfo=timezone.utc)
# A debit a command takes from a player other than the one it is issued for: the Card lottery's banker collects
# every holder's contribution, and in stage 2 a player who cannot beat pays the pot (docs/rules/card-lottery.md).
TAKES_FROM_OTHERS = {("card-lottery", "collect"), ("card-lottery", "lead"), ("card-lottery", "beat"),
                     ("card-lottery", "play")}


@pytest.mark.parametrize(("before", "after", "types", "expected"), [
    ({"anna": 0}, {"anna": -100}, set(), [("anna", 100, M.DEBIT, "stake")]),
    ({"anna": -100}, {"anna": 95}, set(), [("anna", 195, M.CREDIT, "payout")]),
    ({"anna": -100}, {"anna": -100}, set(), []),
    ({"anna": -100}, {"anna": 0}, {"RoundVoided"}, [("anna", 100, M.CREDIT, "void")]),
    ({"anna": 95}, {"anna": 0}, {"RoundVoided"}, [("anna", 95, M.REVERSAL, "void")]),
    ({}, {"b01": -20}, {"BettorJoined"}, [("b01", 20, M.DEBIT, "stake")]),  # a newcomer starts at 0
], ids=["stake", "payout", "nothing", "void before payment", "void after payment", "newcomer"])
def test_a_commands_movement_is_the_change_of_each_players_position(before, after, types, expected):
    assert [(m.player, m.amount, m.kind, m.reason) for m in M.movements(before, after, types)] == expected


def test_a_transaction_id_is_the_table_the_version_and_the_player_and_a_later_attempts_number():
    assert M.transaction_id("t", 12, "anna") == "t:12:anna"
    assert M.transaction_id("t", 12, "anna", 3) == "t:12:anna:3"
    assert M.rollback_id("t:12:anna:3") == "t:12:anna:3:rollback"


def test_a_chemin_de_fer_bankers_bank_is_held_by_the_table_as_the_punters_stakes_are():
    played = Played("chemin-de-fer", seed=4)
    played.until(lambda p: p.table.bank and p.table.stakes)
    table = played.table
    held = M.held(table)
    assert held[table.banker] == table.bank + table.stakes.get(table.banker, 0)
    for punter, amount in table.stakes.items():
        assert held[punter] >= amount
    assert M.positions(table)[table.banker] == table.balances[table.banker] - held[table.banker]


@settings(max_examples=12, deadline=None)
@given(game=st.sampled_from(sorted(GAMES)), seed=st.integers(0, 10**6))
def test_the_movements_add_up_to_every_players_position_after_every_command(game, seed):
    played = Played(game, seed=seed)
    rng = random.Random(seed)
    moved: Counter[str] = Counter()
    for _ in range(250):
        table = played.table
        state = table.view(table.sight(EVERYTHING))
        if not state["expects"]:
            break
        command, player, fields = pick(state, rng)
        before = M.positions(table)
        events = played.run(command, player, **fields)
        for m in M.movements(before, M.positions(table), {type(e).__name__ for e in events}):
            moved[m.player] += m.signed
            assert m.amount > 0
            if m.kind == M.DEBIT and m.player != player:
                assert (game, command) in TAKES_FROM_OTHERS, (command, player, m)
        assert dict(M.positions(table)) == {p: moved[p] for p in table.balances}


def test_a_voided_round_gives_every_player_back_his_position_from_before_it():
    played = Played("punto-banco", seed=9)
    played.until(lambda p: p.table.phase == "stakes")
    before = M.positions(played.table)
    played.until(lambda p: p.table.stakes and p.table.phase == "stakes")
    played.run("request_correction", "sara", kind="void_round", round=played.table.round_book["number"],
               reason="misdeal", note="")
    request = max(int(r) for r in played.table.corrections["pending"])
    events = played.run("approve_correction", "simon", request=request)
    assert any(type(e).__name__ == "RoundVoided" for e in events)
    assert M.positions(played.table) == {**{p: 0 for p in played.table.balances}, **before}


# --- the purse ------------------------------------------------------------------------------------------------

def purse(money: str = PURSES, deposit: int = 0) -> Purse:
    made = Purse.open("anna", money, "EUR", NOW)
    if deposit:
        made.deposit(deposit, "cash", "", NOW)
    return made


WHERE = {"table": "t", "version": 7, "round": "t:1"}


def test_a_purse_refuses_a_debit_it_does_not_hold_saying_what_it_holds():
    anna = purse(deposit=100)
    with pytest.raises(PurseShort) as refused:
        anna.move(M.DEBIT, 101, "t:7:anna", WHERE, "stake", NOW)
    assert refused.value.details == {"player": "anna", "holds": 100, "needs": 101}
    assert "holds 100" in refused.value.message
    anna.move(M.DEBIT, 100, "t:7:anna", WHERE, "stake", NOW)
    assert anna.balance == 0


def test_a_reversal_is_never_refused_and_may_take_a_purse_below_zero():
    anna = purse(deposit=10)
    anna.move(M.REVERSAL, 25, "t:9:anna", WHERE, "void", NOW)
    assert anna.balance == -15


@pytest.mark.parametrize("amount", [0, -5, 1.5, True, "10", 10**13])
def test_a_cashiers_amount_is_a_whole_number_of_units_within_bounds(amount):
    with pytest.raises(BadArgument, match="whole number of units"):
        purse().deposit(amount, "cash", "", NOW)


def test_a_withdrawal_above_the_balance_is_refused_and_a_wallets_purse_takes_no_cash():
    with pytest.raises(PurseShort, match="holds 30"):
        purse(deposit=30).withdraw(31, "cash", "", NOW)
    with pytest.raises(BadArgument, match="wallet"):
        purse(WALLET).deposit(10, "cash", "", NOW)


def test_a_purses_log_chains_as_a_tables_each_digest_covering_the_one_before():
    anna = purse(deposit=500)
    anna.move(M.DEBIT, 100, "t:7:anna", WHERE, "stake", NOW)
    anna.move(M.CREDIT, 195, "t:9:anna", {**WHERE, "version": 9}, "payout", NOW)
    anna.withdraw(50, "cash", "paid out", NOW - timedelta(days=1))  # an earlier clock still gives a later moment
    events = [e.public() for e in anna.collect_events()]
    prev = ""
    for number, e in enumerate(events, 1):
        assert e["version"] == number
        assert chain.digest(prev, number, e["type"], e["timestamp"], e["actor"], e["data"]) == e["digest"]
        prev = e["digest"]
    assert prev == anna.head and anna.balance == 545
    assert [e["timestamp"] for e in events] == sorted(set(e["timestamp"] for e in events))
    assert anna.id == purse_id("anna")


def test_a_wallets_purse_owes_each_credit_until_delivered_and_rolls_back_a_debit_asked_and_never_counted():
    anna = purse(WALLET)
    first = "t:7:anna"
    anna.ask(anna.next_transaction(first), first, 100, WHERE, NOW)
    assert anna.last_asked(first) == first and first in anna.asked
    anna.roll_back(first, "no answer", NOW)
    assert not anna.asked and anna.due[f"{first}:rollback"]["operation"] == "rollback"
    second = anna.next_transaction(first)
    assert second == f"{first}:2"  # asked again after the rollback: a new id, which the wallet has not refused
    anna.ask(second, first, 100, WHERE, NOW)
    anna.count(second, 900, NOW)
    assert not anna.asked and anna.balance == -100
    anna.owe(M.CREDIT, 195, "t:9:anna", WHERE, "payout", NOW)
    assert set(anna.due) == {f"{first}:rollback", "t:9:anna"}
    anna.delivered("t:9:anna", 1095, NOW)
    anna.delivered(f"{first}:rollback", 1095, NOW)
    assert not anna.due and anna.balance == 95


def test_a_credit_at_the_version_of_a_debit_rolled_back_takes_a_new_id_since_the_wallet_holds_that_one():
    anna = purse(WALLET)
    first = "t:89:anna"
    anna.ask(first, first, 63, {**WHERE, "version": 89}, NOW)
    anna.roll_back(first, "no answer", NOW)  # the stake was not recorded: the table's next command takes version 89
    anna.owe(M.CREDIT, 115, first, {**WHERE, "version": 89}, "payout", NOW)
    assert set(anna.due) == {f"{first}:rollback", f"{first}:2"}
    assert anna.due[f"{first}:2"]["amount"] == 115


def shown_positions(state):
    """Each player's position as a reader's own view of the table shows it: balances less stakes and a bank."""
    out = {}
    for player, balance in state["balances"].items():
        staked = state.get("stakes", {}).get(player, 0)
        held = sum(staked.values()) if isinstance(staked, dict) else staked
        out[player] = balance - held - (state.get("bank", 0) if state.get("banker") == player else 0)
    return out


@pytest.mark.parametrize("game", sorted(GAMES))
def test_the_money_outputs_are_read_from_what_every_reader_is_shown_and_from_no_hidden_part(game):
    # Movements, purses and transactions are computed from positions alone: if every reader's own view gives the
    # same positions after every command, nothing hidden from him (a face-down card, a total) can be in them.
    from domain.sight import AUDITOR, CROUPIER, PLAYER, Viewer

    played = Played(game, seed=11)
    readers = [CROUPIER, Viewer(AUDITOR)] + [Viewer(PLAYER, p) for p in played.table.players]
    for _ in range(200):
        table = played.table
        if not table.view(table.sight(EVERYTHING))["expects"]:
            break
        played.step()
        for reader in readers:
            assert shown_positions(table.view(table.sight(reader))) == M.positions(table), reader
