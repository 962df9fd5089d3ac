"""expects lets any client play: every field of every legal command comes with the bounds legal now, and a
player that keeps within them (knowing nothing of the game) is never refused; just outside them it is."""

from __future__ import annotations

import copy
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.cards import new_deck
from domain.errors import DomainError
from domain.games import GAMES
from domain.sight import EVERYTHING
from tests.helpers import Seeds, StepClock, pick, random_args

common = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def open_any(name: str, clock: StepClock):
    """A table of the game from its Game alone: enough players, the roles taken by the first ones."""
    game = GAMES[name]
    players = [f"p{i}" for i in range(max(game.players[0], len(game.roles) + 2, 3))]
    return game.open(players, {}, clock(), **dict(zip(game.roles, players)))


def played(name: str, seed: int, commands: int):
    """The table after each of ``commands`` random commands chosen from expects alone."""
    rng, clock, seeds = random.Random(seed), StepClock(), Seeds(seed)
    table = open_any(name, clock)
    table.collect_events()
    for _ in range(commands):
        yield table, clock, seeds
        table.handle(*pick(table.view(table.sight(EVERYTHING)), rng), clock(), seeds, new_salt=seeds.salt)
        table.collect_events()


def accepted(table, clock, seeds, command, player, fields) -> bool:
    """Whether the rules take the command now, tried on a copy of the table."""
    trial = copy.deepcopy(table)
    try:
        trial.handle(command, player, fields, clock(), seeds, new_salt=seeds.salt)
    except DomainError:
        return False
    return True


@common
@given(name=st.sampled_from(sorted(GAMES)), seed=st.integers(0, 10**6))
def test_every_expected_command_lists_each_of_its_fields_with_its_kind(name, seed):
    specs = GAMES[name].commands
    for table, _, _ in played(name, seed, 150):
        for entry in table.expects():
            spec = specs[entry["command"]].fields
            assert set(entry["fields"]) == set(spec)
            for field, bounds in entry["fields"].items():
                assert bounds["kind"] == spec[field].kind and bounds["optional"] == spec[field].optional
                if bounds["kind"] in ("int", "amount"):
                    assert bounds["min"] <= bounds["max"]
                if bounds["kind"] in ("card", "cards"):
                    assert bounds["cards"]


@common
@given(name=st.sampled_from(sorted(GAMES)), seed=st.integers(0, 10**6))
def test_a_number_at_either_end_of_its_bounds_is_taken_and_one_past_either_end_is_refused(name, seed):
    checked = 0
    for table, clock, seeds in played(name, seed, 120):
        for entry in table.expects():
            for field, bounds in entry["fields"].items():
                if bounds["kind"] not in ("int", "amount"):
                    continue
                checked += 1
                command, player, low, high = entry["command"], entry["player"], bounds["min"], bounds["max"]
                others = random_args(table.view(table.sight(EVERYTHING)), entry, random.Random(seed))  # the other fields, within bounds
                for value, taken in ((low, True), (high, True), (low - 1, False), (high + 1, False)):
                    assert accepted(table, clock, seeds, command, player, {**others, field: value}) is taken
    assert checked


@common
@given(seed=st.integers(0, 10**6))
def test_every_listed_set_of_cards_is_taken_and_a_card_outside_the_bounds_is_refused(seed):
    rng = random.Random(seed)
    checked = 0
    for table, clock, seeds in played("card-lottery", seed, 400):
        for entry in table.expects():
            for field, bounds in entry["fields"].items():
                if bounds["kind"] not in ("card", "cards"):
                    continue
                checked += 1
                command, player = entry["command"], entry["player"]
                values = bounds["sets"] if bounds["kind"] == "cards" else bounds["cards"]
                for value in rng.sample(values, min(3, len(values))):
                    assert accepted(table, clock, seeds, command, player, {field: value})
                outside = next(c for c in new_deck() if c not in bounds["cards"])
                wrong = [outside] * bounds.get("count", 1) if bounds["kind"] == "cards" else outside
                assert not accepted(table, clock, seeds, command, player, {field: wrong})
    assert checked


def test_a_stake_is_bounded_by_the_uncovered_rest_of_the_bank_and_a_cut_by_the_shoe():
    clock, seeds = StepClock(), Seeds(1)
    table = GAMES["chemin-de-fer"].open(["anna", "boris", "vera"], {"decks": 2}, clock())
    table.handle("draw_seats", "anna", {}, clock(), seeds, new_salt=seeds.salt)
    table.handle("shuffle", table.banker, {}, clock(), seeds, new_salt=seeds.salt)
    [cut] = table.expects()
    assert cut["fields"] == {"position": {"kind": "int", "optional": False, "min": 1, "max": 103}}
    table.handle("cut", cut["player"], {"position": 50}, clock(), seeds, new_salt=seeds.salt)
    [bank] = [e for e in table.expects() if e["command"] == "post_bank"]
    assert bank["fields"]["amount"]["min"] == 1 and bank["fields"]["amount"]["max"] >= 10**9
    table.handle("post_bank", table.banker, {"amount": 100}, clock(), seeds, new_salt=seeds.salt)
    first = table.expects()[0]
    assert first["command"] == "place_stake" and first["fields"]["amount"]["max"] == 100
    table.handle("place_stake", first["player"], {"amount": 30}, clock(), seeds, new_salt=seeds.salt)
    second = table.expects()[0]
    assert second["fields"]["amount"] == {"kind": "amount", "optional": False, "min": 1, "max": 70}


def test_the_lottery_distribution_is_bounded_by_the_pot_and_each_deck_by_its_owner():
    clock, seeds = StepClock(), Seeds(1)
    table = GAMES["card-lottery"].open(["ivan", "olga", "h1", "h2"], {}, clock(), banker="ivan", dealer="olga")
    assert [e["fields"]["deck"]["choices"] for e in table.expects()] == [["banker"], ["dealer"]]
    table.handle("shuffle", "ivan", {"deck": "banker"}, clock(), seeds, new_salt=seeds.salt)
    table.handle("shuffle", "olga", {"deck": "dealer"}, clock(), seeds, new_salt=seeds.salt)
    [collect] = table.expects()
    assert collect["fields"]["amount"]["optional"] is True and collect["fields"]["amount"]["min"] == 2
    table.handle("collect", "ivan", {}, clock(), seeds, new_salt=seeds.salt)
    table.handle("lay_out", "ivan", {}, clock(), seeds, new_salt=seeds.salt)
    [distribute] = table.expects()
    assert distribute["fields"]["amounts"] == {"kind": "amounts", "optional": False, "count": 4, "min": 1, "sum": 20}


@pytest.mark.parametrize("name", sorted(GAMES))
def test_the_demo_player_plays_every_game_from_expects_alone(name):
    for _ in played(name, 7, 300):
        pass
