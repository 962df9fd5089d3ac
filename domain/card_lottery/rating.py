"""How the Card lottery's stakes are counted: each holder's contribution to the pot (B.1), with no edge to rate.

The lottery's prizes share out what the holders put in, so it has no house edge to rate a stake by: a holder's
theoretical loss is null, and nothing of his play is a free decision weighed against a solution.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from domain.game import Rated, Rating


def settled(e: dict[str, Any], rules: dict[str, Any], carried: dict[str, Any]) -> list[Rated]:
    """A holder's contribution paid into the pot."""
    data = e["data"]
    if e["type"] == "PaymentMade" and data["payee"] == "pot" and data["reason"] == "contribution":
        return [(data["payer"], "pot", data["amount"], Fraction(0))]
    return []


RATING = Rating(settled=settled, rated=False)
