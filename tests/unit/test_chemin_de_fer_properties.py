"""Invariants of Chemin de fer under random legal play (hypothesis)."""

from __future__ import annotations

import copy
import json
import random
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.chain import digest
from domain.chemin_de_fer.table import ChemindeferTable
from domain.sight import EVERYTHING
from tests.helpers import Seeds, StepClock, random_args

rules_strategy = st.fixed_dictionaries(
    {},
    optional={
        "decks": st.integers(2, 4),
        "stop_card": st.integers(6, 20),
        "draw_rule": st.sampled_from(["classic", "free"]),
        "auto_forced": st.booleans(),
        "commission_percent": st.integers(0, 50),
    },
)


def play(players: int, rules: dict, seed: int, commands: int):
    """Plays random legal commands; yields the table after each one with the events it appended."""
    rng = random.Random(seed)
    clock, seeds = StepClock(), Seeds(seed)
    names = [f"p{i}" for i in range(players)]
    table = ChemindeferTable.open(names, rules, clock())
    yield table, table.collect_events()
    for _ in range(commands):
        view = table.view(table.sight(EVERYTHING))  # every command legal, as the table itself knows them
        expect = rng.choice(view["expects"])
        table.handle(expect["command"], expect["player"], random_args(view, expect, rng), clock(), seeds, new_salt=seeds.salt)
        yield table, table.collect_events()


common = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@common
@given(players=st.integers(2, 6), rules=rules_strategy, seed=st.integers(0, 10**6))
def test_balances_plus_commission_always_sum_to_zero(players, rules, seed):
    for table, events in play(players, rules, seed, 250):
        assert sum(table.balances.values()) + table.accounts.get("house", 0) == 0
        for e in events:
            if e.type == "PaymentMade":
                assert isinstance(e.amount, int) and e.amount > 0


@common
@given(players=st.integers(2, 6), rules=rules_strategy, seed=st.integers(0, 10**6))
def test_no_view_or_public_event_shows_an_undealt_card_or_an_unrevealed_seed(players, rules, seed):
    dealt: Counter[str] = Counter()
    secret_seeds: set[str] = set()
    for table, events in play(players, rules, seed, 250):
        for e in events:
            public = json.dumps(e.public_data)
            if e.type == "ShoeShuffled":
                if e.deck != "lots":
                    dealt = Counter()
                secret_seeds.add(e.seed)
                assert "seed" not in e.public_data
            if e.type == "ShoeRevealed":
                secret_seeds.discard(e.seed)
            if e.type == "CardDealt":
                dealt[e.card] += 1
            for s in secret_seeds:
                assert s not in public
        view = table.view()
        text = json.dumps(view)
        for s in secret_seeds:
            assert s not in text
        shown = Counter(c for c in view["hands"]["punter"] + view["hands"]["banker"] if c != "??")
        assert not shown - dealt, "a hand shows a card that was never dealt"
        assert set(view["shoe"]) == {"number", "dealt", "remaining"}


@common
@given(players=st.integers(2, 5), rules=rules_strategy, seed=st.integers(0, 10**6))
def test_every_event_chains_to_the_one_before_and_every_card_comes_from_the_shoe_in_order(players, rules, seed):
    prev, version, last_stamp = "", 0, ""
    for table, events in play(players, rules, seed, 150):
        for e in events:
            version += 1
            assert e.originator_version == version
            assert e.timestamp_text > last_stamp
            assert e.digest == digest(prev, version, e.type, e.timestamp_text, e.actor, e.data, e.salts)
            prev, last_stamp = e.digest, e.timestamp_text
            if e.type == "CardDealt":
                assert table.shoe["number"] >= e.shoe
        assert table.head == prev


@common
@given(players=st.integers(2, 5), rules=rules_strategy, seed=st.integers(0, 10**6))
def test_expects_always_names_at_least_one_legal_command_and_each_one_is_accepted(players, rules, seed):
    rng = random.Random(seed)
    for table, _ in play(players, rules, seed, 60):
        view = table.view(table.sight(EVERYTHING))
        assert view["expects"]
        for e in view["expects"]:
            trial = copy.deepcopy(table)
            trial.handle(e["command"], e["player"], random_args(view, e, rng), StepClock()(), seeded := Seeds(seed), new_salt=seeded.salt)
            assert trial.version > table.version
