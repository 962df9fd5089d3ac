"""Chemin de fer's part of a table's state: what anyone at the table may see.

The hands show the cards dealt to them, each face-down card as the viewer may see it (domain/sight.py: "??"
until the hands are shown, but to the player who holds it); the shoe shows counts only, never a card still in it and never
its seed.
"""

from __future__ import annotations

from typing import Any

from domain.sight import HIDDEN, Sight


def view(table: Any, seen: Sight) -> dict[str, Any]:
    return {
        "seats": list(table.seats),
        "banker": table.banker or None,
        "round": table.coup,
        "bank": table.bank,
        "stakes": dict(table.stakes),
        "punter": table.punter or None,
        "hands": {hand: _hand(table, hand, seen) for hand in ("punter", "banker")},
        "shoe": table.deck_counts("shoe"),
        "lots": list(table.lots),
    }


def _hand(table: Any, hand: str, seen: Sight) -> list[str]:
    """A hand's cards: its face-down cards are its first (A.7), its third is dealt face up (A.9)."""
    cards = list(table.hands[hand])
    holder = table.punter if hand == "punter" else table.banker
    hidden = seen.hidden_count(holder, "shoe") if holder else 0
    return [HIDDEN] * min(hidden, len(cards)) + cards[hidden:]
