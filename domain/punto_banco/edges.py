"""The exact house edge of each punto banco spot under a table's rules (docs/rules/punto-banco.md, "The odds").

A coup's outcome probabilities are enumerated exactly over the point values of a fresh shoe of the
table's decks, dealt without replacement, with this game's own rules (``coup.natural_decides``,
``coup.player_draws``, ``coup.banker_draws``, ``coup.outcome``); a spot's edge is then what a stake on
it loses on average per unit staked, as ``rules.settle_stake`` settles it under the table's commission and
tie pay. Exact fractions throughout; standard library and the game's rules only.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from functools import lru_cache
from typing import Any

from domain.punto_banco import coup as C
from domain.punto_banco import rules

VALUES = range(10)
# A stake of 100 units is settled exactly under every commission the table allows (0-10 percent).
PROBE = 100


@lru_cache(maxsize=8)
def outcome_probabilities(decks: int) -> dict[str, Fraction]:
    """The exact probability of a player win, a banker win and a tie in one coup from a fresh shoe.

    Counts ordered deals of point values (player, banker, player, banker, then the third cards), each
    weighted by the card sequences it stands for and brought to six cards, so that all share one
    denominator."""
    counts = [16 * decks, *[4 * decks] * 9]
    n = sum(counts)
    pad = [1] * 7  # pad[k]: the sequences of the 6 - k cards after a deal of k cards
    for k in range(5, -1, -1):
        pad[k] = pad[k + 1] * (n - k)
    tally = {spot: 0 for spot in rules.SPOTS}
    for (p1, b1, p2, b2), weight in _deals(counts, 4):
        player, banker = (p1 + p2) % 10, (b1 + b2) % 10
        if C.natural_decides(player, banker) or not (
                C.player_draws(player) or C.banker_draws(banker, None)):
            tally[C.outcome(player, banker)] += weight * pad[4]
        elif not C.player_draws(player):  # the player stands, the banker draws
            for c in VALUES:
                tally[C.outcome(player, (banker + c) % 10)] += weight * counts[c] * pad[5]
        else:
            _player_draws(counts, weight, player, banker, tally, pad)
    return {spot: Fraction(count, pad[0]) for spot, count in tally.items()}


def _player_draws(counts: list[int], weight: int, player: int, banker: int, tally: dict, pad: list[int]) -> None:
    """The deals where the player's hand draws a third card, then the banker's by the tableau."""
    for x in VALUES:
        w5 = weight * counts[x]
        if not w5:
            continue
        counts[x] -= 1
        final = (player + x) % 10
        if C.banker_draws(banker, x):
            for c in VALUES:
                tally[C.outcome(final, (banker + c) % 10)] += w5 * counts[c]
        else:
            tally[C.outcome(final, banker)] += w5 * pad[5]
        counts[x] += 1


def _deals(counts: list[int], cards: int, dealt: tuple[int, ...] = (), weight: int = 1):
    """Every ordered sequence of ``cards`` point values with the card sequences it stands for; ``counts``
    is left as it was."""
    if len(dealt) == cards:
        yield dealt, weight
        return
    for v in VALUES:
        if counts[v]:
            w = weight * counts[v]
            counts[v] -= 1
            yield from _deals(counts, cards, (*dealt, v), w)
            counts[v] += 1


def spot_edges(table_rules: Mapping[str, Any]) -> dict[str, Fraction]:
    """Each spot's house edge under ``table_rules`` (decks, commission_percent, tie_pays): the average
    loss per unit staked, a push counting as nothing lost, settled by ``rules.settle_stake``."""
    odds = outcome_probabilities(table_rules["decks"])
    edges = {}
    for spot in rules.SPOTS:
        result = Fraction(0)
        for coup_outcome, p in odds.items():
            settled = rules.settle_stake(spot, PROBE, coup_outcome, table_rules)
            if settled.result == rules.WON:
                result += p * (settled.winnings - settled.commission)
            elif settled.result == rules.LOST:
                result -= p * settled.amount
        edges[spot] = -result / PROBE
    return edges
