"""The money check: valid payments, balances moved by exactly the payments, balances and accounts summing to 0.

A valid payment is positive and between two different parties.
"""

from __future__ import annotations

from typing import Any

from domain.corrections import MOVEMENTS
from domain.games import GAMES
from domain.table import TableEvent
from service.audit.problems import at


def check_money(before: dict[str, Any] | None, after: dict[str, Any], events: list[TableEvent]) -> list[dict[str, Any]]:
    moved: dict[str, int] = {}
    for e in events:
        if e.type not in MOVEMENTS:  # a payment, or one reversed by a void
            continue
        amount = e.amount  # type: ignore[attr-defined]
        if not isinstance(amount, int) or isinstance(amount, bool) or amount <= 0 or e.payer == e.payee:  # type: ignore[attr-defined]
            return [at("money", e.originator_version,
                       f"a payment of {amount!r} from {e.payer} to {e.payee} is not a valid movement",  # type: ignore[attr-defined]
                       e.type)]
        moved[e.payer] = moved.get(e.payer, 0) - amount  # type: ignore[attr-defined]
        moved[e.payee] = moved.get(e.payee, 0) + amount  # type: ignore[attr-defined]
    totals_before, totals_after = _totals(before), _totals(after)
    for name in set(totals_before) | set(totals_after) | set(moved):
        if totals_after.get(name, 0) - totals_before.get(name, 0) != moved.get(name, 0):
            return [at("money", None, f"{name}'s balance moved by {totals_after.get(name, 0) - totals_before.get(name, 0)}"
                                      f" while the payments move it by {moved.get(name, 0)}")]
    if sum(totals_after.values()) != 0:
        return [at("money", None, f"balances and accounts sum to {sum(totals_after.values())}, not 0")]
    return []


def _totals(state: dict[str, Any] | None) -> dict[str, int]:
    if state is None:
        return {}
    totals = dict(state["balances"])
    for account in GAMES[state["game"]].accounts:
        if account in state:
            totals[account] = state[account]
    return totals
