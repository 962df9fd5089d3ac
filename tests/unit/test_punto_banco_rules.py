"""Every rule of punto banco (docs/rules/punto-banco.md) as tables of cases, properties and a simulation."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain import baccarat
from domain.cards import new_deck, point_value
from domain.chemin_de_fer import rules as chemin_de_fer
from domain.errors import BadArgument, InvalidRules
from domain.punto_banco import coup as C
from domain.punto_banco import rules as R
from domain.shuffle import shoe_order
from tests.punto_banco_play import (
    LONGEST_BURN,
    balances,
    burn,
    cards_used,
    coup_data,
    may_issue,
    play_shoe,
    stake_net,
)

PLAYER, BANKER, TIE = R.PLAYER, R.BANKER, R.TIE
# One card for each point value: a king is worth 0, an ace 1.
CARD = {0: "Kd", 1: "Ac", **{v: f"{v}h" for v in range(2, 10)}}
DEFAULTS = R.resolve_rules({})

# The banker's rule. Columns: the player stood (-), then the player's third card worth 0..9.
TABLEAU = """
B  -  0 1 2 3 4 5 6 7 8 9
0  D  D D D D D D D D D D
1  D  D D D D D D D D D D
2  D  D D D D D D D D D D
3  D  D D D D D D D D S D
4  D  S S D D D D D D S S
5  D  S S S S D D D D S S
6  S  S S S S S S D D S S
7  S  S S S S S S S S S S
"""


def tableau_cells():
    for line in TABLEAU.strip().splitlines()[1:]:
        row = line.split()
        for third, symbol in zip([None, *range(10)], row[1:], strict=True):
            yield int(row[0]), third, symbol == "D"


def two_cards(total: int) -> list[str]:
    """Two cards making ``total`` without a pair of naturals: a king and the card worth ``total``."""
    return ["Ks", CARD[total]]


# --- the banker's rule -----------------------------------------------------------------------------

def test_the_tableau_has_all_eighty_eight_cells():
    cells = list(tableau_cells())
    assert len(cells) == 8 * 11
    assert len({(b, p) for b, p, _ in cells}) == 88


@pytest.mark.parametrize("banker_total,player_third,draws", list(tableau_cells()))
def test_banker_rule_cell(banker_total, player_third, draws):
    assert C.banker_draws(banker_total, player_third) is draws


@pytest.mark.parametrize("banker_total,player_third,draws", list(tableau_cells()))
def test_a_dealt_coup_follows_the_banker_rule_cell(banker_total, player_third, draws):
    # The player's hand is 5 (draws) when a third card is wanted, 6 (stands) when not.
    player = ["2s", "3s"] if player_third is not None else ["3s", "3d"]
    banker = two_cards(banker_total)
    shoe = [player[0], banker[0], player[1], banker[1]]
    if player_third is not None:
        shoe.append(CARD[player_third])
    shoe.append("9c")  # the card the banker takes if the rule says draw
    coup = C.play_coup(shoe)
    assert coup.player_third == player_third
    assert len(coup.banker) == (3 if draws else 2)
    assert coup.banker[2:] == (("9c",) if draws else ())


def test_banker_3_stands_only_against_an_eight_and_draws_against_a_nine():
    assert [C.banker_draws(3, p) for p in range(10)] == [True] * 8 + [False, True]


def test_banker_5_draws_against_a_four():
    assert C.banker_draws(5, 4) is True


# --- the player's rule -----------------------------------------------------------------------------

@pytest.mark.parametrize(
    "total,draws",
    [(0, True), (1, True), (2, True), (3, True), (4, True), (5, True), (6, False), (7, False), (8, False), (9, False)],
)
def test_player_draws_on_0_to_5_and_stands_on_6_to_9(total, draws):
    assert C.player_draws(total) is draws


@pytest.mark.parametrize("total", range(8))
def test_a_dealt_coup_follows_the_player_rule(total):
    player, banker = two_cards(total), ["Ts", "7c"]  # the banker's 7 stands whatever the player does
    coup = C.play_coup([player[0], banker[0], player[1], banker[1], "4d", "5d"])
    assert len(coup.player) == (3 if total <= 5 else 2)
    assert len(coup.banker) == 2


def test_rule_texts_say_what_the_rule_decided():
    assert C.player_rule_text(5) == "the player's hand draws on 5 (draws on 0-5, stands on 6-7)."
    assert C.player_rule_text(6) == "the player's hand stands on 6 (draws on 0-5, stands on 6-7)."
    assert "stood" in C.banker_rule_text(5, None) and "draws on 5" in C.banker_rule_text(5, None)
    assert C.banker_rule_text(3, 8).startswith("the banker's hand stands on 3 against a player's third card worth 8")


# --- deal order and naturals -----------------------------------------------------------------------

def test_cards_are_dealt_player_banker_player_banker():
    assert C.DEAL_ORDER == (PLAYER, BANKER, PLAYER, BANKER)
    cards = ["2s", "3s", "4s", "5s", "6s"]
    player, banker = C.deal_hands(cards)
    assert (player, banker) == (["2s", "4s"], ["3s", "5s"])
    hands = {PLAYER: iter(player), BANKER: iter(banker)}
    assert [next(hands[h]) for h in C.DEAL_ORDER] == cards[:4]


def test_dealt_lists_the_cards_in_the_order_they_left_the_shoe():
    # Player 2+3 = 5 draws a 4 (9); banker 0 draws against a 4.
    shoe = ["2s", "Ks", "3s", "Qs", "4s", "6s", "Ah"]
    coup = C.play_coup(shoe)
    assert coup.player == ("2s", "3s", "4s")
    assert coup.banker == ("Ks", "Qs", "6s")
    assert coup.dealt == tuple(shoe[:6])
    assert cards_used(coup) == 6
    assert (coup.player_total, coup.banker_total, coup.outcome) == (9, 6, PLAYER)


@pytest.mark.parametrize(
    "player,banker,natural",
    [
        (["8s", "Kh"], ["2c", "Kd"], True),
        (["Kh", "Qs"], ["9s", "Tc"], True),
        (["4s", "4h"], ["5s", "4d"], True),
        (["7s", "Ah"], ["Ks", "Kd"], True),
        (["7s", "Kh"], ["6s", "Kd"], False),
        (["3s", "2h"], ["3c", "4d"], False),
    ],
)
def test_a_natural_on_either_hand_decides_the_coup(player, banker, natural):
    assert C.natural_decides(baccarat.hand_total(player), baccarat.hand_total(banker)) is natural


@pytest.mark.parametrize("player_total", range(10))
@pytest.mark.parametrize("banker_total", range(10))
def test_naturals_are_an_eight_or_a_nine_on_either_hand(player_total, banker_total):
    assert C.natural_decides(player_total, banker_total) is (player_total >= 8 or banker_total >= 8)


@pytest.mark.parametrize(
    "player,banker,outcome",
    [
        (["8s", "Kh"], ["Kc", "Kd"], PLAYER),  # player's natural 8 against banker 0: the banker may not draw
        (["Ks", "Kh"], ["9c", "Kd"], BANKER),  # banker's natural 9 against player 0: the player may not draw
        (["9s", "Kh"], ["8c", "Kd"], PLAYER),  # both natural: the higher wins
        (["8s", "Kh"], ["4c", "4d"], TIE),  # both natural 8
    ],
)
def test_a_natural_stops_both_hands_at_two_cards(player, banker, outcome):
    coup = C.play_coup([player[0], banker[0], player[1], banker[1], "5s", "5h"])
    assert coup.natural
    assert (len(coup.player), len(coup.banker), cards_used(coup)) == (2, 2, 4)
    assert coup.outcome == outcome


def test_a_three_card_eight_is_no_natural():
    # Player 3+2 = 5 draws a 3 and has 8 in three cards; the banker's 6 stands against a 3.
    coup = C.play_coup(["3s", "6h", "2s", "Kh", "3d", "9c"])
    assert not coup.natural
    assert (coup.player_total, coup.banker_total, coup.outcome) == (8, 6, PLAYER)


@pytest.mark.parametrize("p,b,expected", [(7, 6, PLAYER), (6, 7, BANKER), (5, 5, TIE), (0, 0, TIE), (9, 8, PLAYER)])
def test_the_higher_total_wins_and_equal_totals_tie(p, b, expected):
    assert C.outcome(p, b) == expected


def test_a_coup_asks_for_no_card_it_does_not_need_and_says_when_one_is_missing():
    assert cards_used(C.play_coup(["8s", "Kh", "Ks", "Kd"])) == 4
    with pytest.raises(C.ShoeTooShort):
        C.play_coup(["2s", "Kh", "3s"])
    with pytest.raises(C.ShoeTooShort):
        C.play_coup(["2s", "Kh", "3s", "Kd"])  # player 5 draws, and there is no fifth card


def test_coup_to_data_is_plain_data():
    data = coup_data(C.play_coup(["2s", "Ks", "3s", "Qs", "4s", "6s"]))
    assert data == {
        "player": ["2s", "3s", "4s"],
        "banker": ["Ks", "Qs", "6s"],
        "player_total": 9,
        "banker_total": 6,
        "natural": False,
        "outcome": PLAYER,
    }


# --- the shoe: cut, burn, stop card ---------------------------------------------------------------

@pytest.mark.parametrize(
    "rank,count",
    [("A", 1), ("2", 2), ("3", 3), ("4", 4), ("5", 5), ("6", 6), ("7", 7), ("8", 8), ("9", 9),
     ("T", 10), ("J", 10), ("Q", 10), ("K", 10)],
)
def test_the_turned_card_burns_its_point_value_a_ten_or_court_card_ten(rank, count):
    card = rank + "s"
    assert C.burn_count(card) == count
    shoe = [card, *new_deck(1)]
    assert burn(shoe) == tuple(shoe[: 1 + count])


def test_cut_positions_are_1_to_n_minus_1():
    assert C.cut_positions(416) == (1, 415)


def test_the_stop_card_stands_before_the_last_stop_card_cards():
    assert C.stop_index(416, 16) == 400
    assert C.stop_card_comes_out(396, 401, 416, 16)  # took the card at 400
    assert C.stop_card_comes_out(400, 404, 416, 16)  # the stop card is the first thing out of the shoe
    assert not C.stop_card_comes_out(395, 400, 416, 16)  # ended just before it
    assert not C.stop_card_comes_out(401, 405, 416, 16)  # already out


def test_the_coup_with_the_stop_card_is_finished_and_one_more_is_played():
    assert C.after_coup(390, 395, 416, 16, last_coup=False) == C.PLAY_ON
    assert C.after_coup(398, 402, 416, 16, last_coup=False) == C.LAST_COUP
    assert C.after_coup(402, 408, 416, 16, last_coup=True) == C.SHOE_OVER


def test_a_shoe_is_played_to_the_coup_after_the_stop_card():
    shoe = shoe_order(bytes(32), 8, 100)
    play = play_shoe(shoe, 16)
    assert play.burned == burn(shoe)
    dealt = [card for coup in play.coups for card in coup.dealt]
    assert list(play.burned) + dealt == shoe[: len(shoe) - play.cards_left]
    stop = C.stop_index(len(shoe), 16)
    before_last = len(shoe) - play.cards_left - cards_used(play.coups[-1])
    assert before_last > stop >= before_last - cards_used(play.coups[-2])


def test_play_shoe_refuses_a_stop_card_that_cannot_be_played():
    with pytest.raises(ValueError):
        play_shoe(new_deck(1), 11)
    with pytest.raises(ValueError):
        play_shoe(new_deck(1)[:20], 12)


# --- options ---------------------------------------------------------------------------------------

def test_defaults():
    assert DEFAULTS == {
        "decks": 8, "stop_card": 16, "commission_percent": 5, "tie_pays": 8, "min_stake": 20, "max_stake": 10_000,
    }


def test_allowed_options_are_kept():
    options = {"decks": 6, "stop_card": 12, "commission_percent": 0, "tie_pays": 9, "min_stake": 1, "max_stake": 1}
    assert R.resolve_rules(options) == options
    assert R.resolve_rules({"stop_card": 52, "commission_percent": 10})["stop_card"] == 52


@pytest.mark.parametrize(
    "options,option,says",
    [
        ({"decks": 7}, "decks", "must be 6 or 8; got 7"),
        ({"decks": 1}, "decks", "must be 6 or 8"),
        ({"decks": "8"}, "decks", "must be 6 or 8; got '8'"),
        ({"decks": 8.0}, "decks", "must be 6 or 8"),
        ({"decks": True}, "decks", "must be 6 or 8"),
        ({"stop_card": 11}, "stop_card", "from 12 to 52; got 11"),
        ({"stop_card": 53}, "stop_card", "from 12 to 52"),
        ({"stop_card": None}, "stop_card", "from 12 to 52"),
        ({"commission_percent": -1}, "commission_percent", "from 0 to 10; got -1"),
        ({"commission_percent": 11}, "commission_percent", "from 0 to 10"),
        ({"commission_percent": 2.5}, "commission_percent", "from 0 to 10"),
        ({"tie_pays": 7}, "tie_pays", "must be 8 or 9; got 7"),
        ({"tie_pays": 10}, "tie_pays", "must be 8 or 9"),
        ({"min_stake": 0}, "min_stake", "from 1 to 1000000000000; got 0"),
        ({"min_stake": -20}, "min_stake", "from 1"),
        ({"min_stake": False}, "min_stake", "from 1"),
        ({"max_stake": 19}, "max_stake", "from 20 (the min_stake) to 1000000000000; got 19"),
        ({"min_stake": 500, "max_stake": 100}, "max_stake", "from 500 (the min_stake)"),
        ({"max_stake": 10**12 + 1}, "max_stake", "to 1000000000000"),
        ({"max_stake": "many"}, "max_stake", "got 'many'"),
        ({"croupier_name": "x"}, "croupier_name", "the options are: decks, stop_card, commission_percent"),
        ({"draw_rule": "free"}, "draw_rule", "Unknown rules option 'draw_rule' for punto-banco"),
        # 1% of a stake is whole only on multiples of 100, and there is none from 20 to 50.
        ({"commission_percent": 1, "max_stake": 50}, "max_stake", "multiple of 100"),
    ],
)
def test_refused_option_names_what_is_allowed(options, option, says):
    with pytest.raises(InvalidRules) as refused:
        R.resolve_rules(options)
    assert refused.value.option == option
    assert says in refused.value.message


def test_rules_must_be_an_object():
    with pytest.raises(BadArgument):
        R.resolve_rules(["decks", 8])


# --- who may do what -------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "command,croupier_may,player_may",
    [("shuffle", True, False), ("cut", False, True), ("place_stake", False, True),
     ("close_stakes", True, False), ("deal", True, False), ("draw", False, False)],
)
def test_who_may_issue_each_command(command, croupier_may, player_may):
    players = ["ann", "bob"]
    assert may_issue(command, "cleo", "cleo", players) is croupier_may
    assert may_issue(command, "bob", "cleo", players) is player_may
    assert may_issue(command, "zed", "cleo", players) is False
    assert may_issue(command, "house", "cleo", players) is False


@pytest.mark.parametrize("croupier", [None, "", "  ", 7, "ann", "house"])
def test_the_croupier_is_a_person_of_their_own(croupier):
    with pytest.raises(BadArgument) as refused:
        R.check_croupier(croupier, ["ann", "bob"])
    assert refused.value.field == "croupier"


def test_a_croupier_is_accepted():
    assert R.check_croupier("cleo", ["ann", "bob"]) == "cleo"


# --- stakes ----------------------------------------------------------------------------------------

def test_commission_unit_makes_the_commission_whole():
    assert [R.commission_unit(p) for p in range(11)] == [1, 100, 50, 100, 25, 20, 50, 100, 25, 100, 10]
    for percent in range(11):
        assert R.commission_unit(percent) * percent % 100 == 0


@pytest.mark.parametrize(
    "own,spot,amount,total",
    [
        ({}, PLAYER, 20, 20),  # the minimum
        ({}, PLAYER, 10_000, 10_000),  # the maximum
        ({}, TIE, 25, 25),
        ({}, BANKER, 40, 40),
        ({PLAYER: 20}, PLAYER, 5, 25),  # stakes add up; an addition may be below the minimum
        ({PLAYER: 9_000}, PLAYER, 1_000, 10_000),
        ({BANKER: 20}, BANKER, 60, 80),
        ({BANKER: 100}, TIE, 20, 20),  # a tie stake goes with either hand
        ({PLAYER: 100, TIE: 20}, TIE, 20, 40),
    ],
)
def test_a_stake_within_the_limits_is_taken(own, spot, amount, total):
    assert R.check_stake(DEFAULTS, own, spot, amount) == total


@pytest.mark.parametrize(
    "own,spot,amount,field,says,details",
    [
        ({}, PLAYER, 19, "amount", "The least the table takes on the player is 20; got 19.", {"min_stake": 20}),
        ({}, TIE, 10_001, "amount", "above 10000, the most the table takes on the tie; stake at most 10000.",
         {"max_allowed": 10_000}),
        ({PLAYER: 9_990}, PLAYER, 20, "amount", "to 10010, above 10000", {"max_allowed": 10}),
        ({PLAYER: 10_000}, PLAYER, 20, "amount", "already at the maximum", {"max_allowed": 0}),
        ({}, BANKER, 30, "amount", "A banker stake must be a multiple of 20, so that the 5% commission is exact; "
         "30 is not.", {"multiple_of": 20, "total": 30}),
        ({BANKER: 20}, BANKER, 10, "amount", "30 is not", {"multiple_of": 20}),
        ({PLAYER: 20}, BANKER, 20, "spot", "You already back the player in this coup", {"backed": PLAYER}),
        ({BANKER: 20}, PLAYER, 20, "spot", "both the player and the banker", {"backed": BANKER}),
    ],
)
def test_a_stake_outside_the_rules_is_refused_with_what_is_allowed(own, spot, amount, field, says, details):
    with pytest.raises(R.StakeRefused) as refused:
        R.check_stake(DEFAULTS, own, spot, amount)
    assert refused.value.field == field
    assert says in refused.value.message
    assert details.items() <= refused.value.details.items()


def test_banker_limits_are_the_multiples_inside_the_table_limits():
    rules = R.resolve_rules({"min_stake": 10, "max_stake": 1_010})
    assert R.smallest_banker_stake(rules) == 20
    with pytest.raises(R.StakeRefused) as low:
        R.check_stake(rules, {}, BANKER, 10)
    assert low.value.details["min_stake"] == 20
    with pytest.raises(R.StakeRefused) as high:
        R.check_stake(rules, {}, BANKER, 1_010)
    assert high.value.details["max_stake"] == 1_000
    assert R.check_stake(rules, {}, PLAYER, 10) == 10


def test_without_commission_any_banker_amount_within_the_limits_is_taken():
    rules = R.resolve_rules({"commission_percent": 0})
    assert R.check_stake(rules, {}, BANKER, 37) == 37


@pytest.mark.parametrize("spot", ["punter", "Player", "", None, 1])
def test_a_stake_names_one_of_three_spots(spot):
    with pytest.raises(BadArgument) as refused:
        R.check_stake(DEFAULTS, {}, spot, 20)
    assert refused.value.field == "spot"
    assert "'player', 'banker' or 'tie'" in refused.value.message


@pytest.mark.parametrize("amount", [0, -20, 20.0, "20", True, None])
def test_a_stake_is_a_whole_number_above_zero(amount):
    with pytest.raises(BadArgument) as refused:
        R.check_stake(DEFAULTS, {}, PLAYER, amount)
    assert refused.value.field == "amount"
    assert not isinstance(refused.value, R.StakeRefused)


def test_no_more_bets_needs_a_stake():
    assert not R.stakes_closable({})
    assert not R.stakes_closable({"ann": {}})
    assert R.stakes_closable({"ann": {TIE: 20}})


# --- settlement ------------------------------------------------------------------------------------

# A stake of 100 on each spot, under four sets of rules. Cells: the player's gain (net of commission).
SETTLEMENT = """
spot    outcome  result  5%,8:1  0%,8:1  5%,9:1  10%,9:1
player  player   won     100     100     100     100
player  banker   lost    -100    -100    -100    -100
player  tie      push    0       0       0       0
banker  player   lost    -100    -100    -100    -100
banker  banker   won     95      100     95      90
banker  tie      push    0       0       0       0
tie     player   lost    -100    -100    -100    -100
tie     banker   lost    -100    -100    -100    -100
tie     tie      won     800     800     900     900
"""
RULE_SETS = [(5, 8), (0, 8), (5, 9), (10, 9)]


def settlement_cells():
    for line in SETTLEMENT.strip().splitlines()[1:]:
        spot, coup_outcome, result, *nets = line.split()
        for (percent, tie_pays), net in zip(RULE_SETS, nets, strict=True):
            yield spot, coup_outcome, percent, tie_pays, result, int(net)


def test_the_settlement_table_covers_every_outcome_and_spot():
    cells = list(settlement_cells())
    assert {(s, o) for s, o, *_ in cells} == {(s, o) for s in R.SPOTS for o in R.SPOTS}
    assert len(cells) == 36


@pytest.mark.parametrize("spot,coup_outcome,percent,tie_pays,result,net", list(settlement_cells()))
def test_settle_stake(spot, coup_outcome, percent, tie_pays, result, net):
    rules = R.resolve_rules({"commission_percent": percent, "tie_pays": tie_pays})
    settled = R.settle_stake(spot, 100, coup_outcome, rules)
    assert settled.result == result
    assert stake_net(settled) == net
    if result == R.WON:
        assert settled.winnings - settled.commission == net
        assert settled.commission == (100 * percent // 100 if spot == BANKER else 0)


def test_settlement_pays_winners_takes_losers_and_moves_nothing_on_a_push():
    stakes = {"ann": {BANKER: 200, TIE: 20}, "bob": {PLAYER: 50}, "cy": {TIE: 30}}
    assert R.settlement(stakes, BANKER, DEFAULTS) == [
        {"payer": "house", "payee": "ann", "amount": 200, "reason": "stake won", "spot": BANKER},
        {"payer": "ann", "payee": "house", "amount": 10, "reason": "commission", "spot": BANKER},
        {"payer": "ann", "payee": "house", "amount": 20, "reason": "stake lost", "spot": TIE},
        {"payer": "bob", "payee": "house", "amount": 50, "reason": "stake lost", "spot": PLAYER},
        {"payer": "cy", "payee": "house", "amount": 30, "reason": "stake lost", "spot": TIE},
    ]
    assert R.settlement(stakes, TIE, DEFAULTS) == [
        {"payer": "house", "payee": "ann", "amount": 160, "reason": "stake won", "spot": TIE},
        {"payer": "house", "payee": "cy", "amount": 240, "reason": "stake won", "spot": TIE},
    ]
    assert balances(R.settlement(stakes, PLAYER, DEFAULTS)) == {"ann": -220, "bob": 50, "cy": -30, "house": 200}


# --- properties ------------------------------------------------------------------------------------

cards = st.sampled_from(new_deck(1))
rules_strategy = st.fixed_dictionaries(
    {},
    optional={
        "commission_percent": st.integers(0, R.MAX_COMMISSION_PERCENT),
        "tie_pays": st.sampled_from(R.TIE_PAYS_ALLOWED),
    },
)


@given(st.lists(cards, min_size=6, max_size=6))
def test_a_coup_from_any_shoe_prefix_follows_the_rules(prefix):
    coup = C.play_coup(prefix)
    assert 4 <= cards_used(coup) <= 6
    assert coup.dealt == tuple(prefix[: cards_used(coup)])
    assert coup.player[:2] == (prefix[0], prefix[2]) and coup.banker[:2] == (prefix[1], prefix[3])
    assert coup.player_total == baccarat.hand_total(coup.player)
    assert coup.banker_total == baccarat.hand_total(coup.banker)
    first_player, first_banker = baccarat.hand_total(prefix[0:3:2]), baccarat.hand_total(prefix[1:4:2])
    assert coup.natural == (first_player >= 8 or first_banker >= 8)
    if coup.natural:
        assert cards_used(coup) == 4
    else:
        assert (len(coup.player) == 3) == (first_player <= 5)
        third = point_value(coup.player[2]) if len(coup.player) == 3 else None
        assert (len(coup.banker) == 3) == C.banker_draws(first_banker, third)
    assert coup.outcome == C.outcome(coup.player_total, coup.banker_total)


@settings(deadline=None, max_examples=40)
@given(
    seed=st.binary(min_size=32, max_size=32),
    decks=st.sampled_from(R.DECKS_ALLOWED),
    stop_card=st.integers(R.MIN_STOP_CARD, R.MAX_STOP_CARD),
    cut=st.integers(1, 311),
)
def test_a_shoe_ends_one_coup_after_the_stop_card_and_never_runs_dry(seed, decks, stop_card, cut):
    shoe = shoe_order(seed, decks, cut)
    play = play_shoe(shoe, stop_card)
    assert 2 <= len(play.burned) <= LONGEST_BURN
    used = len(play.burned) + sum(cards_used(c) for c in play.coups)
    assert used + play.cards_left == len(shoe)
    assert 0 <= stop_card - 2 * C.LONGEST_COUP <= play.cards_left < stop_card
    starts = [len(play.burned)]
    for coup in play.coups:
        starts.append(starts[-1] + cards_used(coup))
    came_out = [
        C.stop_card_comes_out(a, b, len(shoe), stop_card) for a, b in zip(starts, starts[1:], strict=False)
    ]
    assert came_out[-2] and not any(came_out[:-2]) and not came_out[-1]


spot_stakes = st.dictionaries(st.sampled_from(R.SPOTS), st.integers(1, 100).map(lambda n: n * 100), min_size=1)


@given(
    stakes=st.dictionaries(st.sampled_from(["ann", "bob", "cy", "dee"]), spot_stakes),
    coup_outcome=st.sampled_from(R.SPOTS),
    options=rules_strategy,
)
def test_money_is_conserved_and_the_house_gains_what_the_players_lose(stakes, coup_outcome, options):
    rules = R.resolve_rules(options)
    payments = R.settlement(stakes, coup_outcome, rules)
    gains = balances(payments)
    assert sum(gains.values()) == 0
    assert all(p["amount"] > 0 and isinstance(p["amount"], int) for p in payments)
    nets = {
        name: sum(stake_net(R.settle_stake(spot, amount, coup_outcome, rules)) for spot, amount in spots.items())
        for name, spots in stakes.items()
    }
    assert gains.get("house", 0) == -sum(nets.values())
    for name, net in nets.items():
        assert gains.get(name, 0) == net


@given(
    own=spot_stakes, spot=st.sampled_from(R.SPOTS), amount=st.integers(1, 12_000), options=rules_strategy
)
def test_a_taken_stake_keeps_every_total_within_the_limits_and_the_commission_exact(own, spot, amount, options):
    rules = R.resolve_rules(options)
    try:
        total = R.check_stake(rules, own, spot, amount)
    except BadArgument:
        return
    assert rules["min_stake"] <= total <= rules["max_stake"]
    assert total == own.get(spot, 0) + amount
    if spot == BANKER:
        assert total * rules["commission_percent"] % 100 == 0
    if spot in R.OPPOSITE:
        assert not own.get(R.OPPOSITE[spot])


# --- the odds --------------------------------------------------------------------------------------

@pytest.mark.parametrize("banker_total", range(8))
@pytest.mark.parametrize("player_third", [None, *range(10)])
def test_punto_banco_is_chemin_de_fer_classic_with_every_free_choice_drawn(banker_total, player_third):
    # So the exact probabilities scripts/odds works out for Chemin de fer's classic rule (drawing on
    # every free choice) are punto banco's: 0.458597 / 0.446247 / 0.095156 for eight decks.
    classic = chemin_de_fer.banker_choice(banker_total, player_third, "classic")
    assert C.banker_draws(banker_total, player_third) == (classic != chemin_de_fer.STAND)
    classic = chemin_de_fer.punter_choice(banker_total, "classic")
    assert C.player_draws(banker_total) == (classic != chemin_de_fer.STAND)


def test_200000_coups_from_fresh_eight_deck_shoes_land_on_the_published_odds():
    """Fresh 8-deck shoes, fairly shuffled, cut at random, played to the end: the share of banker,
    player and tie wins is within 4 standard errors of the exact values for one coup."""
    exact = {BANKER: 0.458597, PLAYER: 0.446247, TIE: 0.095156}
    rng = random.Random(9)
    counts: Counter[str] = Counter()
    while sum(counts.values()) < 200_000:
        shoe = shoe_order(rng.randbytes(32), 8, rng.randint(1, 415))
        counts.update(coup.outcome for coup in play_shoe(shoe, DEFAULTS["stop_card"]).coups)
    n = sum(counts.values())
    for result, p in exact.items():
        standard_error = math.sqrt(p * (1 - p) / n)
        assert abs(counts[result] / n - p) < 4 * standard_error, (result, counts[result] / n)
