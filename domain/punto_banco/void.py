"""What voiding a coup of punto banco does (docs/rules/punto-banco.md, "A void").

Before its settlement every stake of the coup goes back (no money had moved: a stake is taken only when the coup
is settled) and the table takes stakes for a new coup; after it, each payment is reversed. Either way the cards
dealt stay dealt: they go to the discard as every coup's do, and the shoe plays on to its stop card.
"""

from __future__ import annotations

from typing import Any

from domain.errors import BadArgument
from domain.game import Void
from domain.punto_banco import rules as R


def _stakes(table: Any) -> list[tuple[str, str, int]]:
    return [(player, spot, amount) for player, spots in table.stakes.items() for spot, amount in spots.items()]


def _refused(table: Any) -> str | None:
    return None  # any coup of the shoe's latest may be voided, at any point before the next one's first stake


def _corrected(table: Any, stake: dict[str, Any]) -> list[tuple[str, str, int, int]]:
    """A stake recorded for the wrong player or amount, corrected while the stakes are open; the corrected totals
    are held to the table's limits as any stake is."""
    player, spot, amount, to = stake["player"], stake["spot"], stake["amount"], stake["to"]
    if table.phase != "stakes":
        raise BadArgument("round", "A stake is corrected while the stakes are open; this coup's are closed: void "
                                   "the coup instead.")
    if spot not in R.SPOTS:
        raise BadArgument("stake_spot", f"'stake_spot' is one of {', '.join(R.SPOTS)}; got {spot!r}.")
    if table.croupier in (player, to):
        raise BadArgument("stake_player", f"{table.croupier} is the croupier, who does not stake.")
    was = table.stakes.get(player, {}).get(spot, 0)
    if not was:
        raise BadArgument("stake_player", f"{player} has no stake on the {spot} in this coup.")
    if to == player:
        if amount == was:
            raise BadArgument("stake_amount", f"{player}'s stake on the {spot} is {was} already.")
        if amount:
            R.check_stake(table.rules, {s: a for s, a in table.stakes[player].items() if s != spot}, spot, amount)
        changes = [(player, spot, was, amount)]
    else:
        if not amount:
            raise BadArgument("stake_amount", "A stake moved to another player has an amount above 0.")
        moved = R.check_stake(table.rules, table.stakes.get(to, {}), spot, amount)
        changes = [(player, spot, was, 0), (to, spot, moved - amount, moved)]
    others = table.totals_now
    others[spot] -= was
    R.check_exposure(table.rules, others, spot, amount)  # a corrected stake keeps within the table's exposure
    left = sum(a for spots in table.stakes.values() for a in spots.values()) - was + amount
    if not left:
        raise BadArgument("stake_amount", "That would leave no stake in the coup: void the coup instead.")
    return changes


VOID = Void(stakes=_stakes, refused=_refused, corrected=_corrected,
            doc="Before its settlement the coup's stakes go back; after it, each payment is reversed. The cards "
                "dealt stay dealt and the shoe plays on.")
