"""Punto banco's shoe and coup as small pure functions (docs/rules/punto-banco.md).

The cut, the burn and the stop card; the deal, naturals, the fixed draws of both hands and the outcome, from a
shoe's cards given as an argument. Points and the classic draw rules are the baccarat core's (domain/baccarat.py);
the options, stakes, limits and settlement are domain/punto_banco/rules.py's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from domain import baccarat
from domain.cards import point_value
from domain.punto_banco.rules import BANKER, PLAYER, TIE

DEAL_ORDER = (PLAYER, BANKER, PLAYER, BANKER)
LONGEST_COUP = 6  # two hands of two cards, then at most one third card each
PLAY_ON, LAST_COUP, SHOE_OVER = "play on", "last coup", "shoe over"


# --- the shoe: cut, burn, stop card ---------------------------------------------------------------

def cut_positions(shoe_size: int) -> tuple[int, int]:
    """"A player cuts the shuffled shoe at a position 1..N-1" (the lowest and the highest allowed)."""
    return 1, shoe_size - 1


def burn_count(card: str) -> int:
    """"The first card of a shoe is turned and that many cards are burned": its point value; a ten or a
    court card burns ten, an ace one."""
    return point_value(card) or 10


def stop_index(shoe_size: int, stop_card: int) -> int:
    """"The stop card stands ``stop_card`` cards from the end": the position of the first card behind it."""
    return shoe_size - stop_card


def stop_card_comes_out(start: int, end: int, shoe_size: int, stop_card: int) -> bool:
    """Whether the stop card comes out in the coup that dealt the shoe's positions ``start`` to ``end - 1``:
    it does when that coup deals the first card behind it."""
    return start <= stop_index(shoe_size, stop_card) < end


def after_coup(start: int, end: int, shoe_size: int, stop_card: int, last_coup: bool) -> str:
    """"The coup in which the stop card comes out is finished and one more coup is played; then the
    shoe ends."

    ``last_coup`` says whether the coup just played was that one more coup. Returns PLAY_ON, LAST_COUP
    (the next coup is the shoe's last) or SHOE_OVER. A stop card at least 12 cards from the end leaves
    enough for both coups, whatever their length.
    """
    if last_coup:
        return SHOE_OVER
    if stop_card_comes_out(start, end, shoe_size, stop_card):
        return LAST_COUP
    return PLAY_ON


# --- the coup: deal, naturals, draws, outcome -------------------------------------------------------

def deal_hands(cards: Sequence[str]) -> tuple[list[str], list[str]]:
    """"The croupier deals player, banker, player, banker" (DEAL_ORDER): the first four cards make the
    two hands."""
    return [cards[0], cards[2]], [cards[1], cards[3]]


def natural_decides(player_total: int, banker_total: int) -> bool:
    """"An 8 or a 9 on either two-card hand is a natural: both hands stand and the coup is decided."

    Takes the totals of the two-card hands, before any third card.
    """
    return player_total in baccarat.NATURAL_TOTALS or banker_total in baccarat.NATURAL_TOTALS


def player_draws(player_total: int) -> bool:
    """"The player's hand draws a third card on 0-5 and stands on 6-7"; nobody chooses."""
    return baccarat.player_choice(player_total) == baccarat.DRAW


def banker_draws(banker_total: int, player_third: int | None) -> bool:
    """The banker's rule; ``player_third`` is the point value of the player's third card, None if the
    player stood.

    "If the player stood, the banker draws on 0-5 and stands on 6-7. Otherwise, by the player's third
    card: banker 0-2 draws; 3 draws unless the third card is an 8; 4 draws on 2-7; 5 draws on 4-7;
    6 draws on 6-7; 7 stands." Nobody chooses.
    """
    return baccarat.banker_tableau(banker_total, player_third) == baccarat.DRAW


def outcome(player_total: int, banker_total: int) -> str:
    """"The hand with the higher total wins; equal totals are a tie.\""""
    if player_total > banker_total:
        return PLAYER
    if banker_total > player_total:
        return BANKER
    return TIE


def player_rule_text(player_total: int) -> str:
    """Why the player's hand drew or stood, in words for a croupier."""
    verdict = "draws" if player_draws(player_total) else "stands"
    return f"the player's hand {verdict} on {player_total} (draws on 0-5, stands on 6-7)."


def banker_rule_text(banker_total: int, player_third: int | None) -> str:
    """Why the banker's hand drew or stood, in words for a croupier."""
    verdict = "draws" if banker_draws(banker_total, player_third) else "stands"
    if player_third is None:
        return f"the player stood, so the banker's hand {verdict} on {banker_total} (draws on 0-5, stands on 6-7)."
    return (
        f"the banker's hand {verdict} on {banker_total} against a player's third card worth {player_third} "
        "(the banker's tableau)."
    )


@dataclass(frozen=True)
class Coup:
    """One coup as dealt: the two hands (cards in the order each hand received them), their totals,
    whether a natural decided it, and the outcome."""

    player: tuple[str, ...]
    banker: tuple[str, ...]
    player_total: int
    banker_total: int
    natural: bool
    outcome: str

    @property
    def dealt(self) -> tuple[str, ...]:
        """Every card in the order it left the shoe: player, banker, player, banker, then the third
        cards, the player's first."""
        first_four = (self.player[0], self.banker[0], self.player[1], self.banker[1])
        return first_four + self.player[2:] + self.banker[2:]

    @property
    def player_third(self) -> int | None:
        """The point value of the player's third card, None if the player stood (what the banker's rule reads)."""
        return point_value(self.player[2]) if len(self.player) == 3 else None


class ShoeTooShort(ValueError):
    """A coup needed a card the sequence given does not have (a caller's mistake, not a player's)."""


def play_coup(cards: Sequence[str]) -> Coup:
    """Plays one coup from ``cards``, the next cards of the shoe in order, and says what happened.

    Deal player, banker, player, banker; a natural on either hand decides the coup; otherwise the
    player's hand follows the player's rule and then the banker's hand the banker's rule, each taking
    the next card when it draws. Uses 4 to 6 cards from the front of ``cards``; the rest are untouched.
    """
    if len(cards) < 4:
        raise ShoeTooShort(f"a coup needs at least 4 cards; {len(cards)} given")
    player, banker = deal_hands(cards)
    player_total, banker_total = baccarat.hand_total(player), baccarat.hand_total(banker)
    natural = natural_decides(player_total, banker_total)
    if not natural:
        position = 4
        player_third = None
        if player_draws(player_total):
            player.append(_card_at(cards, position))
            player_third = point_value(player[2])
            player_total = baccarat.hand_total(player)
            position += 1
        # The banker's rule reads the banker's two-card total, which is what banker_total still holds.
        if banker_draws(banker_total, player_third):
            banker.append(_card_at(cards, position))
            banker_total = baccarat.hand_total(banker)
    return Coup(
        tuple(player), tuple(banker), player_total, banker_total, natural, outcome(player_total, banker_total)
    )


def _card_at(cards: Sequence[str], position: int) -> str:
    if position >= len(cards):
        raise ShoeTooShort(f"the coup needs a card at position {position}; only {len(cards)} given")
    return cards[position]
