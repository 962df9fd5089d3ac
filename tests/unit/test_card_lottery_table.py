"""Stories of a Card lottery table, played on the aggregate itself (no service, no store)."""

from __future__ import annotations

import random
import re

import pytest

from domain.card_lottery.table import CardLotteryTable
from domain.cards import new_deck
from domain.errors import BadArgument, IllegalPlay, InvalidPlayers, InvalidRules, NotAllowedNow
from domain.shuffle import commitment
from tests.helpers import Seeds, StepClock, stacked_decks

BANKER, DEALER = "ivan", "olga"
SUIT_COST = {"h": 4, "c": 3, "d": 2, "s": 1}  # docs/rules/card-lottery.md, `tricks`


def holder_names(n):
    return [f"h{i}" for i in range(1, n + 1)]


class Game:
    def __init__(self, holders=3, seed=0, players=None, **rules):
        self.clock = StepClock()
        self.seeds = Seeds(seed)
        names = list(players) if players is not None else [BANKER, DEALER, *holder_names(holders)]
        self.table = CardLotteryTable.open(names, dict(rules), self.clock(), banker=BANKER, dealer=DEALER)
        self.events = list(self.table.collect_events())

    def do(self, command, player, **args):
        self.table.handle(command, player, args, self.clock(), self.seeds, new_salt=self.seeds.salt)
        new = list(self.table.collect_events())
        self.events += new
        return new

    def refused(self, error, command, player, match=None, **args):
        """The command is refused with ``error`` (its message containing ``match``) and records nothing."""
        version = self.table.version
        with pytest.raises(error, match=re.escape(match) if match else None) as refusal:
            self.table.handle(command, player, args, self.clock(), self.seeds, new_salt=self.seeds.salt)
        assert self.table.pending_events == []
        assert self.table.version == version
        return refusal.value

    @property
    def holders(self):
        return self.table.holders

    @property
    def expects(self):
        """Who may do what now (the fields' bounds are checked by tests of their own)."""
        return [{k: v for k, v in e.items() if k != "fields"} for e in self.table.expects()]

    def shuffle(self):
        return self.do("shuffle", BANKER, deck="banker") + self.do("shuffle", DEALER, deck="dealer")

    def play_round(self, amounts=None, amount=None):
        """One stage-1 round: collect, lay out, distribute (by default all but 3 units on the first card),
        deal, reveal. Returns the events of the reveal."""
        self.do("collect", BANKER, **({} if amount is None else {"amount": amount}))
        self.do("lay_out", BANKER)
        pot = self.table.accounts["pot"]
        self.do("distribute", BANKER, amounts=amounts or [pot - 3, 1, 1, 1])
        self.do("deal", DEALER)
        return self.do("reveal", BANKER)

    def of(self, kind, events=None):
        return [e for e in (self.events if events is None else events) if e.type == kind]


def unmatched(lottery, hands, count=4):
    """The lottery cards given, completed to four with cards nobody holds."""
    held = {c for hand in hands.values() for c in hand}
    spare = [c for c in new_deck() if c not in held and c not in lottery]
    return list(lottery) + spare[: count - len(lottery)]


def one_round_game(hands, lottery=(), amounts=None, **rules):
    """Nine holders, so that stage 1 is a single round (27 cards dealt, 25 left: not enough for another):
    holder hi is dealt hands["hi"] (holders not named get cards nobody else holds), the first lottery
    cards are ``lottery`` and the others match nothing. Returns the game after the reveal."""
    holders = holder_names(9)
    named = {c for hand in hands.values() for c in hand} | set(lottery)
    spare = iter(c for c in new_deck() if c not in named)
    hands = {h: list(hands[h]) if h in hands else [next(spare) for _ in range(3)] for h in holders}
    dealt = [c for h in holders for c in hands[h]]
    with stacked_decks({"banker": unmatched(lottery, hands), "dealer": dealt}):
        g = Game(holders=9, **rules)
        g.shuffle()
    g.reveal_events = g.play_round(amounts)
    return g


# --- opening -------------------------------------------------------------------------------------------

def open_table(players, rules=None, **roles):
    return CardLotteryTable.open(players, rules or {}, StepClock()(), **roles)


PLAYERS = [BANKER, DEALER, "h1", "h2"]


@pytest.mark.parametrize(
    "roles,field,message",
    [
        ({"dealer": DEALER}, "banker", "needs a 'banker'"),
        ({"banker": BANKER}, "dealer", "needs a 'dealer'"),
        ({"banker": "zoe", "dealer": DEALER}, "banker", "'zoe' is not among the players"),
        ({"banker": BANKER, "dealer": "zoe"}, "dealer", "'zoe' is not among the players"),
        ({"banker": BANKER, "dealer": BANKER}, "dealer", "two different players"),
        ({"banker": BANKER, "dealer": DEALER, "croupier": "h1"}, "croupier", "opening fields besides players and rules are: banker, dealer"),
    ],
)
def test_a_table_is_opened_only_with_a_banker_and_a_dealer_who_are_two_different_players(roles, field, message):
    with pytest.raises(BadArgument, match=re.escape(message)) as refused:
        open_table(PLAYERS, **roles)
    assert refused.value.field == field


@pytest.mark.parametrize(
    "players,rules,message",
    [
        ([BANKER, DEALER], {}, "give 0"),
        ([BANKER, DEALER, *holder_names(18)], {}, "seats 2 to 19 players"),
        ([BANKER, DEALER, *holder_names(17)], {"banker_plays": True}, "give 18"),
        ([BANKER, DEALER, *holder_names(16)], {"banker_plays": True, "dealer_plays": True}, "give 18"),
    ],
)
def test_a_table_needs_1_to_17_holders(players, rules, message):
    with pytest.raises(InvalidPlayers, match=re.escape(message)):
        open_table(players, rules, banker=BANKER, dealer=DEALER)


@pytest.mark.parametrize("holders", [1, 17])
def test_one_and_seventeen_holders_are_both_allowed(holders):
    table = open_table([BANKER, DEALER, *holder_names(holders)], banker=BANKER, dealer=DEALER)
    assert table.holders == holder_names(holders)


def test_the_banker_and_the_dealer_alone_make_a_table_when_both_are_dealt_in():
    table = open_table([BANKER, DEALER], {"banker_plays": True, "dealer_plays": True}, banker=BANKER, dealer=DEALER)
    assert table.holders == [BANKER, DEALER]


@pytest.mark.parametrize(
    "contribution,holders,least",
    [(1, 3, 2), (1, 1, 4), (3, 1, 4), (1, 2, 2), (2, 1, 4)],
)
def test_a_contribution_times_holders_below_4_is_refused_naming_the_smallest_contribution(
    contribution, holders, least
):
    with pytest.raises(InvalidRules) as refused:
        open_table([BANKER, DEALER, *holder_names(holders)], {"contribution": contribution}, banker=BANKER, dealer=DEALER)
    assert refused.value.option == "contribution"
    assert f"the contribution must be at least {least}" in refused.value.message


@pytest.mark.parametrize("contribution,holders", [(2, 2), (4, 1), (1, 4), (1, 17)])
def test_a_contribution_times_holders_of_4_or_more_is_accepted(contribution, holders):
    open_table([BANKER, DEALER, *holder_names(holders)], {"contribution": contribution}, banker=BANKER, dealer=DEALER)


def test_the_opening_records_the_rules_and_the_roles_and_holders_are_dealt_in_seat_order():
    g = Game(players=["h1", BANKER, "h2", DEALER, "h3"], banker_plays=True)
    opened, roles = g.events
    assert opened.type == "TableOpened" and opened.rules["banker_plays"] is True
    assert roles.type == "RolesAssigned" and roles.banker == BANKER and roles.dealer == DEALER
    assert roles.holders == ["h1", BANKER, "h2", "h3"]


# --- shuffles --------------------------------------------------------------------------------------------

def test_a_new_game_waits_for_the_banker_to_shuffle_the_bankers_deck_and_the_dealer_the_dealers():
    g = Game()
    assert g.expects == [
        {"command": "shuffle", "player": BANKER, "deck": "banker"},
        {"command": "shuffle", "player": DEALER, "deck": "dealer"},
    ]
    g.refused(IllegalPlay, "shuffle", BANKER, "send deck 'banker'", deck="dealer")
    g.refused(IllegalPlay, "shuffle", DEALER, "send deck 'dealer'", deck="banker")
    g.refused(NotAllowedNow, "shuffle", "h1", deck="banker")
    g.refused(NotAllowedNow, "collect", BANKER)
    (dealer_shuffle,) = g.do("shuffle", DEALER, deck="dealer")  # either deck may come first
    assert dealer_shuffle.type == "ShoeShuffled" and dealer_shuffle.deck == "dealer" and dealer_shuffle.decks == 1
    assert "seed" not in dealer_shuffle.public_data
    assert g.expects == [{"command": "shuffle", "player": BANKER, "deck": "banker"}]
    g.refused(NotAllowedNow, "shuffle", DEALER, deck="dealer")  # once per game
    (banker_shuffle,) = g.do("shuffle", BANKER, deck="banker")
    assert banker_shuffle.deck == "banker" and banker_shuffle.shoe == dealer_shuffle.shoe + 1
    g.refused(NotAllowedNow, "shuffle", BANKER, deck="banker")
    assert g.expects == [{"command": "collect", "player": BANKER}]


# --- B.1 contributions -------------------------------------------------------------------------------------

def test_collect_takes_the_agreed_contribution_from_every_holder_into_the_pot():
    g = Game(holders=3, contribution=7)
    g.shuffle()
    events = g.do("collect", BANKER)
    payments = g.of("PaymentMade", events)
    assert [(p.payer, p.payee, p.amount) for p in payments] == [(h, "pot", 7) for h in ("h1", "h2", "h3")]
    (collected,) = g.of("ContributionsCollected", events)
    assert collected.amount == 7 and collected.pot == 21 and collected.round == 1
    assert g.table.accounts["pot"] == 21
    assert g.table.balances == {BANKER: 0, DEALER: 0, "h1": -7, "h2": -7, "h3": -7}
    assert g.expects == [{"command": "lay_out", "player": BANKER}]


def test_a_round_may_name_another_contribution():
    g = Game(holders=3)
    g.shuffle()
    events = g.do("collect", BANKER, amount=2)
    (collected,) = g.of("ContributionsCollected", events)
    assert collected.amount == 2 and collected.pot == 6
    assert all(p.amount == 2 for p in g.of("PaymentMade", events))


@pytest.mark.parametrize("holders,amount,least", [(1, 3, 4), (2, 1, 2), (3, 1, 2)])
def test_a_round_whose_pot_would_be_below_4_is_refused_naming_the_least_contribution(holders, amount, least):
    g = Game(holders=holders, contribution=4)
    g.shuffle()
    g.refused(IllegalPlay, "collect", BANKER, f"Collect at least {least} from each holder", amount=amount)
    g.refused(BadArgument, "collect", BANKER, "whole number above 0", amount=0)
    g.do("collect", BANKER, amount=least)
    assert g.table.accounts["pot"] == least * holders


def test_money_carried_over_may_make_a_small_contribution_enough():
    g = Game(holders=1, contribution=4)
    g.shuffle()
    g.play_round(amounts=[1, 1, 1, 1])  # one holder, three cards: at most three of the four can match
    carried = g.table.accounts["pot"]
    assert carried >= 1
    g.do("collect", BANKER, amount=max(1, 4 - carried))
    assert g.table.accounts["pot"] == carried + max(1, 4 - carried)


# --- B.2 - B.4 lottery cards, distribution, deal ----------------------------------------------------------

def test_lay_out_deals_four_cards_from_the_bankers_deck_face_down_and_the_view_hides_them():
    g = Game(holders=2)
    g.shuffle()
    g.do("collect", BANKER)
    events = g.do("lay_out", BANKER)
    deck = g.table.decks["banker"]
    assert [(e.type, e.shoe, e.position, e.to, e.face_up) for e in events] == [
        ("CardDealt", deck["number"], i, BANKER, False) for i in range(4)
    ]
    assert [e.card for e in events] == deck["cards"][:4] == g.table.lottery
    view = g.table.view()
    assert view["lottery_cards"] == ["??"] * 4
    assert view["decks"]["banker"] == {"number": deck["number"], "dealt": 4, "remaining": 48}
    assert view["decks"]["dealer"]["dealt"] == 0
    shown = repr({k: v for k, v in view.items() if k != "rules"})
    assert not any(f"'{c}'" in shown for c in g.table.lottery)
    assert g.expects == [{"command": "distribute", "player": BANKER}]


@pytest.mark.parametrize(
    "amounts,message",
    [
        ([10, 10, 10], "exactly 4 cards; 3 amounts"),
        ([10, 10, 10, 10, 0], "exactly 4 cards; 5 amounts"),
        ([30, 0, 0, 0], "at least 1 unit"),
        ([31, -1, 0, 0], "at least 1 unit"),
        ([10, 10, 5, 4], "sum to the pot, 30; they sum to 29"),
        ([10, 10, 5, 6], "sum to the pot, 30; they sum to 31"),
    ],
)
def test_a_distribution_not_summing_to_the_pot_or_with_a_card_below_1_is_refused(amounts, message):
    g = Game(holders=3)
    g.shuffle()
    g.do("collect", BANKER)
    g.do("lay_out", BANKER)
    g.refused(IllegalPlay, "distribute", BANKER, message, amounts=amounts)
    (spread,) = g.do("distribute", BANKER, amounts=[27, 1, 1, 1])
    assert spread.type == "PotDistributed" and spread.amounts == [27, 1, 1, 1]
    assert g.table.view()["lottery_amounts"] == [27, 1, 1, 1]
    assert g.expects == [{"command": "deal", "player": DEALER}]


def test_the_dealer_deals_three_cards_to_each_holder_in_seat_order_from_the_dealers_deck():
    g = Game(players=["h1", BANKER, "h2", DEALER, "h3"])
    g.shuffle()
    g.do("collect", BANKER)
    g.do("lay_out", BANKER)
    g.do("distribute", BANKER, amounts=[27, 1, 1, 1])
    g.refused(NotAllowedNow, "deal", BANKER, "deal by olga")
    events = g.do("deal", DEALER)
    deck = g.table.decks["dealer"]
    assert [(e.to, e.shoe, e.position, e.actor) for e in events] == [
        (h, deck["number"], 3 * k + i, DEALER) for k, h in enumerate(["h1", "h2", "h3"]) for i in range(3)
    ]
    assert [e.card for e in events] == deck["cards"][:9]
    assert g.table.hands == {h: deck["cards"][3 * k : 3 * k + 3] for k, h in enumerate(["h1", "h2", "h3"])}
    assert g.expects == [{"command": "reveal", "player": BANKER}]


# --- B.5 the reveal -------------------------------------------------------------------------------------

LOTTERY = ["As", "Kh", "2d", "7c"]
STACKED_HANDS = ["As", "3s", "4s", "5h", "Kh", "6h"]  # h1 holds As, h2 holds Kh; 2d and 7c are not dealt


@pytest.mark.parametrize("unclaimed", ["carry", "to_banker"])
def test_the_reveal_pays_each_matching_holder_and_unclaimed_money_is_carried_or_goes_to_the_banker(unclaimed):
    with stacked_decks({"banker": LOTTERY, "dealer": STACKED_HANDS}):
        g = Game(holders=2, unclaimed=unclaimed)
        g.shuffle()
    events = g.play_round(amounts=[10, 5, 3, 2])  # the pot is 2 x 10
    assert g.of("LotteryCardsRevealed", events)[0].cards == LOTTERY
    assert [(e.holder, e.card, e.amount) for e in g.of("PrizeWon", events)] == [("h1", "As", 10), ("h2", "Kh", 5)]
    disposition = "carried" if unclaimed == "carry" else "to banker"
    assert [(e.card, e.amount, e.disposition) for e in g.of("PrizeUnclaimed", events)] == [
        ("2d", 3, disposition), ("7c", 2, disposition)
    ]
    assert g.of("CardsSetAside", events)[0].piles == {"h1": ["3s", "4s"], "h2": ["5h", "6h"]}
    assert g.table.set_aside == {"h1": ["3s", "4s"], "h2": ["5h", "6h"]}
    assert g.table.discarded == {"banker": LOTTERY, "dealer": ["As", "Kh"]}
    assert g.table.hands == {"h1": [], "h2": []} and g.table.lottery == []
    assert g.table.last_winner == "h2"
    carried = 5 if unclaimed == "carry" else 0
    assert g.table.accounts["pot"] == carried
    assert g.table.balances == {BANKER: 5 - carried, DEALER: 0, "h1": 0, "h2": -5}
    assert g.expects == [{"command": "collect", "player": BANKER}]
    (collected,) = g.of("ContributionsCollected", g.do("collect", BANKER))
    assert collected.round == 2 and collected.pot == 20 + carried


def test_a_round_with_no_match_carries_the_whole_pot():
    with stacked_decks({"banker": LOTTERY, "dealer": ["3s", "4s", "5s", "3h", "4h", "5h"]}):
        g = Game(holders=2)
        g.shuffle()
    events = g.play_round(amounts=[5, 5, 5, 5])
    assert not g.of("PrizeWon", events) and len(g.of("PrizeUnclaimed", events)) == 4
    assert g.table.accounts["pot"] == 20 and g.table.last_winner is None


# --- B.6 the end of stage 1 ------------------------------------------------------------------------------

@pytest.mark.parametrize("holders", range(1, 18))
def test_stage_1_is_played_round_by_round_until_a_deck_runs_short(holders):
    rng = random.Random(holders)
    g = Game(holders=holders, seed=holders)
    g.shuffle()
    rounds = 0
    while g.table.stage == 1 and not g.of("Stage1Ended"):
        assert g.expects == [{"command": "collect", "player": BANKER}]
        g.do("collect", BANKER)
        g.do("lay_out", BANKER)
        pot = g.table.accounts["pot"]
        cuts = sorted(rng.sample(range(1, pot), 3))
        g.do("distribute", BANKER, amounts=[cuts[0], cuts[1] - cuts[0], cuts[2] - cuts[1], pot - cuts[2]])
        g.do("deal", DEALER)
        events = g.do("reveal", BANKER)
        rounds += 1
    assert rounds == min(52 // 4, 52 // (3 * holders))  # banker's deck: 13 rounds; dealer's: 52 // 3h
    assert g.of("ContributionsCollected")[-1].round == rounds
    types = [e.type for e in events]
    assert types.index("Stage1Ended") < types.index("Stage2Began")
    assert g.of("Stage1Ended")[0].game == 1
    assert g.table.decks["banker"]["dealt"] == 4 * rounds
    assert g.table.decks["dealer"]["dealt"] == 3 * holders * rounds


def test_money_left_in_the_pot_at_the_end_of_stage_1_goes_to_the_kitty():
    g = one_round_game({}, amounts=[60, 10, 10, 10])  # nobody wins: the whole pot stays
    (ended,) = g.of("Stage1Ended", g.reveal_events)
    assert ended.to_kitty == 90
    kitty = [e for e in g.of("PaymentMade", g.reveal_events) if e.payee == "kitty"]
    assert [(e.payer, e.amount) for e in kitty][0] == ("pot", 90)
    assert g.table.accounts["pot"] == 0


# --- stage 2 `beating` -----------------------------------------------------------------------------------

BEATING_HANDS = {
    "h1": ["9c", "2h", "3h"],
    "h2": ["7s", "8h", "3c"],  # nothing above 9c
    "h3": ["5s", "5h", "2d"],
    "h4": ["6s", "6h", "Ks"],
}


def test_beating_nobody_won_so_the_first_holder_leads_at_the_left_neighbour():
    g = one_round_game(BEATING_HANDS)
    (began,) = g.of("Stage2Began", g.reveal_events)
    assert began.variant == "beating" and began.leader == "h1"
    assert began.hands["h1"] == ["9c", "2h", "3h"] and g.table.hands == began.hands
    assert g.table.set_aside == {h: [] for h in g.holders}
    assert g.table.round == 2  # stage 2 is a round too
    assert g.expects == [{"command": "lead", "player": "h1"}]
    g.refused(NotAllowedNow, "lead", "h2", "lead by h1", cards=["7s"])
    g.refused(IllegalPlay, "lead", "h1", "equal rank", cards=["2h", "3h"])
    g.refused(IllegalPlay, "lead", "h1", "Ah is not in your hand", cards=["Ah"])
    g.refused(IllegalPlay, "lead", "h1", "one card, or two", cards=["9c", "2h", "3h"])
    g.refused(IllegalPlay, "lead", "h1", cards=["2h", "2h"])
    g.refused(BadArgument, "lead", "h1", "non-empty list of cards", cards=[])
    (led,) = g.do("lead", "h1", cards=["9c"])
    assert (led.type, led.holder, led.at, led.cards) == ("CardsLed", "h1", "h2", ["9c"])
    assert g.table.view()["table"] == ["9c"] and g.table.view()["to_beat"] == "h2"


def test_beating_a_holder_who_cannot_beat_must_take_and_the_next_holder_to_the_left_leads():
    g = one_round_game(BEATING_HANDS)
    g.do("lead", "h1", cards=["9c"])
    assert g.expects == [{"command": "take", "player": "h2"}]
    g.refused(IllegalPlay, "beat", "h2", "cannot beat 9c (no higher card of the suit): take them", cards=["3c"])
    g.refused(NotAllowedNow, "take", "h3")
    (taken,) = g.do("take", "h2")
    assert (taken.type, taken.holder, taken.cards, taken.next_leader) == ("CardsTaken", "h2", ["9c"], "h3")
    assert g.table.penalty["h2"] == ["9c"] and g.table.hands["h2"] == ["7s", "8h", "3c"]
    assert g.table.view()["penalty_piles"]["h2"] == ["9c"] and g.table.view()["table"] == []
    assert g.expects == [{"command": "lead", "player": "h3"}]


def test_beating_two_cards_of_equal_rank_are_each_beaten_by_their_own_card_in_the_led_order():
    g = one_round_game(BEATING_HANDS)
    g.do("lead", "h1", cards=["9c"])
    g.do("take", "h2")
    (led,) = g.do("lead", "h3", cards=["5s", "5h"])
    assert led.at == "h4"
    assert g.expects == [{"command": "beat", "player": "h4"}]
    g.refused(IllegalPlay, "take", "h4", "You can beat, so you must: 5s with 6s, Ks; 5h with 6h")
    g.refused(IllegalPlay, "beat", "h4", "6h does not beat 5s", cards=["6h", "6s"])
    g.refused(IllegalPlay, "beat", "h4", "Beat each of the 2 led cards", cards=["6s"])
    g.refused(IllegalPlay, "beat", "h4", "Ks does not beat 5h", cards=["6s", "Ks"])
    (beaten,) = g.do("beat", "h4", cards=["6s", "6h"])
    assert (beaten.type, beaten.holder, beaten.led, beaten.cards) == ("CardsBeaten", "h4", ["5s", "5h"], ["6s", "6h"])
    assert g.table.discarded["dealer"][-4:] == ["5s", "5h", "6s", "6h"]
    assert g.table.hands["h4"] == ["Ks"]
    assert g.expects == [{"command": "lead", "player": "h4"}]  # the beater leads next


def test_beating_a_lead_that_empties_a_hand_ends_the_game_with_fines_per_card_and_penalty_card():
    g = one_round_game(BEATING_HANDS, fine_per_card=2)
    g.do("lead", "h1", cards=["9c"])
    g.do("take", "h2")
    g.do("lead", "h3", cards=["5s", "5h"])
    g.do("beat", "h4", cards=["6s", "6h"])
    kitty_before = g.table.accounts["kitty"]
    assert kitty_before == 90  # nobody won in stage 1
    events = g.do("lead", "h4", cards=["Ks"])
    types = [e.type for e in events]
    assert types[:2] == ["CardsLed", "Stage2Ended"] and types[-3:] == ["ShoeRevealed", "ShoeRevealed", "GameEnded"]
    (ended,) = g.of("Stage2Ended", events)
    # h1: 2 cards; h2: 3 in hand + 1 on the penalty pile; h3: 1; h4 is out; h5-h9: 3 cards each; 2 a card.
    expected = {"h1": 4, "h2": 8, "h3": 2, **{f"h{i}": 6 for i in range(5, 10)}}
    assert ended.variant == "beating" and ended.out == "h4" and ended.fines == expected
    fines = [(e.payer, e.payee, e.amount) for e in g.of("PaymentMade", events)]
    assert fines == [(h, "kitty", amount) for h, amount in expected.items()]
    assert g.of("GameEnded", events)[0].kitty == kitty_before + sum(expected.values()) == g.table.accounts["kitty"]
    shuffles = g.of("ShoeShuffled")
    revealed = g.of("ShoeRevealed", events)
    assert [(r.shoe, r.seed) for r in revealed] == [(s.shoe, s.seed) for s in shuffles]
    assert all(commitment(bytes.fromhex(r.seed)) == s.commitment for r, s in zip(revealed, shuffles))
    assert g.expects == [
        {"command": "shuffle", "player": BANKER, "deck": "banker"},
        {"command": "shuffle", "player": DEALER, "deck": "dealer"},
    ]
    assert g.table.game_number == 2 and g.table.stage == 1
    g.refused(NotAllowedNow, "collect", BANKER)


def test_beating_a_beat_that_empties_a_hand_ends_the_stage_and_the_holder_of_the_last_prize_led():
    hands = {"h1": ["Tc", "5s", "4h"], "h2": ["8d", "9d", "7s"]}
    # h2 wins on 8d and 9d, then h1 on Tc: h1 took the last prize
    g = one_round_game(hands, lottery=["8d", "9d", "Tc"], amounts=[20, 20, 20, 30])
    assert [(e.holder, e.card) for e in g.of("PrizeWon", g.reveal_events)] == [("h2", "8d"), ("h2", "9d"), ("h1", "Tc")]
    assert g.of("Stage2Began", g.reveal_events)[0].leader == "h1"
    assert g.expects == [{"command": "lead", "player": "h1"}]
    g.do("lead", "h1", cards=["5s"])
    events = g.do("beat", "h2", cards=["7s"])
    (ended,) = g.of("Stage2Ended", events)
    assert ended.out == "h2"
    assert ended.fines == {"h1": 1, **{f"h{i}": 3 for i in range(3, 10)}}
    assert g.table.accounts["kitty"] == 30 + 1 + 21  # the unclaimed 30 went to the kitty with stage 1
    assert g.table.balances["h2"] == 40 - 10 and g.table.balances["h1"] == 20 - 10 - 1


def test_beating_with_a_fine_of_0_nobody_pays():
    g = one_round_game(BEATING_HANDS, fine_per_card=0)
    g.do("lead", "h1", cards=["9c"])
    g.do("take", "h2")
    g.do("lead", "h3", cards=["5s", "5h"])
    g.do("beat", "h4", cards=["6s", "6h"])
    events = g.do("lead", "h4", cards=["Ks"])
    assert g.of("Stage2Ended", events)[0].fines == {}
    assert not g.of("PaymentMade", events)


@pytest.mark.parametrize("variant", ["beating", "tricks"])
def test_a_holder_who_starts_stage_2_with_no_cards_ends_it_at_once(variant):
    hands = {"h5": ["Ah", "Kh", "Qh"]}
    g = one_round_game(hands, lottery=["Ah", "Kh", "Qh"], stage2=variant)
    events = g.reveal_events
    (began,) = g.of("Stage2Began", events)
    assert began.leader == "h5" and began.hands["h5"] == []
    (ended,) = g.of("Stage2Ended", events)
    assert ended.out == "h5" and ended.variant == variant
    others = {h: cards for h, cards in began.hands.items() if h != "h5"}
    if variant == "beating":
        assert ended.fines == {h: 3 for h in others}
    else:
        assert ended.fines == {h: sum(SUIT_COST[c[1]] for c in cards) for h, cards in others.items()}
    assert [e.type for e in events][-3:] == ["ShoeRevealed", "ShoeRevealed", "GameEnded"]
    assert g.table.game_number == 2 and [e["command"] for e in g.expects] == ["shuffle", "shuffle"]


# --- stage 2 `tricks` ------------------------------------------------------------------------------------

TRICK_HANDS = {
    "h9": ["5s", "2d", "3d"],  # wins on 3d and leads
    "h1": ["9s", "4h", "5h"],
    "h2": ["Ah", "6h", "7h"],
    "h3": ["Ks", "8h", "9h"],
    "h4": ["4s", "2c", "3c"],
    "h5": ["5c", "6c", "7d"],
    "h6": ["8c", "9c", "Tc"],
    "h7": ["2s", "3s", "Jc"],
    "h8": ["Ac", "2h", "3h"],
}


def tricks_game():
    g = one_round_game(TRICK_HANDS, lottery=["3d"], amounts=[30, 20, 20, 20], stage2="tricks")
    assert [(e.holder, e.amount) for e in g.of("PrizeWon", g.reveal_events)] == [("h9", 30)]
    return g


def play_trick(g, cards):
    """Plays one card for each holder, starting from whoever's turn it is; checks the turn moves left."""
    events = []
    for card in cards:
        turn = g.table.turn
        assert g.expects == [{"command": "play", "player": turn}]
        events += g.do("play", turn, card=card)
    return events


def test_tricks_the_holder_of_the_last_prize_leads_any_card_and_the_others_follow_suit_to_the_left():
    g = tricks_game()
    assert g.of("Stage2Began", g.reveal_events)[0].leader == "h9"
    assert g.expects == [{"command": "play", "player": "h9"}]
    assert g.table.hands["h9"] == ["5s", "2d"]
    g.refused(NotAllowedNow, "play", "h1", "not h1's turn", card="9s")
    g.refused(NotAllowedNow, "lead", "h9", cards=["5s"])
    g.refused(IllegalPlay, "play", "h9", "As is not in your hand", card="As")
    g.do("play", "h9", card="5s")
    assert g.expects == [{"command": "play", "player": "h1"}]
    g.refused(IllegalPlay, "play", "h1", "Follow the led suit: play one of 9s", card="4h")
    g.do("play", "h1", card="9s")
    g.do("play", "h2", card="Ah")  # void in spades: any card
    g.do("play", "h3", card="Ks")
    g.refused(IllegalPlay, "play", "h4", "Follow the led suit: play one of 4s", card="2c")
    assert g.table.view()["table"] == ["5s", "9s", "Ah", "Ks"] and g.table.view()["turn"] == "h4"


def test_tricks_the_highest_card_of_the_led_suit_takes_the_trick_and_leads_next():
    g = tricks_game()
    events = play_trick(g, ["5s", "9s", "Ah", "Ks", "4s", "5c", "8c", "2s", "Ac"])
    (taken,) = g.of("TrickTaken", events)
    assert taken.holder == "h3"  # Ks, although Ah and Ac are higher cards of other suits
    assert taken.cards == ["5s", "9s", "Ah", "Ks", "4s", "5c", "8c", "2s", "Ac"]
    assert not g.of("Stage2Ended", events)  # every holder still holds cards
    assert g.table.discarded["dealer"][-9:] == taken.cards and g.table.view()["table"] == []
    assert g.expects == [{"command": "play", "player": "h3"}]


def test_tricks_end_after_a_trick_that_empties_a_hand_with_suit_penalties_into_the_kitty():
    g = tricks_game()
    play_trick(g, ["5s", "9s", "Ah", "Ks", "4s", "5c", "8c", "2s", "Ac"])
    kitty_before = g.table.accounts["kitty"]
    assert kitty_before == 60  # 90 collected, 30 won, 60 unclaimed went to the kitty at the end of stage 1
    # h3 leads 9h; h8 must follow with a heart, the others are void and discard
    events = play_trick(g, ["9h", "2c", "6c", "9c", "Jc", "3h", "2d", "5h", "7h"])
    assert g.of("TrickTaken", events)[0].holder == "h3"
    (ended,) = g.of("Stage2Ended", events)
    left = {"h1": "4h", "h2": "6h", "h3": "8h", "h4": "3c", "h5": "7d", "h6": "Tc", "h7": "3s", "h8": "2h"}
    assert ended.variant == "tricks" and ended.out == "h9"
    assert ended.fines == {"h1": 4, "h2": 4, "h3": 4, "h4": 3, "h5": 2, "h6": 3, "h7": 1, "h8": 4}
    assert ended.fines == {h: SUIT_COST[card[1]] for h, card in left.items()}  # the card each has left
    assert g.table.accounts["kitty"] == kitty_before + 25
    assert [e.type for e in events][-3:] == ["ShoeRevealed", "ShoeRevealed", "GameEnded"]


def test_the_kitty_opens_the_next_games_pot():
    g = tricks_game()
    play_trick(g, ["5s", "9s", "Ah", "Ks", "4s", "5c", "8c", "2s", "Ac"])
    play_trick(g, ["9h", "2c", "6c", "9c", "Jc", "3h", "2d", "5h", "7h"])
    kitty = g.table.accounts["kitty"]
    assert kitty == 85
    g.shuffle()
    events = g.do("collect", BANKER)
    payments = [(e.payer, e.payee, e.amount) for e in g.of("PaymentMade", events)]
    assert payments[0] == ("kitty", "pot", 85)
    (collected,) = g.of("ContributionsCollected", events)
    assert collected.pot == 85 + 90 and g.table.accounts == {"pot": 175, "kitty": 0}
    assert collected.round == 3  # game 1: one stage-1 round and stage 2


# --- whatever the phase ------------------------------------------------------------------------------------

def test_commands_out_of_turn_are_refused_naming_what_the_table_waits_for_and_record_nothing():
    g = Game(holders=2)
    g.shuffle()
    g.refused(NotAllowedNow, "lay_out", BANKER, "'lay_out' is not allowed now")
    g.refused(NotAllowedNow, "collect", DEALER, "collect by ivan")
    g.refused(NotAllowedNow, "collect", "zoe", "'zoe' is not a player")
    g.do("collect", BANKER)
    g.refused(NotAllowedNow, "deal", DEALER, "lay_out by ivan")
    g.refused(NotAllowedNow, "reveal", BANKER)
    g.refused(BadArgument, "lay_out", BANKER, "unexpected field 'amount'", amount=3)
    g.do("lay_out", BANKER)
    g.refused(BadArgument, "distribute", BANKER, "needs the field 'amounts'")
    g.refused(BadArgument, "distribute", BANKER, "list of whole numbers", amounts=[5.0, 5, 5, 5])
    g.refused(NotAllowedNow, "beat", "h1", cards=["As"])
    g.refused(NotAllowedNow, "play", "h1", card="As")
