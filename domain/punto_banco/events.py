"""The events of a punto banco table: past-tense facts, recorded by its commands and applied by its handlers.

The events every game records (shuffles, cuts, cards dealt, payments) are domain/events.py's.
"""

from __future__ import annotations

from domain.events import TableEvent, keep_topics


class RolesAssigned(TableEvent):
    """Who runs the table, recorded with the opening: the croupier; every other player stakes and cuts."""

    croupier: str


class CardsBurned(TableEvent):
    """The shoe's first card was turned face up, and ``burned`` cards after it went face down to the burn."""

    shoe: int
    turned: str
    burned: int


class StakePlaced(TableEvent):
    """A stake added to a spot: ``amount`` now, ``total`` the player's stake on that spot in this coup."""

    coup: int
    player: str
    spot: str
    amount: int
    total: int


class StakesClosed(TableEvent):
    """"No more bets": the stakes of the coup, player -> spot -> total."""

    coup: int
    stakes: dict[str, dict[str, int]]


class BettorJoined(TableEvent):
    """A player not named at the opening staked at an open table for the first time: from now on he is one of
    the table's players, with a balance, a view and a history like theirs."""

    player: str


class StakesOpened(TableEvent):
    """The croupier opened the stakes of a coup for ``seconds``: they close at ``closes_at`` (the first command
    at or after it closes them), or earlier by "no more bets"."""

    coup: int
    seconds: int
    closes_at: str


class DrawDecided(TableEvent):
    """The third-card rule applied to a hand: ``decision`` draw or stand, and the rule in words."""

    coup: int
    hand: str
    total: int
    decision: str
    rule: str


class CoupDecided(TableEvent):
    """The two hands as dealt, their totals, whether a natural decided, and the outcome."""

    coup: int
    player_hand: list[str]
    banker_hand: list[str]
    player_total: int
    banker_total: int
    natural: bool
    outcome: str


class StopCardCameOut(TableEvent):
    """The stop card came out in this coup: one more coup is played, then the shoe ends."""

    shoe: int
    coup: int


class ShoeFinished(TableEvent):
    """The coup after the stop card is settled: the shoe ends (its seed is revealed next)."""

    shoe: int
    dealt: int


# Defined in domain/punto_banco/table.py when the first logs were stored.
keep_topics(
    "domain.punto_banco.table",
    RolesAssigned,
    CardsBurned,
    StakePlaced,
    StakesClosed,
    DrawDecided,
    CoupDecided,
    StopCardCameOut,
    ShoeFinished,
    BettorJoined,  # added later, written under the same module as the game's other events
    StakesOpened,
)
