"""How Chemin de fer's stakes are rated and its free decisions weighed, for the rest of the service.

Each deal played to its showdown (A.8 / A.11: the hands shown) settles the stakes closed on it (A.5): a staker
is rated at the value of the game's solution for the table's rules and decks (docs/rules/chemin-de-fer-solution.md),
which the banker, covering every stake, gains. A coup dealt again after a tie is a deal of its own. The free
decisions are domain/chemin_de_fer/decisions.py's.
"""

from __future__ import annotations

from typing import Any

from domain.chemin_de_fer import decisions as D
from domain.chemin_de_fer import solution
from domain.game import Rated, Rating


def settled(e: dict[str, Any], rules: dict[str, Any], carried: dict[str, Any]) -> list[Rated]:
    """The stakes of a deal shown down; ``carried`` keeps the banker and the stakes of the coup."""
    kind, data = e["type"], e["data"]
    if kind == "SeatsDrawn":
        carried["banker"] = data["banker"]
    elif kind == "BankPassed":
        carried["banker"] = data["to_banker"]
    elif kind == "StakesClosed":
        carried["stakes"] = dict(data["stakes"])
    elif kind == "CoupSettled":
        carried["stakes"] = {}
    elif kind == "HandsShown":
        value = solution.solve(rules["decks"], rules["draw_rule"]).value
        stakes = carried.get("stakes", {})
        return [*((staker, "stake", amount, value) for staker, amount in stakes.items()),
                (carried.get("banker", ""), "bank", sum(stakes.values()), -value)]
    return []


def figures(rules: dict[str, Any], decision: D.FreeDecision) -> dict[str, Any]:
    """One decision's exact figures: the gains of both options, the best one, and the cost per unit."""
    third = decision.third if decision.third is not None else solution.STOOD
    gains = D.option_gains(rules["decks"], rules["draw_rule"], decision.role, decision.total, third)
    return {"gains": gains, "best": D.best_option(gains), "cost": D.cost_of(gains, decision.chosen)}


RATING = Rating(
    settled=settled,
    decisions=lambda rules: D.DecisionReader(rules["draw_rule"]),
    resumed=D.DecisionReader.from_table,
    figures=figures,
)
