"""The rules of the Card lottery (docs/rules/card-lottery.md) as small pure functions.

Stage 1 (B.1-B.6) is a lottery: four face-down cards from the banker's deck carry the pot, holders'
cards from the dealer's deck claim them. Stage 2 plays out the set-aside piles, by `beating` or by
`tricks`. Each function is named after the rule it implements; table.py sequences them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from domain.cards import rank, rank_order, suit
from domain.game import OptionSpec, resolve_options
from domain.words import counted

GAME = "card-lottery"
MIN_HOLDERS, MAX_HOLDERS = 1, 17
LOTTERY_CARDS = 4
CARDS_PER_HOLDER = 3
MIN_POT = LOTTERY_CARDS  # B.1: a pot below 4 cannot be spread over four cards of at least 1 each
# B, stage 2 `tricks`: what each card left in hand costs, by suit.
SUIT_PENALTY = {"h": 4, "c": 3, "d": 2, "s": 1}
BEATING, TRICKS = "beating", "tricks"
CARRY, TO_BANKER = "carry", "to_banker"


# --- options ---------------------------------------------------------------------------------------

MAX_CONTRIBUTION = 10**9
OPTIONS = (
    OptionSpec("contribution", "int", 10, 1, MAX_CONTRIBUTION,
               doc="What each holder pays into the pot at every round (B.1), unless the banker collects "
                   "another amount."),
    OptionSpec("unclaimed", "choice", CARRY, choices=(CARRY, TO_BANKER),
               doc="A prize nobody holds: carried to the next round's pot, or paid to the banker (B.5)."),
    OptionSpec("stage2", "choice", BEATING, choices=(BEATING, TRICKS), doc="How stage 2 is played."),
    OptionSpec("fine_per_card", "int", 1, 0, 10**6, doc="`beating`: the fine per card left in hand or taken."),
    OptionSpec("banker_plays", "bool", False, doc="The banker is dealt in as a holder too."),
    OptionSpec("dealer_plays", "bool", False, doc="The dealer is dealt in as a holder too."),
)


def resolve_rules(options: Mapping[str, Any], players: int = 0) -> dict[str, Any]:
    """The table's options with defaults filled in; unknown options and values out of range are refused."""
    return resolve_options(GAME, OPTIONS, options, players)


# --- participants ----------------------------------------------------------------------------------

def holders_of(players: Sequence[str], banker: str, dealer: str, rules: Mapping[str, Any]) -> list[str]:
    """The players who receive cards, in seat order: everyone but the banker and the dealer, unless
    `banker_plays` / `dealer_plays` deal them in too."""
    out = []
    for p in players:
        if p == banker and not rules["banker_plays"]:
            continue
        if p == dealer and not rules["dealer_plays"]:
            continue
        out.append(p)
    return out


def left_of(holders: Sequence[str], holder: str) -> str:
    """Play goes clockwise: a holder's left neighbour is the next holder in seat order."""
    return holders[(holders.index(holder) + 1) % len(holders)]


# --- stage 1 ---------------------------------------------------------------------------------------

def round_pot(contribution: int, holders: int, carried: int) -> int:
    """B.1: the round's pot is every holder's contribution plus what was carried over."""
    return contribution * holders + carried


def pot_can_be_spread(pot: int) -> bool:
    """B.1: four cards of at least 1 unit each need a pot of at least 4."""
    return pot >= MIN_POT


def distribution_problem(amounts: Sequence[int], pot: int) -> str | None:
    """B.3: four amounts, each at least 1, summing exactly to the pot. None when the spread is valid."""
    if len(amounts) != LOTTERY_CARDS:
        given = counted(len(amounts), "amount was", "amounts were")
        return f"The pot is spread over exactly {LOTTERY_CARDS} cards; {given} given."
    if any(a < 1 for a in amounts):
        return "Each lottery card carries at least 1 unit."
    if sum(amounts) != pot:
        return f"The four amounts must sum to the pot, {pot}; they sum to {sum(amounts)}."
    return None


def prizes(lottery_cards: Sequence[str], hands: Mapping[str, Sequence[str]]) -> list[tuple[int, str]]:
    """B.5: a holder holding a card equal in rank and suit to a lottery card takes its amount.
    Returns (index of the lottery card, holder) for every match, in lottery-card order."""
    won = []
    for index, card in enumerate(lottery_cards):
        for holder, hand in hands.items():
            if card in hand:
                won.append((index, holder))
                break
    return won


def stage1_over(banker_left: int, dealer_left: int, holders: int) -> bool:
    """B.6: no further round when the banker's deck has fewer than 4 cards left or the dealer's deck
    cannot give every holder three cards."""
    return banker_left < LOTTERY_CARDS or dealer_left < CARDS_PER_HOLDER * holders


# --- stage 2 ---------------------------------------------------------------------------------------

def stage2_leader(last_winner: str | None, holders: Sequence[str]) -> str:
    """The holder who took the last prize leads; if nobody won in this game, the first holder."""
    return last_winner if last_winner is not None else holders[0]


def lead_problem(cards: Sequence[str], hand: Sequence[str]) -> str | None:
    """`beating`: a lead is one card, or two cards of equal rank, from the leader's hand."""
    if len(cards) not in (1, 2):
        return "A lead is one card, or two cards of equal rank."
    missing = [c for c in cards if c not in hand]
    if missing:
        return f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not in your hand."
    if len(cards) == 2 and (cards[0] == cards[1] or rank(cards[0]) != rank(cards[1])):
        return "Two cards led together must be of equal rank."
    return None


def beats(led: str, card: str) -> bool:
    """A higher card of the same suit; there are no trumps."""
    return suit(card) == suit(led) and rank_order(card) > rank_order(led)


def can_beat(led: Sequence[str], hand: Sequence[str]) -> bool:
    """Whether every led card can be beaten by its own card from the hand. Two led cards have equal
    rank and so different suits: each needs its own higher card of its suit."""
    return all(any(beats(card, h) for h in hand) for card in led)


def beat_problem(led: Sequence[str], cards: Sequence[str], hand: Sequence[str]) -> str | None:
    """The beat must answer each led card, in the led order, with a higher card of its suit."""
    if len(cards) != len(led):
        return f"Beat each of the {len(led)} led card{'s' if len(led) > 1 else ''} ({', '.join(led)}) with one card of your own."
    missing = [c for c in cards if c not in hand]
    if missing:
        return f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not in your hand."
    if len(set(cards)) != len(cards):
        return "Each led card needs its own card."
    for led_card, card in zip(led, cards):
        if not beats(led_card, card):
            return f"{card} does not beat {led_card}: it takes a higher card of the same suit (no trumps)."
    return None


def beating_fines(
    hands: Mapping[str, Sequence[str]], penalty_piles: Mapping[str, Sequence[str]], out: str, fine_per_card: int
) -> dict[str, int]:
    """`beating` ends: every holder but the one left without cards pays per card in hand and per card
    on their penalty pile."""
    fines = {}
    for holder, hand in hands.items():
        if holder == out:
            continue
        amount = (len(hand) + len(penalty_piles.get(holder, ()))) * fine_per_card
        if amount:
            fines[holder] = amount
    return fines


def may_play(card: str, led_suit: str | None, hand: Sequence[str]) -> bool:
    """`tricks`: follow the led suit if you can, otherwise any card."""
    if card not in hand:
        return False
    if led_suit is None or suit(card) == led_suit:
        return True
    return not any(suit(c) == led_suit for c in hand)


def trick_taker(plays: Sequence[tuple[str, str]]) -> str:
    """`tricks`: the highest card of the led suit takes the trick. ``plays`` is (holder, card) in order."""
    led_suit = suit(plays[0][1])
    best_holder, best = plays[0]
    for holder, card in plays[1:]:
        if suit(card) == led_suit and rank_order(card) > rank_order(best):
            best_holder, best = holder, card
    return best_holder


def suit_penalties(hands: Mapping[str, Sequence[str]]) -> dict[str, int]:
    """`tricks` ends: every holder still holding cards pays per card by suit: hearts 4, clubs 3,
    diamonds 2, spades 1."""
    return {h: sum(SUIT_PENALTY[suit(c)] for c in hand) for h, hand in hands.items() if hand}
