"""What a Card lottery holder may send now: the cards and the sets of cards its ``expects`` offers.

Each function reads a hand (and what is on the table) and says which choices the rules allow, in the
bounds of ``FieldSpec.expected`` (domain/game.py), so a client with no knowledge of the game can choose.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations, product
from typing import Any

from domain.card_lottery import rules as R
from domain.cards import rank, suit


def lead_bounds(hand: Sequence[str]) -> dict[str, Any]:
    """`beating`: one card, or two of equal rank."""
    pairs = [list(pair) for pair in combinations(hand, 2) if rank(pair[0]) == rank(pair[1])]
    return {"cards": list(hand), "min_count": 1, "max_count": 2, "sets": [[c] for c in hand] + pairs}


def beat_bounds(led: Sequence[str], hand: Sequence[str]) -> dict[str, Any]:
    """`beating`: a higher card of its suit for each led card, no card twice."""
    each = [[c for c in hand if R.beats(card, c)] for card in led]
    return {
        "cards": [c for c in hand if any(c in answers for answers in each)],
        "count": len(led),
        "sets": [list(s) for s in product(*each) if len(set(s)) == len(s)],
    }


def led_suit(trick: Sequence[Sequence[str]]) -> str | None:
    """The suit a trick's first card was led in ([holder, card] pairs in the order played); None before it."""
    return suit(trick[0][1]) if trick else None


def playable(hand: Sequence[str], trick: Sequence[Sequence[str]]) -> list[str]:
    """`tricks`: the cards of the hand that may be played into the trick."""
    return [c for c in hand if R.may_play(c, led_suit(trick), hand)]
