"""Cards and their notation (docs/rules/chemin-de-fer.md, "Cards, money and seats").

A card is a two-character string, rank then suit: ``Ts``, ``Ah``, ``2c``. Strings keep events and
snapshots plain JSON; the helpers here are the only place that knows how to read them.
"""

from __future__ import annotations

RANKS = "23456789TJQKA"
SUITS = "shdc"
DECK_SIZE = len(RANKS) * len(SUITS)


def new_deck(decks: int = 1) -> list[str]:
    """The unshuffled order docs/design.md fixes: per deck, suits s h d c, ranks 2..A within a suit."""
    return [r + s for _ in range(decks) for s in SUITS for r in RANKS]


def is_card(text: object) -> bool:
    return isinstance(text, str) and len(text) == 2 and text[0] in RANKS and text[1] in SUITS


def rank(card: str) -> str:
    return card[0]


def suit(card: str) -> str:
    return card[1]


def rank_order(card: str) -> int:
    """0 for a two up to 12 for an ace: ranks compare low to high, suits never break ties."""
    return RANKS.index(card[0])


def point_value(card: str) -> int:
    """Chemin de fer points (A.8): A = 1, 2..9 face value, T J Q K = 0 ("zhir")."""
    r = card[0]
    if r == "A":
        return 1
    if r in "TJQK":
        return 0
    return int(r)
