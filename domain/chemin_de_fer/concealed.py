"""What Chemin de fer's events hide and show: a stood hand's total hidden, both hands shown at the showdown.

The hands are dealt face down (A.7: the shared CardDealt hides each card from all but its holder); a hand that
stands keeps its cards face down, so the total its HandStood records is as hidden as they are (A.9 / A.10);
HandsShown turns both hands up (A.8 / A.11), every face-down card of the coup with them.
"""

from __future__ import annotations

from typing import Any

from domain.sight import SHOWN, Concealment, Spot


def _stood(data: dict[str, Any], version: int) -> list[Spot]:
    """The total of a hand still face down: its holder's, hidden while any of his shoe cards dealt before is (but a
    voided coup's, which no showdown shows: domain/sight.py)."""
    player = data["player"]
    return [Spot(("total",), player, lambda e: e["to"] == player and e["deck"] == "shoe" and e["version"] < version
                 and not e.get("void"), blank=None)]


CONCEALMENT = Concealment(
    conceals={"HandStood": _stood},
    reveals={"HandsShown": (SHOWN, lambda e, d: e["deck"] == "shoe")},
)
