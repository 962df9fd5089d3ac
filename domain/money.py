"""What each command moves of each player's money (docs/wallet.md "What moves when").

A table's balance is a player's net result there; what the table *holds* of his (stakes on the felt, a bank
put up: the game's ``held`` hook) is money he has handed over and will get back or lose. His *position* at a
table is his balance less what it holds of his. A command's movement for a player is the change of his
position: a fall is money he pays before the command counts (a debit), a rise money the table pays him (a
credit), and a void after payment that takes a payout back a reversal, never refused. Pure functions of the
table: the service reads them before and after a command and moves purses or a wallet by them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEBIT, CREDIT, REVERSAL = "debit", "credit", "reversal"
# The commands that correct a table (domain/corrections.py): a void's fall of a position is a payout taken back.
VOIDING_EVENT = "RoundVoided"


def held(table: Any) -> dict[str, int]:
    """What the table holds of each player's money now: the game's own hook, else its stakes on the felt."""
    game = table.GAME
    if game.held is not None:
        return {p: a for p, a in game.held(table).items() if a}
    out: dict[str, int] = {}
    for player, _spot, amount in game.void.stakes(table):
        out[player] = out.get(player, 0) + amount
    return out


def positions(table: Any) -> dict[str, int]:
    """Each player's position at the table: his balance less what the table holds of his."""
    holding = held(table)
    return {p: balance - holding.get(p, 0) for p, balance in table.balances.items()}


@dataclass(frozen=True)
class Movement:
    """One player's money moved by one command: ``amount`` above 0, ``kind`` debit, credit or reversal."""

    player: str
    amount: int
    kind: str
    reason: str

    @property
    def signed(self) -> int:
        return self.amount if self.kind == CREDIT else -self.amount


def movements(before: Mapping[str, int], after: Mapping[str, int], event_types: frozenset[str] | set[str] = frozenset()
              ) -> list[Movement]:
    """The movements of one command, from the positions before and after it (a player who joined in it starts at
    0), in the order of ``after``'s players. ``event_types``: the types of the command's events (a void's fall is
    a reversal)."""
    voiding = VOIDING_EVENT in event_types
    out = []
    for player, now in after.items():
        change = now - before.get(player, 0)
        if change > 0:
            out.append(Movement(player, change, CREDIT, "void" if voiding else "payout"))
        elif change < 0:
            out.append(Movement(player, -change, REVERSAL if voiding else DEBIT, "void" if voiding else "stake"))
    return out


def transaction_id(table_id: str, version: int, player: str, attempt: int = 1) -> str:
    """A movement's transaction id, derived from the table, the version of the command's first event and the
    player; a debit asked again after a failed attempt carries the attempt's number."""
    base = f"{table_id}:{version}:{player}"
    return base if attempt == 1 else f"{base}:{attempt}"


def rollback_id(transaction: str) -> str:
    return f"{transaction}:rollback"


def round_of(table: Any) -> str:
    """The round a command's movements belong to: the latest round the table keeps (its number as GET
    /tables/{id}/rounds numbers it), ``<table>:<number>``."""
    book = table.round_book or {}
    return f"{table.id}:{book.get('number') or 0}"
