"""Where a coup of Chemin de fer begins and ends, read from its events.

docs/rules/chemin-de-fer.md, "Rounds": a round is one coup, from its first stake (or its first card, for a
coup dealt again after a tie) to its settlement, with the payments, a bank that passes and a shoe revealed
because of it."""

from __future__ import annotations

from typing import Any

from domain.rounds import Event, RoundMarks
from domain.words import counted


def _opens(e: Event, game: dict[str, Any]) -> bool:
    if e["type"] == "ShoeShuffled":
        game["deck"] = e["data"]["deck"]
    in_round = game.get("in_round", False)
    if e["type"] == "StakePlaced" and not in_round:
        game["in_round"] = True
        return True
    if e["type"] == "CardDealt" and game.get("deck") == "shoe" and not in_round:
        game["in_round"] = True  # the first card of a coup dealt again after a tie
        return True
    return False


def _closes(e: Event, game: dict[str, Any]) -> bool:
    if e["type"] in ("CoupSettled", "CoupTied", "RoundVoided"):
        game["in_round"] = False
        return True
    return False


def _note(e: Event, game: dict[str, Any], summary: dict[str, Any]) -> None:
    data = e["data"]
    if e["type"] == "StakesClosed":
        summary.update(stakes=len(data["stakes"]), staked=sum(data["stakes"].values()), punter=data["punter"])
    elif e["type"] == "CoupSettled":
        summary.update(outcome=f"{data['winner']} won {max(data['punter_total'], data['banker_total'])} "
                       f"to {min(data['punter_total'], data['banker_total'])}")
    elif e["type"] == "CoupTied":
        summary.update(outcome=f"tie at {data['total']}, dealt again")
    elif e["type"] == "PaymentMade":
        summary["paid"] = summary.get("paid", 0) + data["amount"]
    elif e["type"] == "BankPassed":
        summary["bank"] = f"bank to {data['to_banker']}"
    elif e["type"] == "ShoeRevealed":
        summary["shoe"] = f"shoe {data['shoe']} revealed"
    elif e["type"] == "RoundVoided":
        summary["outcome"] = f"void ({data['reason']}), every stake returned"


def _describe(summary: dict[str, Any]) -> str:
    parts = [summary.get("outcome", "unsettled")]
    if "stakes" in summary:
        parts.append(f"{counted(summary['stakes'], 'stake')}, {summary['staked']} staked, punter {summary['punter']}")
    if summary.get("paid"):
        parts.append(f"{summary['paid']} paid")
    parts += [summary[k] for k in ("bank", "shoe") if k in summary]
    return "; ".join(parts)


MARKS = RoundMarks(opens=_opens, closes=_closes, note=_note, describe=_describe, doc="a round is one coup.")
