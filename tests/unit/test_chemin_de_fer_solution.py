"""The exact solution of Chemin de fer's draw game (domain/chemin_de_fer/solution.py): the published
Kemeny-Snell figures, exact optimality checks, an independent enumeration, and play by simulation."""

from __future__ import annotations

import dataclasses
import math
import random
from fractions import Fraction

import pytest

from domain import cards
from domain.chemin_de_fer import rules, solution as S
from tests.helpers import load_script

DECKS = [None, 1, 2, 6, 8, 12]  # None: the infinite shoe


@pytest.fixture(scope="module")
def odds():
    return load_script("odds", "odds_for_the_solution")


def test_the_infinite_shoe_free_game_is_kemeny_and_snells():
    """Kemeny and Snell (1957): the punter draws on 5 with probability 9/11; the game is worth 0.0128 to
    the banker."""
    solved = S.solve(None, "free")
    assert solved.punter[5] == Fraction(9, 11)
    assert round(float(solved.value), 4) == 0.0128
    # Every other total of the punter is decided by dominance: draw on 0-4, stand on 6-7.
    assert [solved.punter[t] for t in range(8)] == [1, 1, 1, 1, 1, Fraction(9, 11), 0, 0]


@pytest.mark.parametrize("decks", DECKS)
@pytest.mark.parametrize("rule", rules.DRAW_RULES)
def test_no_side_gains_by_changing_its_play_in_any_cell(decks, rule):
    solved = S.solve(decks, rule)
    assert S.deviations(solved) == []
    assert all(0 <= p <= 1 for p in [*solved.punter.values(), *solved.banker.values()])
    assert solved.value == S.expected_gain(decks, solved.punter, solved.banker)


@pytest.mark.parametrize("decks", [None, 8])
def test_a_play_that_is_not_optimal_is_caught(decks):
    solved = S.solve(decks, "free")
    punter_off = dataclasses.replace(solved, punter={**solved.punter, 5: Fraction(1, 2)})
    banker_off = dataclasses.replace(solved, banker={**solved.banker, (3, 9): Fraction(0)})
    forced_off = dataclasses.replace(solved, punter={**solved.punter, 7: Fraction(1)})
    assert [text.split(" in ")[-1] for text in S.deviations(punter_off)] == ["(6, 'stood')"]
    # The banker gives away value at 3 against a 9, and the punter's mix on 5 is no longer indifferent.
    assert [text.split(" in ")[-1] for text in S.deviations(banker_off)] == ["(3, 9)", "5"]
    assert S.deviations(forced_off)[-1].startswith("the punter gains")


@pytest.mark.parametrize("decks", [None, 1, 8])
def test_the_free_cells_are_the_rules_own(decks):
    classic = S.solve(decks, "classic")
    assert classic.punter_free == (5,)
    assert set(classic.banker_free) == rules.FREE_TABLEAU_CELLS
    free = S.solve(decks, "free")
    assert free.punter_free == tuple(range(8)) and len(free.banker_free) == 88


@pytest.mark.parametrize("decks", [3, 6, 8])
def test_the_classic_solution_draws_every_free_cell_and_is_worth_what_the_enumeration_gives(odds, decks):
    """Under the classic rule dominance alone solves the game: the punter draws on 5, the banker draws at
    3 against a 9 and at 5 against a 4; the value is then P(banker) - P(punter) of scripts/odds' own
    enumeration, which resolves every free choice as a draw (independent code)."""
    solved = S.solve(decks, "classic")
    assert solved.punter[5] == 1 and solved.banker[(3, 9)] == solved.banker[(5, 4)] == 1
    p = odds.coup_probabilities(decks, "classic")
    assert solved.value == p["banker"] - p["punter"]


@pytest.mark.parametrize("decks", [1, 2])
def test_from_one_or_two_decks_the_classic_banker_stands_at_5_against_a_4(decks):
    solved = S.solve(decks, "classic")
    assert solved.punter[5] == 1 and solved.banker[(3, 9)] == 1 and solved.banker[(5, 4)] == 0


def test_drawing_in_every_free_cell_of_the_free_game_is_even(odds):
    """Both hands drawing every time are dealt alike: the enumeration gives no side an edge, and so does
    the solver's payoff for that play."""
    punter = {t: Fraction(1) for t in S.PUNTER_CELLS}
    banker = {c: Fraction(1) for c in S.BANKER_CELLS}
    p = odds.coup_probabilities(2, "free")
    assert S.expected_gain(2, punter, banker) == p["banker"] - p["punter"] == 0


def simulate(solved: S.Solution, coups: int, seed: int) -> tuple[float, float]:
    """Coups dealt from a full shoe (with replacement for the infinite one), each side playing its solution
    by a seeded draw; the banker's mean gain and its standard error. Totals, naturals and the winner are
    the rules' own."""
    rng = random.Random(seed)
    shoe = cards.new_deck(solved.decks or 1)
    gains = {rules.BANKER: 1, rules.PUNTER: -1, rules.TIE: 0}
    total = square = 0
    for _ in range(coups):
        dealt = rng.sample(shoe, 6) if solved.decks else [rng.choice(shoe) for _ in range(6)]
        punter, banker, third = [dealt[0], dealt[2]], [dealt[1], dealt[3]], S.STOOD
        if not (rules.is_natural(punter) or rules.is_natural(banker)):
            if rng.random() < solved.punter[rules.hand_total(punter)]:
                punter.append(dealt[4])
                third = cards.point_value(dealt[4])
            if rng.random() < solved.banker[(rules.hand_total(banker), third)]:
                banker.append(dealt[5])
        gain = gains[rules.coup_winner(rules.hand_total(punter), rules.hand_total(banker))]
        total += gain
        square += gain * gain
    mean = total / coups
    return mean, math.sqrt((square / coups - mean * mean) / coups)


@pytest.mark.parametrize(("decks", "rule", "seed"), [(None, "free", 1), (8, "free", 2), (6, "classic", 3)])
def test_both_solutions_played_against_each_other_give_the_value_within_four_standard_errors(decks, rule, seed):
    solved = S.solve(decks, rule)
    mean, error = simulate(solved, 40_000, seed)
    assert abs(mean - float(solved.value)) < 4 * error
