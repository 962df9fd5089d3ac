"""Every rule of the Card lottery (docs/rules/card-lottery.md) as a table of cases."""

import pytest

from domain.card_lottery import rules as R
from domain.errors import InvalidRules

# --- options -----------------------------------------------------------------------------------------


def test_defaults_are_contribution_10_carry_beating_fine_1_and_neither_banker_nor_dealer_plays():
    assert R.resolve_rules({}) == {
        "contribution": 10,
        "unclaimed": "carry",
        "stage2": "beating",
        "fine_per_card": 1,
        "banker_plays": False,
        "dealer_plays": False,
    }


@pytest.mark.parametrize(
    "options",
    [
        {"contribution": 1},
        {"contribution": 10**9},
        {"fine_per_card": 0},
        {"fine_per_card": 10**6},
        {"unclaimed": "to_banker"},
        {"stage2": "tricks"},
        {"banker_plays": True, "dealer_plays": True},
    ],
)
def test_options_within_range_are_kept_and_the_rest_default(options):
    rules = R.resolve_rules(options)
    assert {k: rules[k] for k in options} == options
    assert set(rules) == set(R.resolve_rules({}))


@pytest.mark.parametrize(
    "options,option",
    [
        ({"contribution": 0}, "contribution"),
        ({"contribution": -5}, "contribution"),
        ({"contribution": 10**9 + 1}, "contribution"),
        ({"contribution": "10"}, "contribution"),
        ({"contribution": 2.5}, "contribution"),
        ({"contribution": True}, "contribution"),
        ({"fine_per_card": -1}, "fine_per_card"),
        ({"fine_per_card": 10**6 + 1}, "fine_per_card"),
        ({"fine_per_card": None}, "fine_per_card"),
        ({"unclaimed": "keep"}, "unclaimed"),
        ({"unclaimed": None}, "unclaimed"),
        ({"stage2": "poker"}, "stage2"),
        ({"stage2": "Tricks"}, "stage2"),
        ({"banker_plays": "yes"}, "banker_plays"),
        ({"banker_plays": 1}, "banker_plays"),
        ({"dealer_plays": 0}, "dealer_plays"),
        ({"decks": 2}, "decks"),
        ({"trumps": "hearts"}, "trumps"),
    ],
)
def test_options_out_of_range_or_unknown_are_refused_naming_the_option(options, option):
    with pytest.raises(InvalidRules) as raised:
        R.resolve_rules(options)
    assert raised.value.option == option
    assert option in raised.value.message


# --- participants ------------------------------------------------------------------------------------

SEATS = ["anna", "ivan", "boris", "olga", "vera"]  # ivan banks, olga deals


@pytest.mark.parametrize(
    "banker_plays,dealer_plays,holders",
    [
        (False, False, ["anna", "boris", "vera"]),
        (True, False, ["anna", "ivan", "boris", "vera"]),
        (False, True, ["anna", "boris", "olga", "vera"]),
        (True, True, ["anna", "ivan", "boris", "olga", "vera"]),
    ],
)
def test_holders_are_everyone_but_banker_and_dealer_unless_dealt_in_and_keep_seat_order(
    banker_plays, dealer_plays, holders
):
    rules = {"banker_plays": banker_plays, "dealer_plays": dealer_plays}
    assert R.holders_of(SEATS, "ivan", "olga", rules) == holders


@pytest.mark.parametrize(
    "holders,holder,neighbour",
    [
        (["a", "b", "c"], "a", "b"),
        (["a", "b", "c"], "b", "c"),
        (["a", "b", "c"], "c", "a"),
        (["a", "b"], "b", "a"),
        (["a"], "a", "a"),
    ],
)
def test_the_left_neighbour_is_the_next_holder_clockwise_wrapping_round_the_table(holders, holder, neighbour):
    assert R.left_of(holders, holder) == neighbour


# --- B.1 contributions and the pot -------------------------------------------------------------------


@pytest.mark.parametrize(
    "contribution,holders,carried,pot",
    [(10, 3, 0, 30), (10, 1, 0, 10), (1, 3, 2, 5), (5, 17, 0, 85), (2, 2, 13, 17), (1, 1, 0, 1)],
)
def test_the_pot_is_every_holders_contribution_plus_what_was_carried(contribution, holders, carried, pot):
    assert R.round_pot(contribution, holders, carried) == pot


@pytest.mark.parametrize("pot,spreadable", [(0, False), (1, False), (3, False), (4, True), (5, True), (1000, True)])
def test_a_pot_below_four_cannot_be_spread_over_four_cards(pot, spreadable):
    assert R.pot_can_be_spread(pot) is spreadable


# --- B.3 distribution --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "amounts,pot,problem",
    [
        ([10, 10, 10], 30, "exactly 4 cards; 3 amounts"),
        ([5, 5, 5, 5, 5], 25, "exactly 4 cards; 5 amounts"),
        ([], 4, "exactly 4 cards; 0 amounts"),
        ([0, 10, 10, 20], 40, "at least 1 unit"),
        ([-1, 11, 10, 20], 40, "at least 1 unit"),
        ([10, 10, 10, 10], 41, "sum to the pot, 41; they sum to 40"),
        ([10, 10, 10, 11], 40, "sum to the pot, 40; they sum to 41"),
    ],
)
def test_a_spread_needs_four_amounts_each_at_least_1_summing_to_the_pot(amounts, pot, problem):
    assert problem in R.distribution_problem(amounts, pot)


@pytest.mark.parametrize("amounts,pot", [([1, 1, 1, 1], 4), ([37, 1, 1, 1], 40), ([10, 20, 30, 40], 100)])
def test_a_valid_spread_has_no_problem(amounts, pot):
    assert R.distribution_problem(amounts, pot) is None


# --- B.5 prizes --------------------------------------------------------------------------------------

LOTTERY = ["As", "Kh", "2d", "7c"]


@pytest.mark.parametrize(
    "hands,won",
    [
        ({"h1": ["Ah", "Ad", "Ac"], "h2": ["Ks", "Kd", "Kc"]}, []),  # right rank, wrong suit
        ({"h1": ["Qs", "2s", "3s"], "h2": ["Qh", "3d", "6c"]}, []),  # right suit, wrong rank
        ({"h1": ["As", "3s", "4s"], "h2": ["5h", "6h", "8h"]}, [(0, "h1")]),
        ({"h1": ["7c", "3s", "4s"], "h2": ["5h", "Kh", "2d"]}, [(1, "h2"), (2, "h2"), (3, "h1")]),
        ({"h1": ["As", "Kh", "2d"], "h2": ["7c"]}, [(0, "h1"), (1, "h1"), (2, "h1"), (3, "h2")]),
        ({"h1": [], "h2": []}, []),
    ],
)
def test_a_prize_goes_to_the_holder_of_the_card_equal_in_rank_and_suit_in_lottery_card_order(hands, won):
    assert R.prizes(LOTTERY, hands) == won


# --- B.6 end of stage 1 ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "banker_left,dealer_left,holders,over",
    [
        (52, 52, 17, False),
        (4, 3, 1, False),
        (3, 52, 1, True),  # fewer than four lottery cards
        (0, 52, 1, True),
        (48, 50, 17, True),  # 51 cards needed for seventeen holders
        (48, 51, 17, False),
        (8, 5, 2, True),
        (8, 6, 2, False),
    ],
)
def test_stage_1_is_over_when_the_banker_has_fewer_than_4_cards_or_the_dealer_cannot_give_three_each(
    banker_left, dealer_left, holders, over
):
    assert R.stage1_over(banker_left, dealer_left, holders) is over


# Worked by hand from two 52-card decks: the banker's deck gives 52 // 4 = 13 rounds, the dealer's
# deck 52 // (3 x holders) rounds; stage 1 lasts the smaller number.
ROUNDS_OF_STAGE_1 = {
    1: 13,  # dealer: 17 rounds possible, the banker's deck runs out first
    2: 8,  # 6 cards a round: 48 dealt, 4 left
    3: 5,  # 9 a round: 45 dealt, 7 left
    4: 4,  # 12 a round: 48 dealt, 4 left
    5: 3,  # 15 a round: 45 dealt, 7 left
    6: 2,  # 18 a round: 36 dealt, 16 left
    7: 2,  # 21 a round: 42 dealt, 10 left
    8: 2,  # 24 a round: 48 dealt, 4 left
    9: 1,  # 27 a round: 25 left
    10: 1,
    11: 1,
    12: 1,
    13: 1,
    14: 1,
    15: 1,
    16: 1,  # 48 dealt, 4 left
    17: 1,  # 51 dealt, 1 left
}


@pytest.mark.parametrize("holders,rounds", sorted(ROUNDS_OF_STAGE_1.items()))
def test_stage_1_lasts_as_many_full_rounds_as_both_decks_allow(holders, rounds):
    banker_left = dealer_left = 52
    assert not R.stage1_over(banker_left, dealer_left, holders), "two full decks always give a first round"
    played = 0
    while True:  # a round is played, then the table asks whether stage 1 is over
        banker_left -= 4
        dealer_left -= 3 * holders
        assert banker_left >= 0 and dealer_left >= 0, "a round was played without enough cards"
        played += 1
        if R.stage1_over(banker_left, dealer_left, holders):
            break
    assert played == rounds


# --- stage 2: the leader -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "last_winner,leader", [(None, "h1"), ("h1", "h1"), ("h3", "h3"), ("h2", "h2")]
)
def test_the_holder_who_took_the_last_prize_leads_and_otherwise_the_first_holder(last_winner, leader):
    assert R.stage2_leader(last_winner, ["h1", "h2", "h3"]) == leader


# --- stage 2 `beating` ---------------------------------------------------------------------------------

HAND = ["5s", "5h", "9c", "Kd"]


@pytest.mark.parametrize(
    "cards,problem",
    [
        (["9c"], None),
        (["5s", "5h"], None),
        (["5h", "5s"], None),
        (["5s", "9c"], "equal rank"),
        (["5s", "5s"], "equal rank"),  # the same card twice is not two cards
        (["Ah"], "Ah is not in your hand"),
        (["5s", "5d"], "5d is not in your hand"),
        (["As", "Ah"], "As, Ah are not in your hand"),
        (["5s", "5h", "9c"], "one card, or two"),
        ([], "one card, or two"),
    ],
)
def test_a_lead_is_one_card_or_two_of_equal_rank_from_the_leaders_hand(cards, problem):
    found = R.lead_problem(cards, HAND)
    if problem is None:
        assert found is None
    else:
        assert problem in found


@pytest.mark.parametrize(
    "led,card,beaten",
    [
        ("5s", "7s", True),  # same suit, higher
        ("5s", "As", True),
        ("Ks", "As", True),
        ("2h", "3h", True),
        ("7s", "5s", False),  # same suit, lower
        ("5s", "5s", False),  # not higher
        ("As", "Ks", False),
        ("5s", "Ah", False),  # another suit: no trumps
        ("5s", "6d", False),
        ("2c", "Ad", False),
    ],
)
def test_a_card_is_beaten_only_by_a_higher_card_of_its_own_suit(led, card, beaten):
    assert R.beats(led, card) is beaten


@pytest.mark.parametrize(
    "led,hand,possible",
    [
        (["5s"], ["7s"], True),
        (["5s"], ["4s", "Ah", "Kd"], False),
        (["5s"], [], False),
        (["5s", "5h"], ["7s", "8h"], True),
        (["5s", "5h"], ["7s", "4h"], False),  # one of the two cannot be beaten
        (["5s", "5h"], ["7s", "8s"], False),  # both higher, but both spades
        (["5s", "5h"], ["Ah", "Qh", "9c"], False),
    ],
)
def test_every_led_card_needs_its_own_higher_card_of_its_suit(led, hand, possible):
    assert R.can_beat(led, hand) is possible


@pytest.mark.parametrize(
    "led,cards,hand,problem",
    [
        (["5s"], ["7s"], ["7s", "2c"], None),
        (["5s", "5h"], ["7s", "8h"], ["7s", "8h"], None),
        (["5h", "5s"], ["8h", "7s"], ["7s", "8h"], None),
        (["5s", "5h"], ["8h", "7s"], ["7s", "8h"], "8h does not beat 5s"),  # not in the led order
        (["5s"], ["4s"], ["4s", "7s"], "4s does not beat 5s"),  # same suit, lower
        (["5s"], ["Ah"], ["Ah", "7s"], "Ah does not beat 5s"),  # other suit: no trumps
        (["5s", "5h"], ["7s"], ["7s", "8h"], "Beat each of the 2 led cards"),
        (["5s"], ["7s", "8s"], ["7s", "8s"], "Beat each of the 1 led card "),
        (["5s"], ["9s"], ["7s"], "9s is not in your hand"),
    ],
)
def test_a_beat_answers_each_led_card_in_the_led_order_with_a_higher_card_of_its_suit(led, cards, hand, problem):
    found = R.beat_problem(led, cards, hand)
    if problem is None:
        assert found is None
    else:
        assert problem in found


@pytest.mark.parametrize(
    "hands,piles,out,fine,fines",
    [
        # per card in hand and per card on the penalty pile
        ({"a": ["2s", "3s"], "b": [], "c": ["4s"]}, {"a": ["5h"], "b": [], "c": []}, "b", 1, {"a": 3, "c": 1}),
        ({"a": ["2s", "3s"], "b": [], "c": ["4s"]}, {"a": ["5h"], "b": [], "c": []}, "b", 5, {"a": 15, "c": 5}),
        # the holder left without cards pays nothing, even for a penalty pile
        ({"a": ["2s"], "b": []}, {"a": [], "b": ["7h", "8h"]}, "b", 2, {"a": 2}),
        # a holder with an empty hand but a penalty pile who is not the one out pays for the pile
        ({"a": [], "b": [], "c": ["2s"]}, {"a": ["7h", "8h"], "b": [], "c": []}, "b", 1, {"a": 2, "c": 1}),
        # a fine of 0 per card: nobody pays
        ({"a": ["2s", "3s"], "b": []}, {"a": ["5h"], "b": []}, "b", 0, {}),
        # no one out (stage 2 could not be played): everyone with cards pays
        ({"a": ["2s", "3s", "4s"]}, {"a": []}, "", 1, {"a": 3}),
    ],
)
def test_beating_ends_with_every_other_holder_fined_per_card_in_hand_and_on_the_penalty_pile(
    hands, piles, out, fine, fines
):
    assert R.beating_fines(hands, piles, out, fine) == fines


# --- stage 2 `tricks` ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "card,led_suit,hand,allowed",
    [
        ("2h", None, ["2h", "As"], True),  # the leader plays any card
        ("As", None, ["2h", "As"], True),
        ("3s", "s", ["3s", "Ah"], True),  # following suit
        ("Ah", "s", ["3s", "Ah"], False),  # holding the led suit: must follow
        ("Ah", "s", ["Ah", "Kd"], True),  # void in the led suit: any card
        ("Kd", "s", ["Ah", "Kd"], True),
        ("9c", "c", ["2h"], False),  # not in hand
        ("9c", None, ["2h"], False),
    ],
)
def test_a_player_follows_the_led_suit_if_they_can_and_otherwise_may_play_any_card(card, led_suit, hand, allowed):
    assert R.may_play(card, led_suit, hand) is allowed


@pytest.mark.parametrize(
    "plays,taker",
    [
        ([("a", "5s"), ("b", "Ah"), ("c", "9s"), ("d", "2s")], "c"),  # a higher off-suit card never takes
        ([("a", "5s"), ("b", "Ah"), ("c", "Kd")], "a"),  # nobody followed: the leader takes
        ([("a", "As"), ("b", "Ks"), ("c", "Qs")], "a"),
        ([("a", "2c"), ("b", "3c"), ("c", "Ac"), ("d", "Kc")], "c"),
        ([("a", "7h")], "a"),
    ],
)
def test_the_highest_card_of_the_led_suit_takes_the_trick(plays, taker):
    assert R.trick_taker(plays) == taker


@pytest.mark.parametrize(
    "hands,penalties",
    [
        ({"a": ["Ah"], "b": ["2c"], "c": ["Kd"], "d": ["As"]}, {"a": 4, "b": 3, "c": 2, "d": 1}),
        ({"a": ["Ah", "2c", "3d", "4s"]}, {"a": 10}),
        ({"a": ["2h", "3h", "4h"], "b": []}, {"a": 12}),
        ({"a": [], "b": []}, {}),
    ],
)
def test_tricks_end_with_every_holder_paying_hearts_4_clubs_3_diamonds_2_spades_1_and_empty_hands_nothing(
    hands, penalties
):
    assert R.suit_penalties(hands) == penalties
