"""The rules of Chemin de fer (docs/rules/chemin-de-fer.md) as small pure functions.

Each function is named after the rule it implements and quotes its point number; the aggregate in
table.py only sequences them and records what they decide. What the game shares with punto banco
(points, naturals, the classic draw rules) lives in domain/baccarat.py; this module keeps what is
Chemin de fer's own, such as the free choices of A.9 and A.10.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from domain import baccarat
# Re-exported: callers keep reading the shared rules as this game's own (R.hand_total, R.DRAW, ...).
from domain.baccarat import DRAW, STAND, hand_total, is_natural  # noqa: F401
from domain.cards import rank_order
from domain.game import OptionSpec, resolve_options

GAME = "chemin-de-fer"
MIN_PLAYERS, MAX_PLAYERS = 2, 12
MIN_STOP_CARD = 6
MAX_STOP_CARD = 52
MAX_COMMISSION_PERCENT = 50
# A.3 sets no limit to a bank; this one keeps every sum of money exact in any JSON reader (below 2**53).
MAX_BANK = 10**12

EITHER = "either"  # DRAW and STAND come from the baccarat core
PUNTER, BANKER, TIE = "punter", "banker", "tie"
DRAW_RULES = ("classic", "free")


# --- options ---------------------------------------------------------------------------------------

OPTIONS = (
    OptionSpec("decks", "int", lambda players: players, 2, 12,
               doc="Decks in the shoe; by default as many as players (A)."),
    OptionSpec("stop_card", "int", 7, MIN_STOP_CARD, MAX_STOP_CARD,
               doc="The stop card stands this many cards from the end; a coup that takes any of them finishes "
                   "the shoe once settled (A.2)."),
    OptionSpec("draw_rule", "choice", "classic", choices=DRAW_RULES,
               doc="classic: the punter must draw on 0-4, chooses on 5, stands on 6-7, the banker follows the "
                   "tableau of A.10; free: both choose freely on 0-7."),
    OptionSpec("auto_forced", "bool", True,
               doc="Where only one choice is legal, the service applies it at once (actor dealer-rule)."),
    OptionSpec("commission_percent", "int", 0, 0, MAX_COMMISSION_PERCENT,
               doc="The house's share of a winning banker's winnings, rounded down (A.11)."),
)


def resolve_rules(options: Mapping[str, Any], players: int) -> dict[str, Any]:
    """The table's options with defaults filled in; refuses unknown options and values out of range.

    Recorded in TableOpened and never changed, so a replay runs under the rules the table was played with.
    """
    return resolve_options(GAME, OPTIONS, options, players)


# --- A.1 seating by lots ---------------------------------------------------------------------------

def lots_groups(draws: Sequence[tuple[str, str]]) -> list[list[str]]:
    """A.1: players grouped by the rank they drew, highest rank first, listed order kept inside a group.

    A group of more than one is tied and draws again among themselves; suits never break ties.
    """
    by_rank: dict[int, list[str]] = {}
    for player, card in draws:
        by_rank.setdefault(rank_order(card), []).append(player)
    return [by_rank[r] for r in sorted(by_rank, reverse=True)]


# --- seats -----------------------------------------------------------------------------------------

def left_of(seat: int, seats: int) -> int:
    """"Left neighbour" of seat i is seat i+1 (mod n): play goes clockwise."""
    return (seat + 1) % seats


def right_of(seat: int, seats: int) -> int:
    return (seat - 1) % seats


def cutter_seat(banker_seat: int, seats: int) -> int:
    """A.2: only the player seated to the banker's right cuts."""
    return right_of(banker_seat, seats)


def cut_positions(shoe_size: int) -> tuple[int, int]:
    """A.2: a cut at a position 1..N-1."""
    return 1, shoe_size - 1


def stake_order(banker_seat: int, seats: int) -> list[int]:
    """A.4: players speak in clockwise order from the banker's left."""
    return [(banker_seat + k) % seats for k in range(1, seats)]


def next_banker_seat(banker_seat: int, seats: int) -> int:
    """A.12: a bank lost or given up passes to the next seat clockwise."""
    return left_of(banker_seat, seats)


# --- A.4 - A.6 stakes ------------------------------------------------------------------------------

def largest_stake_allowed(bank: int, stakes: Mapping[str, int]) -> int:
    """A.4: the stakes together may not exceed the bank; a stake may cover at most the uncovered rest."""
    return bank - sum(stakes.values())


def bank_covered(bank: int, stakes: Mapping[str, int]) -> bool:
    """A.4: once the bank is fully covered the players still to speak are skipped."""
    return sum(stakes.values()) >= bank


def bank_at_risk(bank: int, stakes: Mapping[str, int]) -> int:
    """A.5: stakes that do not cover the bank leave the excess withdrawn; at risk = the sum of stakes."""
    return min(bank, sum(stakes.values()))


def choose_punter(stakes: Mapping[str, int]) -> str:
    """A.6: the largest stake plays the hand; on equal stakes, the one who staked first.

    ``stakes`` iterates in the order the stakes were placed.
    """
    best_player, best = "", 0
    for player, amount in stakes.items():
        if amount > best:
            best_player, best = player, amount
    return best_player


# --- A.8 points ------------------------------------------------------------------------------------

# A.8: hand_total (the sum of point values mod 10) and is_natural (a two-card 8 or 9) are the baccarat
# core's, imported above and part of this module's names.

# --- A.9 / A.10 draws ------------------------------------------------------------------------------

# A.10: the cells of the classic tableau that Chemin de fer leaves to the banker's free choice, as
# (banker total, punter's third card value). Everywhere else the classic rule is the baccarat core's.
FREE_TABLEAU_CELLS = frozenset({(3, 9), (5, 4)})


def punter_choice(total: int, draw_rule: str) -> str:
    """A.9: classic: must draw on 0-4, free on 5, must stand on 6-7. free: free choice on 0-7."""
    if draw_rule == "free" or total == 5:
        return EITHER
    return baccarat.player_choice(total)


def banker_choice(banker_total: int, punter_third: int | None, draw_rule: str) -> str:
    """A.10: the banker's tableau. ``punter_third`` is the point value of the punter's third card,
    or None if the punter stood."""
    if draw_rule == "free" or (banker_total, punter_third) in FREE_TABLEAU_CELLS:
        return EITHER
    return baccarat.banker_tableau(banker_total, punter_third)


def punter_rule_text(total: int, draw_rule: str) -> str:
    if draw_rule == "free":
        return "under the free draw rule the punter chooses freely on 0-7."
    if total <= 4:
        return f"the punter must draw on {total} (classic rule: draw on 0-4)."
    if total == 5:
        return "the punter chooses freely on 5."
    return f"the punter must stand on {total} (classic rule: stand on 6-7)."


def banker_rule_text(banker_total: int, punter_third: int | None, draw_rule: str) -> str:
    if draw_rule == "free":
        return "under the free draw rule the banker chooses freely on 0-7."
    choice = banker_choice(banker_total, punter_third, draw_rule)
    if punter_third is None:
        situation = f"the punter stood and the banker has {banker_total}"
        base = "(classic rule: after a punter stands the banker draws on 0-5 and stands on 6-7)"
    else:
        situation = f"the banker has {banker_total} against a punter's third card worth {punter_third}"
        base = "(classic tableau, rule A.10)"
    verdict = {DRAW: "must draw", STAND: "must stand", EITHER: "chooses freely"}[choice]
    return f"{situation}, so the banker {verdict} {base}."


# --- A.11 showdown and settlement ------------------------------------------------------------------

def coup_winner(punter_total: int, banker_total: int) -> str:
    """A.8 / A.11: the higher total wins; equal totals tie."""
    if punter_total > banker_total:
        return PUNTER
    if banker_total > punter_total:
        return BANKER
    return TIE


def commission(winnings: int, percent: int) -> int:
    """A.11: the house takes ``percent`` of the banker's winnings, rounded down to whole units."""
    return winnings * percent // 100


def settlement(
    stakes: Mapping[str, int], banker: str, winner: str, commission_percent: int
) -> list[dict[str, Any]]:
    """A.11: who pays whom. Punter wins: the banker pays every staking player their stake.
    Banker wins: every staking player pays the banker their stake, then the banker pays commission.
    A tie pays nothing."""
    payments: list[dict[str, Any]] = []
    if winner == PUNTER:
        for player, amount in stakes.items():
            payments.append({"payer": banker, "payee": player, "amount": amount, "reason": "stake won"})
    elif winner == BANKER:
        for player, amount in stakes.items():
            payments.append({"payer": player, "payee": banker, "amount": amount, "reason": "stake lost"})
        fee = commission(sum(stakes.values()), commission_percent)
        if fee:
            payments.append({"payer": banker, "payee": "house", "amount": fee, "reason": "commission"})
    return payments


def bank_after_win(at_risk: int, stakes: Mapping[str, int], commission_percent: int) -> int:
    """A.12: a banker who wins keeps the bank: the bank at risk plus the stakes won, less commission."""
    won = sum(stakes.values())
    return at_risk + won - commission(won, commission_percent)


# --- A.2 stop card ---------------------------------------------------------------------------------

def takes_stop_zone(position: int, shoe_size: int, stop_card: int) -> bool:
    """A.2: a coup that takes any of the last ``stop_card`` cards finishes the shoe once settled."""
    return position >= shoe_size - stop_card
