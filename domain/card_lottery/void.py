"""What voiding a round of the Card lottery does (docs/rules/card-lottery.md, "A void").

A stage-1 round voided before its reveal returns that round's contributions (and the kitty, if the collect
brought it to the pot): every payment to the pot is reversed. The lottery cards laid out go to the banker's
discard as at a round's end; the holders' cards dealt leave their hands face down (hidden until the dealer's
deck is revealed); the round is not counted, and the banker collects again. A round once revealed, or stage 2, is not voided:
its prizes have been drawn from the pot, and the holders' cards of the whole game stand on them.
"""

from __future__ import annotations

from typing import Any

from domain.errors import BadArgument
from domain.game import Void


def _stakes(table: Any) -> list[tuple[str, str, int]]:
    return []  # every contribution moved money when it was collected: the base reverses those payments


def _refused(table: Any) -> str | None:
    if table.phase not in ("lay_out", "distribute", "deal", "reveal") or not table.round_book["open"]:
        return (f"A Card lottery round is voided only between its collect and its reveal (the table is at "
                f"'{table.phase}'): once drawn, its prizes and the game's cards stand on it.")
    return None


def _corrected(table: Any, stake: dict[str, Any]) -> list[tuple[str, str, int, int]]:
    raise BadArgument("kind", "The Card lottery's contributions are collected at once by the banker: a wrong one "
                              "is corrected by voiding the round, which returns them all.")


VOID = Void(stakes=_stakes, refused=_refused, corrected=_corrected,
            doc="A stage-1 round voided before its reveal returns its contributions; a revealed round or stage 2 "
                "is not voided.")
