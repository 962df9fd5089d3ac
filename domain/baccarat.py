"""The baccarat core: what Chemin de fer (docs/rules/chemin-de-fer.md) and punto banco share.

Both games deal two hands of two cards, count them the same way, stop at once on a natural and draw at
most one third card per hand by the same classic rules. What differs stays with each game: Chemin de fer
leaves some draws to the players' free choice (its ``rules.py`` marks those cells), punto banco fixes
every one of them (``domain/punto_banco/rules.py``).

Every function here is pure and decides from point totals only; a hand is a sequence of cards in the
notation of ``domain.cards``.
"""

from __future__ import annotations

from collections.abc import Sequence

from domain.cards import point_value

DRAW, STAND = "draw", "stand"
NATURAL_TOTALS = (8, 9)


def hand_total(cards: Sequence[str]) -> int:
    """"A hand's total is the sum of its point values mod 10" (A = 1, 2-9 face value, T J Q K = 0)."""
    return sum(point_value(c) for c in cards) % 10


def is_natural(cards: Sequence[str]) -> bool:
    """"A two-card 8 or 9 is a natural": if either hand has one, no third card is drawn."""
    return len(cards) == 2 and hand_total(cards) in NATURAL_TOTALS


def player_choice(total: int) -> str:
    """The classic rule for the hand that plays against the bank: "draw on 0-5, stand on 6-7".

    Totals 8 and 9 are naturals and never reach this rule; they stand all the same. Chemin de fer
    leaves the 5 to the punter's choice and says so in its own rules.
    """
    return DRAW if total <= 5 else STAND


def banker_tableau(banker_total: int, player_third: int | None) -> str:
    """The classic banker's tableau, every cell fixed.

    ``player_third`` is the point value (0-9) of the other hand's third card, or None if that hand stood.
    - The other hand stood: the banker draws on 0-5 and stands on 6-7.
    - Otherwise, by the banker's total B against the third card's value P:
      B 0-2 draws; B 3 draws unless P is 8; B 4 draws if P is 2-7; B 5 draws if P is 4-7;
      B 6 draws if P is 6-7; B 7 stands.
    """
    b, p = banker_total, player_third
    if p is None:
        return DRAW if b <= 5 else STAND
    if b <= 2:
        draws = True
    elif b == 3:
        draws = p != 8
    elif b == 4:
        draws = 2 <= p <= 7
    elif b == 5:
        draws = 4 <= p <= 7
    elif b == 6:
        draws = p in (6, 7)
    else:
        draws = False
    return DRAW if draws else STAND
