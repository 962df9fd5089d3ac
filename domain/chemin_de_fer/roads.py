"""How Chemin de fer's coups are read for baccarat's roads (docs/rules/roads.md).

Each deal shown down (A.8 / A.11: ``HandsShown``, both hands face up) is one coup of the roads: the banker's
hand is the banker, the punter's the player; equal totals are a tie (the coup is dealt again, A.11, and the
new deal is a coup of its own). Hands are read only once shown: nothing face down reaches the roads.
"""

from __future__ import annotations

from typing import Any

from domain.chemin_de_fer import rules as R
from domain.game import Roads
from domain.roads import BANKER, PLAYER, TIE, Coup, is_pair

OUTCOME = {R.BANKER: BANKER, R.PUNTER: PLAYER, R.TIE: TIE}


def decided(e: dict[str, Any]) -> Coup | None:
    """The coup a ``HandsShown`` decides; None for every other event."""
    if e["type"] != "HandsShown":
        return None
    data = e["data"]
    winner = R.coup_winner(data["punter_total"], data["banker_total"])
    return Coup(OUTCOME[winner], data["natural"], is_pair(data["banker"]), is_pair(data["punter"]))


ROADS = Roads(decided=decided, events=("HandsShown",))
