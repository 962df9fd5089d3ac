"""Punto banco played without a table, for the tests: whole shoes, who may issue what, and what stakes come to.

The service never needs these (the table's ``expects`` says who may issue what; its events carry the
money); the tests use them to check the rules of domain/punto_banco/rules.py from another side.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from domain.punto_banco.coup import LAST_COUP, LONGEST_COUP, PLAY_ON, SHOE_OVER, Coup, after_coup, burn_count, play_coup, stop_index
from domain.punto_banco.rules import LOST, MIN_STOP_CARD, PLAYER, StakeResult

# Who acts: the croupier named when the table opens, the players at the table; the house is an account.
CROUPIER = "croupier"
WHO_MAY = {
    "shuffle": CROUPIER,
    "cut": PLAYER,
    "place_stake": PLAYER,
    "close_stakes": CROUPIER,
    "deal": CROUPIER,
}


# --- who may do what -------------------------------------------------------------------------------

def role_of(actor: str, croupier: str, players: Collection[str]) -> str | None:
    """The croupier runs the table; the players stake and cut; anyone else has no say."""
    if actor == croupier:
        return CROUPIER
    if actor in players:
        return PLAYER
    return None


def may_issue(command: str, actor: str, croupier: str, players: Collection[str]) -> bool:
    """"The croupier shuffles, closes the stakes and deals; a player cuts and stakes; the house banks."

    The house is an account, never an actor: it issues no command.
    """
    return command in WHO_MAY and role_of(actor, croupier, players) == WHO_MAY[command]


# --- coups and shoes -------------------------------------------------------------------------------

LONGEST_BURN = 11  # the turned card and at most ten burned after it


def burn(shoe: Sequence[str]) -> tuple[str, ...]:
    """The cards out of play before the first coup: the turned card, then ``burn_count`` of it more."""
    return tuple(shoe[: 1 + burn_count(shoe[0])])


def cards_used(coup: Coup) -> int:
    return len(coup.player) + len(coup.banker)


def coup_data(coup: Coup) -> dict[str, Any]:
    """Plain data for an event payload."""
    return {
        "player": list(coup.player),
        "banker": list(coup.banker),
        "player_total": coup.player_total,
        "banker_total": coup.banker_total,
        "natural": coup.natural,
        "outcome": coup.outcome,
    }


@dataclass(frozen=True)
class ShoePlay:
    """A shoe played to its end without stakes: what was burned, every coup, how many cards were left."""

    burned: tuple[str, ...]
    coups: tuple[Coup, ...]
    cards_left: int


def play_shoe(shoe: Sequence[str], stop_card: int) -> ShoePlay:
    """Plays a cut shoe from its first card to its end: the burn, then coups until the coup after the
    one in which the stop card comes out. What a simulation counts; no stakes, no money."""
    size = len(shoe)
    if stop_card < MIN_STOP_CARD or stop_index(size, stop_card) <= LONGEST_BURN:
        raise ValueError(
            f"a stop card {stop_card} from the end of {size} cards cannot be played: it must be at least "
            f"{MIN_STOP_CARD} from the end and behind the burn"
        )
    burned = burn(shoe)
    position, coups, state = len(burned), [], PLAY_ON
    while state != SHOE_OVER:
        coup = play_coup(shoe[position : position + LONGEST_COUP])
        coups.append(coup)
        end = position + cards_used(coup)
        state = after_coup(position, end, size, stop_card, last_coup=state == LAST_COUP)
        position = end
    return ShoePlay(burned, tuple(coups), size - position)


# --- money -----------------------------------------------------------------------------------------

def stake_net(settled: StakeResult) -> int:
    """The player's gain (negative: loss) on this stake."""
    if settled.result == LOST:
        return -settled.amount
    return settled.winnings - settled.commission


def balances(payments: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Each account's gain from ``payments`` (received less paid); the gains always sum to zero."""
    out: dict[str, int] = {}
    for p in payments:
        out[p["payer"]] = out.get(p["payer"], 0) - p["amount"]
        out[p["payee"]] = out.get(p["payee"], 0) + p["amount"]
    return out
