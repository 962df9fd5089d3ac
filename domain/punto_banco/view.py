"""Punto banco's part of a table's state: what anyone at the table may see.

The hands show the cards dealt to them, face up; the turned card is shown, the burned cards are "??"
until the shoe's seed is revealed (but to surveillance, domain/sight.py); the shoe shows counts only, never a card still in it and never its
seed. Every card of the shoe is in exactly one place: still in the shoe, turned, burned, discarded (the
earlier coups of the shoe) or in a hand.
"""

from __future__ import annotations

from typing import Any

from domain.punto_banco.rules import MAX_EXPOSURE, exposure
from domain.punto_banco.table import BURN
from domain.sight import Sight


def view(table: Any, seen: Sight) -> dict[str, Any]:
    return {
        "croupier": table.croupier or None,
        "round": table.coup,
        # the coup's stakes, and once it is decided those not yet paid (the table's own until then)
        "stakes": {p: dict(spots) for p, spots in (table.stakes or getattr(table, "unpaid", {})).items()},
        "hands": {hand: list(cards) for hand, cards in table.hands.items()},
        "result": dict(table.result) if table.result else None,
        "shoe": {**table.deck_counts("shoe"), "last_coup": table.last_coup},
        "burn": {"turned": table.turned, "burned": [seen.card(c, BURN, "shoe") for c in table.burned]},
        "discarded": table.discarded,
        # The betting window of the coup in play: its length and deadline (a client counts the time left
        # from it; after the deadline the stakes are closed, whatever expects listed before it).
        "window": dict(table.window) if table.window else None,
        # The most the house may lose on this coup from the stakes on the table now, and the table's limit.
        "exposure": {"now": exposure(table.rules, table.totals_now), "limit": table.rules.get(MAX_EXPOSURE)},
    }
