"""Round boundaries read from the events (each game's "Rounds" in docs/rules/), for both games."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.card_lottery.table import CardLotteryTable
from domain.chemin_de_fer.table import ChemindeferTable
from domain.games import ROUND_MARKS
from domain.rounds import RoundTracker
from domain.sight import EVERYTHING
from tests.helpers import Seeds, StepClock, pick, rounds_of


def play(game: str, seed: int, commands: int):
    rng, clock, seeds = random.Random(seed), StepClock(), Seeds(seed)
    if game == "chemin-de-fer":
        table = ChemindeferTable.open(["anna", "boris", "vera"], {"decks": 2}, clock())
    else:
        table = CardLotteryTable.open(["olga", "ivan", "anna", "boris"], {"stage2": rng.choice(["beating", "tricks"])},
                                      clock(), banker="olga", dealer="ivan")
    events = [e.public() for e in table.collect_events()]
    for _ in range(commands):
        table.handle(*pick(table.view(table.sight(EVERYTHING)), rng), clock(), seeds, new_salt=seeds.salt)  # every card: moves within bounds
        events += [e.public() for e in table.collect_events()]
    return table, events


common = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@common
@given(game=st.sampled_from(["chemin-de-fer", "card-lottery"]), seed=st.integers(0, 10**6))
def test_rounds_are_numbered_like_the_tables_own_round_counter_and_never_overlap(game, seed):
    table, events = play(game, seed, 200)
    rounds = rounds_of(ROUND_MARKS[game], events)
    counter = table.coup if game == "chemin-de-fer" else table.round
    assert [r["round"] for r in rounds] == list(range(1, len(rounds) + 1))
    assert len(rounds) in (counter, counter - 1)
    for a, b in zip(rounds, rounds[1:]):
        assert a["first_version"] <= a["last_version"] < b["first_version"]


@common
@given(game=st.sampled_from(["chemin-de-fer", "card-lottery"]), seed=st.integers(0, 10**6), cut=st.integers(1, 400))
def test_reading_the_log_in_two_parts_with_the_state_kept_between_finds_the_same_rounds(game, seed, cut):
    """The read model keeps the tracker's state between batches that end at a command boundary."""
    _, events = play(game, seed, 150)
    whole = rounds_of(ROUND_MARKS[game], events)
    cut = min(cut, len(events))
    while cut < len(events) and events[cut]["command"] == events[cut - 1]["command"]:
        cut += 1  # batches end where a command ends
    first = RoundTracker(ROUND_MARKS[game])
    found = [r for e in events[:cut] for r in first.feed(e)] + first.flush()
    second = RoundTracker(ROUND_MARKS[game], first.state)
    found += [r for e in events[cut:] for r in second.feed(e)] + second.flush()
    assert found == whole


def test_a_chemin_de_fer_round_runs_from_the_first_stake_to_the_end_of_the_settling_command():
    _, events = play("chemin-de-fer", 7, 80)
    first = rounds_of(ROUND_MARKS["chemin-de-fer"], events)[0]
    by_version = {e["version"]: e for e in events}
    assert by_version[first["first_version"]]["type"] == "StakePlaced"
    settled = [e for e in events if first["first_version"] <= e["version"] <= first["last_version"]
               and e["type"] in ("CoupSettled", "CoupTied")]
    assert len(settled) == 1
    last = by_version[first["last_version"]]
    assert last["command"] == settled[0]["command"]
    assert by_version[first["last_version"] + 1]["command"] != last["command"]


def test_a_card_lottery_stage_2_is_a_round_of_its_own_starting_inside_the_last_reveal():
    table, events = play("card-lottery", 3, 400)
    rounds = rounds_of(ROUND_MARKS["card-lottery"], events)
    stage2 = [r for r in rounds if r["summary"].startswith("stage 2")]
    assert stage2
    by_version = {e["version"]: e for e in events}
    r = stage2[0]
    assert by_version[r["first_version"]]["type"] == "Stage2Began"
    assert by_version[r["last_version"]]["type"] == "GameEnded"
    before = next(x for x in rounds if x["round"] == r["round"] - 1)
    assert before["last_version"] == r["first_version"] - 1
    assert by_version[before["last_version"]]["type"] == "Stage1Ended"
