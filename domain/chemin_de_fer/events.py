"""The events of a Chemin de fer table: past-tense facts, recorded by its commands and applied by its handlers.

The events every game records (shuffles, cuts, cards dealt, payments) are domain/events.py's.
"""

from __future__ import annotations

from domain.events import TableEvent, keep_topics


class SeatsDrawn(TableEvent):
    """A.1: the seats decided by lots; seat 0 is the banker."""

    seats: list[str]
    banker: str


class BankPosted(TableEvent):
    banker: str
    amount: int


class StakePlaced(TableEvent):
    player: str
    amount: int


class StakePassed(TableEvent):
    player: str


class CoupCalledOff(TableEvent):
    """A.5: every player passed, so no coup is dealt; the banker posts again or passes the bank."""

    banker: str
    reason: str


class StakesClosed(TableEvent):
    """A.5 "Zametano": betting is closed; A.6: the largest stake plays the hand."""

    coup: int
    stakes: dict[str, int]
    punter: str
    bank: int


class ExcessWithdrawn(TableEvent):
    """A.5: stakes short of the bank leave the excess withdrawn: the bank at risk is the sum of stakes."""

    banker: str
    amount: int
    bank_at_risk: int


class HandStood(TableEvent):
    player: str
    hand: str
    total: int


class HandsShown(TableEvent):
    punter: list[str]
    banker: list[str]
    punter_total: int
    banker_total: int
    natural: bool


class CoupSettled(TableEvent):
    """A.11: the higher total won; ``next_bank`` is the bank a winning banker keeps (A.12)."""

    coup: int
    winner: str
    punter_total: int
    banker_total: int
    next_bank: int


class CoupTied(TableEvent):
    """A.11: equal totals; the cards are set aside and the coup is dealt again, same stakes and bank."""

    coup: int
    total: int


class BankPassed(TableEvent):
    """A.12: the bank moves to the next seat clockwise (lost, or given up)."""

    from_banker: str
    to_banker: str
    reason: str


class ShoeFinished(TableEvent):
    """A.2: the coup took one of the last ``stop_card`` cards; the shoe ends with it."""

    shoe: int
    dealt: int


# Defined in domain/chemin_de_fer/table.py when the first logs were stored.
keep_topics(
    "domain.chemin_de_fer.table",
    SeatsDrawn,
    BankPosted,
    StakePlaced,
    StakePassed,
    CoupCalledOff,
    StakesClosed,
    ExcessWithdrawn,
    HandStood,
    HandsShown,
    CoupSettled,
    CoupTied,
    BankPassed,
    ShoeFinished,
)
