"""How punto banco's coups are read for baccarat's roads (docs/rules/roads.md).

Each ``CoupDecided``, whose hands are dealt face up, says the outcome, whether a natural decided it and both
hands' first two cards.
"""

from __future__ import annotations

from typing import Any

from domain.game import Roads
from domain.roads import Coup, is_pair


def decided(e: dict[str, Any]) -> Coup | None:
    """The coup a ``CoupDecided`` records; None for every other event."""
    if e["type"] != "CoupDecided":
        return None
    data = e["data"]
    return Coup(data["outcome"], data["natural"], is_pair(data["banker_hand"]), is_pair(data["player_hand"]))


ROADS = Roads(decided=decided, events=("CoupDecided",))
