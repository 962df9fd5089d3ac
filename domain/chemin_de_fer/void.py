"""What voiding a coup of Chemin de fer does (docs/rules/chemin-de-fer.md, "A void").

Before its settlement every stake goes back (none had moved: stakes are paid when the coup is settled), the cards
dealt stay dealt (face-down ones stay hidden until the shoe's seed is revealed), and the same banker takes stakes
again on the bank as it stands. After it each payment is reversed; a banker who kept the bank keeps it at what
it held before the coup (its winnings and the commission go back), and a bank that passed stays passed: the next
banker holds the shoe already.
"""

from __future__ import annotations

from typing import Any

from domain.game import Void


def _stakes(table: Any) -> list[tuple[str, str, int]]:
    return [(player, "bank", amount) for player, amount in table.stakes.items()]


def _refused(table: Any) -> str | None:
    if table.phase == "seating":
        return "The seats are not drawn yet: there is no coup to void."
    return None


VOID = Void(stakes=_stakes, refused=_refused,
            doc="Before its settlement the coup's stakes go back and stakes open again on the same bank; after "
                "it, each payment is reversed. The cards dealt stay dealt and the shoe plays on.")
