"""Chemin de fer's part of a table's state: what anyone at the table may see.

The hands show the cards dealt to them; the shoe shows counts only, never a card still in it and never
its seed.
"""

from __future__ import annotations

from typing import Any


def view(table: Any) -> dict[str, Any]:
    return {
        "seats": list(table.seats),
        "banker": table.banker or None,
        "round": table.coup,
        "bank": table.bank,
        "stakes": dict(table.stakes),
        "punter": table.punter or None,
        "hands": {"punter": list(table.hands["punter"]), "banker": list(table.hands["banker"])},
        "shoe": table.deck_counts("shoe"),
        "lots": list(table.lots),
    }
