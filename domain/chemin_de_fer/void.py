"""What voiding a coup of Chemin de fer does (docs/rules/chemin-de-fer.md, "A void").

Before its settlement every stake goes back (none had moved: stakes are paid when the coup is settled), the cards
dealt stay dealt (face-down ones stay hidden until the shoe's seed is revealed), and the same banker takes stakes
again on the bank as it stands. After it each payment is reversed; a banker who kept the bank keeps it at what
it held before the coup (its winnings and the commission go back), and a bank that passed stays passed: the next
banker holds the shoe already.
"""

from __future__ import annotations

from typing import Any

from domain.chemin_de_fer import rules as R
from domain.errors import BadArgument, StakeAboveBank
from domain.game import Void


def _stakes(table: Any) -> list[tuple[str, str, int]]:
    return [(player, "bank", amount) for player, amount in table.stakes.items()]


def held(table: Any) -> dict[str, int]:
    """What the table holds of each player's money (domain/money.py): the punters' stakes, and the banker's bank,
    which he puts up when he posts it, keeps his winnings in and takes back when he passes it (A.12)."""
    out = dict(table.stakes)
    if table.bank and table.banker:
        out[table.banker] = out.get(table.banker, 0) + table.bank
    return out


def _refused(table: Any) -> str | None:
    if table.phase == "seating":
        return "The seats are not drawn yet: there is no coup to void."
    return None


def _corrected(table: Any, stake: dict[str, Any]) -> list[tuple[str, str, int, int]]:
    """A stake recorded for the wrong amount, corrected before the stakes close; within what the bank covers. A
    stake is its player's word in his turn: one recorded for the wrong player is corrected by voiding the coup."""
    player, amount = stake["player"], stake["amount"]
    if table.phase not in ("stakes", "close"):
        raise BadArgument("round", "A stake is corrected before the stakes close; this coup's are closed: void the "
                                   "coup instead.")
    if stake["spot"] != "bank":
        raise BadArgument("stake_spot", f"A stake of Chemin de fer is on the 'bank'; got {stake['spot']!r}.")
    if stake["to"] != player:
        raise BadArgument("stake_to", "A stake of Chemin de fer is its player's word in his turn: one recorded for "
                                      "the wrong player is corrected by voiding the coup.")
    was = table.stakes.get(player, 0)
    if not was:
        raise BadArgument("stake_player", f"{player} has no stake in this coup.")
    if amount == was:
        raise BadArgument("stake_amount", f"{player}'s stake is {was} already.")
    if not amount and len(table.stakes) == 1:
        raise BadArgument("stake_amount", "That would leave no stake in the coup: void the coup instead.")
    most = R.largest_stake_allowed(table.bank, {p: a for p, a in table.stakes.items() if p != player})
    if amount > most:
        raise StakeAboveBank(amount, most)
    return [(player, "bank", was, amount)]


VOID = Void(stakes=_stakes, refused=_refused, corrected=_corrected,
            doc="Before its settlement the coup's stakes go back and stakes open again on the same bank; after "
                "it, each payment is reversed. The cards dealt stay dealt and the shoe plays on.")
