"""The events of a Card lottery table: past-tense facts, recorded by its commands and applied by its handlers.
"""

from __future__ import annotations

from domain.events import TableEvent, keep_topics


class RolesAssigned(TableEvent):
    """Who banks, who deals, and the holders in seat order (recorded with the opening)."""

    banker: str
    dealer: str
    holders: list[str]


class ContributionsCollected(TableEvent):
    """B.1: every holder paid ``amount`` into the pot; ``pot`` is the round's pot with what was carried."""

    round: int
    amount: int
    pot: int


class PotDistributed(TableEvent):
    """B.3: the banker's spread of the pot over the four lottery cards, in the order they were laid out."""

    amounts: list[int]


class LotteryCardsRevealed(TableEvent):
    cards: list[str]
    amounts: list[int]


class PrizeWon(TableEvent):
    """B.5: a holder held the card equal in rank and suit to a lottery card."""

    holder: str
    card: str
    amount: int


class PrizeUnclaimed(TableEvent):
    """B.5: nobody held this lottery card; its money is carried to the next round or goes to the banker."""

    card: str
    amount: int
    disposition: str


class CardsSetAside(TableEvent):
    """B.5: each holder's cards that won nothing go face down onto that holder's own pile."""

    piles: dict[str, list[str]]


class Stage1Ended(TableEvent):
    """B.6: a deck ran short; money still in the pot went to the kitty."""

    game: int
    to_kitty: int


class Stage2Began(TableEvent):
    variant: str
    leader: str
    hands: dict[str, list[str]]


class CardsLed(TableEvent):
    holder: str
    at: str
    cards: list[str]


class CardsBeaten(TableEvent):
    holder: str
    led: list[str]
    cards: list[str]


class CardsTaken(TableEvent):
    """`beating`: the holder could not beat; the led cards go onto their penalty pile and they lose the lead."""

    holder: str
    cards: list[str]
    next_leader: str


class CardPlayed(TableEvent):
    holder: str
    card: str


class TrickTaken(TableEvent):
    holder: str
    cards: list[str]


class Stage2Ended(TableEvent):
    """A holder is out of cards (``out``; none when stage 2 could not be played); fines are due."""

    variant: str
    out: str | None
    fines: dict[str, int]


class GameEnded(TableEvent):
    game: int
    kitty: int


# Defined in domain/card_lottery/table.py when the first logs were stored.
keep_topics(
    "domain.card_lottery.table",
    RolesAssigned,
    ContributionsCollected,
    PotDistributed,
    LotteryCardsRevealed,
    PrizeWon,
    PrizeUnclaimed,
    CardsSetAside,
    Stage1Ended,
    Stage2Began,
    CardsLed,
    CardsBeaten,
    CardsTaken,
    CardPlayed,
    TrickTaken,
    Stage2Ended,
    GameEnded,
)
