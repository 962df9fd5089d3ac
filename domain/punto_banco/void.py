"""What voiding a coup of punto banco does (docs/rules/punto-banco.md, "A void").

Before its settlement every stake of the coup goes back (no money had moved: a stake is taken only when the coup
is settled) and the table takes stakes for a new coup; after it, each payment is reversed. Either way the cards
dealt stay dealt: they go to the discard as every coup's do, and the shoe plays on to its stop card.
"""

from __future__ import annotations

from typing import Any

from domain.game import Void


def _stakes(table: Any) -> list[tuple[str, str, int]]:
    return [(player, spot, amount) for player, spots in table.stakes.items() for spot, amount in spots.items()]


def _refused(table: Any) -> str | None:
    return None  # any coup of the shoe's latest may be voided, at any point before the next one's first stake


VOID = Void(stakes=_stakes, refused=_refused,
            doc="Before its settlement the coup's stakes go back; after it, each payment is reversed. The cards "
                "dealt stay dealt and the shoe plays on.")
