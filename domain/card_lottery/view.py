"""The Card lottery's part of a table's state: what anyone at the table may see.

Lottery cards stay face down ("??") until revealed, and so do the holders' hands and set-aside piles (B.5),
but to the player they were dealt to (domain/sight.py); each deck shows counts only, never a card still in
it and never its seed.
"""

from __future__ import annotations

from typing import Any

from domain.card_lottery.table import BANKER_DECK, DEALER_DECK, PLAY
from domain.sight import Sight

NO_DECK = {"number": None, "dealt": 0, "remaining": 0}


def view(table: Any, seen: Sight) -> dict[str, Any]:
    return {
        "seats": list(table.players),
        "banker": table.banker,
        "dealer": table.dealer,
        "holders": list(table.holders),
        "stage": table.stage,
        "game_number": table.game_number,
        "round": table.round,
        "lottery_cards": [seen.card(c, table.banker, BANKER_DECK) for c in table.lottery],
        "lottery_amounts": list(table.amounts),
        "hands": {h: [seen.card(c, h, DEALER_DECK) for c in cards] for h, cards in table.hands.items()},
        "set_aside": {h: [seen.card(c, h, DEALER_DECK) for c in cards] for h, cards in table.set_aside.items()},
        "penalty_piles": {h: list(c) for h, c in table.penalty.items()},
        "table": list(table.led) if table.led else [c for _, c in table.trick],
        "leader": table.leader or None,
        "to_beat": table.target or None,
        "turn": table.turn if table.phase == PLAY else None,
        "last_winner": table.last_winner,
        "decks": {label: table.deck_counts(label) if label in table.shuffled else dict(NO_DECK)
                  for label in (BANKER_DECK, DEALER_DECK)},
    }
