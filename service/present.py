"""What a caller sees: the one place that turns tables and events into the dicts any output sends.

Every answer, page, export, stream, round audit and verification detail is made here, from each game's
view of a table (``Table.view``) and of an event (``TableEvent.public``), as the reader sees them
(domain/sight.py: a ``Viewer`` at a reading moment, a ``Sight``): what the rules let a caller see is
therefore decided by the domain and applied in one place. tests/unit/test_code_shape.py fails if any other
module of the service or the API calls those views.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

from domain.games import SECRETS
from domain.sight import EVERYTHING, Sight, Viewer
from domain.table import Table, TableEvent
from service.errors import DamagedLog

# Each event as it was at its own moment: what a live stream sends (domain/sight.py).
AT_ITS_MOMENT = None


def event(e: TableEvent, seen: Sight | None = None) -> dict[str, Any]:
    """An event as every output shows it: the envelope and the data, never an unrevealed seed, and as
    ``seen`` may see it (by default: everything; the digest always the recorded one)."""
    return as_seen(e.public(), seen)


def as_seen(shown: dict[str, Any], seen: Sight | None) -> dict[str, Any]:
    """An event as ``event`` shows it to everyone, as ``seen`` may see it (None: everything): its hidden parts
    blanked and, under chain rule 3, their salts given only beside the parts shown (domain/sight.py)."""
    return shown if seen is None else seen.shown_event(shown)


def events(es: Iterable[TableEvent], seen: Sight | None = None) -> list[dict[str, Any]]:
    return [event(e, seen) for e in es]


def sight(viewer: Viewer, table: Table | None) -> Sight:
    """``viewer`` reading at the head of ``table`` (None: the table cannot be rebuilt, so each event is shown
    as it was at its own moment, which hides at least as much)."""
    return table.sight(viewer) if table is not None else Sight(viewer, AT_ITS_MOMENT, None, SECRETS)


def sight_now(viewer: Viewer, table_at_head: Callable[[], Table]) -> Sight | None:
    """``viewer`` reading a table's events at its head (None: everything as recorded). A table whose state
    cannot be rebuilt (DamagedLog) shows each event as it was at its own moment, which hides at least as much."""
    if viewer == EVERYTHING:
        return None
    try:
        return sight(viewer, table_at_head())
    except DamagedLog:
        return sight(viewer, None)


def event_text(e: TableEvent, reveal: bool | None = None, seen: Sight | None = None) -> str:
    """An event's data as a message of an audit quotes it: a seed only where ``reveal`` (by default: where
    the event is the ShoeRevealed that publishes it), a hidden card as ``seen`` sees it."""
    if reveal is None:
        reveal = e.type == "ShoeRevealed"
    data = event(e, seen)["data"] if seen is not None else e.data
    if reveal and "seed" in e.data:
        data = {**data, "seed": e.data["seed"]}
    return str({k: v for k, v in data.items() if k != "seed" or reveal})


def state(table: Table, viewer: Viewer = EVERYTHING, now: Table | None = None,
          expects: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The table's state as ``viewer`` sees it: its id, head version and digest, then the game's view of it.
    ``now``: the table at its head, where ``table`` is an earlier version; ``expects``: the table's, where
    the caller already built them."""
    seen = table.sight(viewer, None if now is None else now.hidden)
    return {"table_id": str(table.id), "version": table.version, "digest": table.head, **table.view(seen, expects)}


def command_result(table: Table, appended: Iterable[TableEvent], receipt: dict[str, Any],
                   viewer: Viewer = EVERYTHING, expects: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A command's answer: the new head, the events it appended, the state and the signed receipt, as
    ``viewer`` sees them."""
    return {
        "version": table.version,
        "digest": table.head,
        "events": events(appended, table.sight(viewer)),
        "state": state(table, viewer, expects=expects),
        "receipt": receipt,
    }


def round_record(shown: list[dict[str, Any]]) -> dict[str, Any]:
    """A round's cards, decisions (with their actors) and payments, as its audit lists them, from its events
    as ``event`` shows them."""
    return {
        "cards": [{"version": e["version"], **e["data"]} for e in shown if e["type"] == "CardDealt"],
        "decisions": [
            {"version": e["version"], "type": e["type"], "actor": e["actor"], "data": e["data"]}
            for e in shown
            if e["type"] not in ("PaymentMade", "CardDealt") or (e["type"] == "CardDealt" and e["data"]["face_up"])
        ],
        "payments": [{"version": e["version"], **e["data"]} for e in shown if e["type"] == "PaymentMade"],
    }


# --- decisions weighed (service/decisions.py) ------------------------------------------------------------

# An expected amount (a cost given away, a theoretical loss) is an average, not money moved: it is shown in
# units rounded to SHARE-ths of a unit (half to even), from the exact fraction. Gains and costs per unit
# staked are the nearest float to the exact fraction.
SHARE = 10_000


def _shares(amount: Fraction) -> int:
    return round(amount * SHARE)


def _given(decision: Any, cost: Fraction) -> dict[str, int]:
    """What the decision gave away to each opponent, in SHARE-ths of a unit: the punter's choice to the
    banker, on everything at stake; the banker's to each staker, on his stake."""
    if decision.role == "punter":
        given = {decision.banker: _shares(cost * sum(decision.stakes.values()))}
    else:
        given = {staker: _shares(cost * amount) for staker, amount in decision.stakes.items()}
    return {who: amount for who, amount in given.items() if amount}


def weighed_decision(decision: Any, figures: dict[str, Any]) -> dict[str, Any]:
    """A free decision (domain/chemin_de_fer/decisions.py::FreeDecision) with its figures, as
    GET /tables/{id}/decisions and a round's audit show it."""
    given = _given(decision, figures["cost"])
    shown: dict[str, Any] = {"version": decision.version, "round": decision.round, "player": decision.player,
                             "role": decision.role, "total": decision.total}
    if decision.role == "banker":
        shown["third"] = decision.third
    return shown | {
        "chosen": decision.chosen,
        "best": figures["best"],
        "gains": {k: float(figures["gains"][k]) for k in ("draw", "stand")},
        "cost": float(figures["cost"]),
        "at_stake": sum(decision.stakes.values()),
        "cost_amount": sum(given.values()) / SHARE,
        "to": {who: amount / SHARE for who, amount in given.items()},
    }


def decision_summary(players: list[str], decisions: list[tuple[Any, dict[str, Any]]], staked: dict[str, int],
                     expected: dict[str, Fraction] | None, result: dict[str, int]) -> dict[str, Any]:
    """Each player's free decisions, the costly ones and what they gave away (in total and to whom, the sum
    of his decisions' ``cost_amount`` and ``to``), what he staked, its theoretical loss (null where the game
    is not rated) and his result (what the payments moved)."""
    summary = {}
    for player in players:
        mine = [(d, f) for d, f in decisions if d.player == player]
        to: dict[str, int] = {}
        for d, f in mine:
            for who, amount in _given(d, f["cost"]).items():
                to[who] = to.get(who, 0) + amount
        summary[player] = {
            "decisions": len(mine),
            "costly": sum(1 for _, f in mine if f["cost"] > 0),
            "cost_amount": sum(to.values()) / SHARE,
            "to": {who: amount / SHARE for who, amount in to.items()},
            "staked": staked[player],
            "theoretical_loss": None if expected is None else _shares(expected[player]) / SHARE,
            "result": result[player],
        }
    return summary


def seat_round(row: dict[str, Any]) -> dict[str, Any]:
    """A player's part in a round as his history shows it (service/readmodel/seats.py): the round, his stakes,
    his result, his balance at the table after it and its theoretical loss (null where the game is not rated)."""
    shown = {k: row[k] for k in ("table_id", "game", "round", "player", "started_at", "ended_at", "first_version",
                                 "last_version", "summary", "stakes", "staked", "result", "balance")}
    loss = row["loss"]
    return shown | {"theoretical_loss": None if loss is None else _shares(Fraction(*loss)) / SHARE}


def purse(shown: Any, events: list[Any], receipt: dict[str, Any] | None, next_after: int | None) -> dict[str, Any]:
    """A player's purse (domain/purse.py) as GET /players/{player}/purse shows it: its money, its signed head, and
    a page of its log in the envelope of a table's events. Money is public to whoever may read the purse."""
    return {"player": shown.player, "money": shown.money, "currency": shown.currency, "balance": shown.balance,
            "deposits": shown.deposits, "withdrawals": shown.withdrawals, "version": shown.version,
            "head": shown.head, "receipt": receipt, "owed": len(shown.due), "asked": len(shown.asked),
            "movements": [e.public() for e in events], "next_after": next_after}
