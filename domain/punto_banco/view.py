"""Punto banco's part of a table's state: what anyone at the table may see.

The hands show the cards dealt to them, face up; the turned card is shown, the burned cards are "??"
until the shoe's seed is revealed; the shoe shows counts only, never a card still in it and never its
seed. Every card of the shoe is in exactly one place: still in the shoe, turned, burned, discarded (the
earlier coups of the shoe) or in a hand.
"""

from __future__ import annotations

from typing import Any


def view(table: Any) -> dict[str, Any]:
    shoe = table.decks.get("shoe")
    revealed = bool(shoe and shoe["revealed"])
    return {
        "croupier": table.croupier or None,
        "round": table.coup,
        "stakes": {p: dict(spots) for p, spots in table.stakes.items()},
        "hands": {hand: list(cards) for hand, cards in table.hands.items()},
        "result": dict(table.result) if table.result else None,
        "shoe": {**table.deck_counts("shoe"), "last_coup": table.last_coup},
        "burn": {"turned": table.turned, "burned": list(table.burned) if revealed else ["??"] * len(table.burned)},
        "discarded": table.discarded,
    }
