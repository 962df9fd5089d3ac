"""How punto banco's stakes are rated: each stake closed on a coup at its spot's exact house edge, once decided.

The edges are domain/punto_banco/edges.py's, under the table's decks, commission and tie pay
(docs/rules/punto-banco.md, "The odds"). Every draw is fixed by the rules: no decision is free.
"""

from __future__ import annotations

import json
from fractions import Fraction
from functools import lru_cache
from typing import Any

from domain.game import Rated, Rating
from domain.punto_banco import edges


@lru_cache(maxsize=32)
def _spot_edges(rules_text: str) -> dict[str, Fraction]:
    return edges.spot_edges(json.loads(rules_text))


def settled(e: dict[str, Any], rules: dict[str, Any], carried: dict[str, Any]) -> list[Rated]:
    """The stakes closed on a coup, each at its spot's edge, once the coup is decided (``carried`` keeps them
    from the close to the decision, under "closed")."""
    if e["type"] == "StakesClosed":
        carried["closed"] = e["data"]["stakes"]
        return []
    if e["type"] != "CoupDecided":
        return []
    rated = _spot_edges(json.dumps(rules, sort_keys=True))
    closed = carried.pop("closed", {})
    return [(player, spot, amount, rated[spot]) for player, spots in closed.items() for spot, amount in spots.items()]


RATING = Rating(settled=settled)
