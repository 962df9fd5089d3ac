"""Where a round of the Card lottery begins and ends, read from its events.

docs/rules/card-lottery.md, "Rounds": a round is one stage-1 round (contributions to reveal); stage 2 of a
game is one round too."""

from __future__ import annotations

from typing import Any

from domain.rounds import Event, RoundMarks
from domain.words import counted


def _opens(e: Event, game: dict[str, Any]) -> bool:
    if e["type"] == "Stage2Began":
        game["in_round"] = True
        return True
    if e["type"] == "PaymentMade" and e["data"]["payee"] == "pot" and not game.get("in_round"):
        game["in_round"] = True  # the first money of a collect: the kitty, or the first contribution
        return True
    return False


def _closes(e: Event, game: dict[str, Any]) -> bool:
    if e["type"] in ("CardsSetAside", "GameEnded", "RoundVoided"):
        game["in_round"] = False
        return True
    return False


def _note(e: Event, game: dict[str, Any], summary: dict[str, Any]) -> None:
    data = e["data"]
    kind = e["type"]
    if kind == "RoundVoided":
        summary["void"] = data["reason"]
    elif kind == "ContributionsCollected":
        summary.update(stage=1, pot=data["pot"])
    elif kind == "PrizeWon":
        summary["prizes"] = summary.get("prizes", 0) + 1
        summary["won"] = summary.get("won", 0) + data["amount"]
    elif kind == "Stage1Ended":
        summary["stage1_over"] = data["to_kitty"]
    elif kind == "Stage2Began":
        summary.update(stage=2, variant=data["variant"])
    elif kind == "Stage2Ended":
        summary.update(out=data["out"], fines=sum(data["fines"].values()))


def _describe(summary: dict[str, Any]) -> str:
    if summary.get("stage") == 2:
        out = summary.get("out")
        return (f"stage 2 ({summary.get('variant')}): {out + ' out of cards' if out else 'not played'}, "
                f"{summary.get('fines', 0)} in fines to the kitty")
    text = f"pot {summary.get('pot', 0)}, {counted(summary.get('prizes', 0), 'prize')} paying {summary.get('won', 0)}"
    if "stage1_over" in summary:
        text += f"; stage 1 over, {summary['stage1_over']} to the kitty"
    if "void" in summary:
        text = f"void ({summary['void']}), every contribution returned"
    return text


MARKS = RoundMarks(opens=_opens, closes=_closes, note=_note, describe=_describe,
                   doc="a round is one stage-1 round, or the stage 2 of a game.")
