"""Where a coup of punto banco begins and ends, read from its events.

docs/rules/punto-banco.md: "A round is one coup: from its first stake to its settlement, including the
payments and, for the shoe's last coup, the shoe's end and the reveal of its seed"."""

from __future__ import annotations

from typing import Any

from domain.rounds import Event, RoundMarks
from domain.words import counted


def _opens(e: Event, game: dict[str, Any]) -> bool:
    # A bettor's first stake at an open table begins with his joining, in the same command.
    if e["type"] in ("StakePlaced", "BettorJoined") and not game.get("in_round", False):
        game["in_round"] = True
        return True
    return False


def _closes(e: Event, game: dict[str, Any]) -> bool:
    if e["type"] in ("CoupDecided", "RoundVoided"):
        game["in_round"] = False
        return True
    return False


def _note(e: Event, game: dict[str, Any], summary: dict[str, Any]) -> None:
    data, kind = e["data"], e["type"]
    if kind == "StakesClosed":
        stakes = data["stakes"]
        summary.update(players=len(stakes), staked=sum(sum(spots.values()) for spots in stakes.values()))
    elif kind == "CoupDecided":
        winner = "tie" if data["outcome"] == "tie" else f"{data['outcome']} won"
        natural = " (a natural)" if data["natural"] else ""
        summary["outcome"] = f"{winner}, player {data['player_total']} to banker {data['banker_total']}{natural}"
    elif kind == "PaymentMade":
        side = "taken" if data["payee"] == "house" else "paid"
        summary[side] = summary.get(side, 0) + data["amount"]
    elif kind == "StopCardCameOut":
        summary["shoe"] = "stop card out: one more coup"
    elif kind == "ShoeRevealed":
        summary["shoe"] = f"shoe {data['shoe']} finished and revealed"
    elif kind == "RoundVoided":
        summary["outcome"] = f"void ({data['reason']}), every stake returned"


def _describe(summary: dict[str, Any]) -> str:
    parts = [summary.get("outcome", "unsettled")]
    if "players" in summary:
        parts.append(f"{counted(summary['players'], 'player')} staked {summary['staked']}")
    parts.append(f"house paid {summary.get('paid', 0)}, took {summary.get('taken', 0)}")
    if "shoe" in summary:
        parts.append(summary["shoe"])
    return "; ".join(parts)


MARKS = RoundMarks(opens=_opens, closes=_closes, note=_note, describe=_describe,
                   doc="a round is one coup, from its first stake to its settlement.")
