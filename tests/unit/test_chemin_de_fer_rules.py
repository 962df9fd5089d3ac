"""Every rule of Chemin de fer (docs/rules/chemin-de-fer.md) as a table of cases; every cell of the banker's tableau."""

import pytest

from domain.chemin_de_fer import rules as R
from domain.errors import InvalidRules

D, S, E = R.DRAW, R.STAND, R.EITHER

# A.10, classic. Columns: punter stood (-), then the punter's third card worth 0..9.
TABLEAU = """
B  -  0 1 2 3 4 5 6 7 8 9
0  D  D D D D D D D D D D
1  D  D D D D D D D D D D
2  D  D D D D D D D D D D
3  D  D D D D D D D D S E
4  D  S S D D D D D D S S
5  D  S S S S E D D D S S
6  S  S S S S S S D D S S
7  S  S S S S S S S S S S
"""
SYMBOL = {"D": D, "S": S, "E": E}


def tableau_cells():
    rows = [line.split() for line in TABLEAU.strip().splitlines()[1:]]
    for row in rows:
        banker = int(row[0])
        for column, symbol in zip([None, *range(10)], row[1:]):
            yield banker, column, SYMBOL[symbol]


@pytest.mark.parametrize("banker_total,punter_third,expected", list(tableau_cells()))
def test_classic_banker_tableau_cell(banker_total, punter_third, expected):
    assert R.banker_choice(banker_total, punter_third, "classic") == expected


def test_the_tableau_has_all_eighty_eight_cells():
    assert len(list(tableau_cells())) == 8 * 11


@pytest.mark.parametrize("banker_total", range(8))
@pytest.mark.parametrize("punter_third", [None, *range(10)])
def test_free_rule_leaves_the_banker_a_free_choice_on_zero_to_seven(banker_total, punter_third):
    assert R.banker_choice(banker_total, punter_third, "free") == E


@pytest.mark.parametrize(
    "total,expected", [(0, D), (1, D), (2, D), (3, D), (4, D), (5, E), (6, S), (7, S)]
)
def test_classic_punter_draws_on_0_to_4_chooses_on_5_stands_on_6_7(total, expected):
    assert R.punter_choice(total, "classic") == expected


@pytest.mark.parametrize("total", range(8))
def test_free_rule_punter_chooses_freely_on_0_to_7(total):
    assert R.punter_choice(total, "free") == E


@pytest.mark.parametrize(
    "cards,total",
    [(["As", "2h"], 3), (["Ks", "Qh"], 0), (["9s", "9h"], 8), (["Ts", "7d", "5c"], 2), (["5s", "5h"], 0), (["Ah"], 1)],
)
def test_hand_total_is_the_sum_of_points_mod_10(cards, total):
    assert R.hand_total(cards) == total


@pytest.mark.parametrize(
    "cards,natural",
    [(["8s", "Kh"], True), (["9s", "Kh"], True), (["4s", "4h"], True), (["7s", "Kh"], False), (["3s", "3h", "2c"], False)],
)
def test_a_natural_is_a_two_card_eight_or_nine(cards, natural):
    assert R.is_natural(cards) is natural


@pytest.mark.parametrize("p,b,winner", [(7, 6, R.PUNTER), (6, 7, R.BANKER), (5, 5, R.TIE), (0, 0, R.TIE), (9, 8, R.PUNTER)])
def test_the_higher_total_wins_and_equal_totals_tie(p, b, winner):
    assert R.coup_winner(p, b) == winner


@pytest.mark.parametrize("winnings,percent,fee", [(100, 5, 5), (99, 5, 4), (19, 5, 0), (1000, 0, 0), (7, 50, 3)])
def test_commission_is_rounded_down_to_whole_units(winnings, percent, fee):
    assert R.commission(winnings, percent) == fee


def test_a_winning_punter_hand_is_paid_by_the_banker_to_every_staking_player():
    payments = R.settlement({"boris": 30, "vera": 20}, "anna", R.PUNTER, 5)
    assert payments == [
        {"payer": "anna", "payee": "boris", "amount": 30, "reason": "stake won"},
        {"payer": "anna", "payee": "vera", "amount": 20, "reason": "stake won"},
    ]


def test_a_winning_banker_collects_every_stake_and_pays_commission_on_the_winnings():
    payments = R.settlement({"boris": 30, "vera": 20}, "anna", R.BANKER, 5)
    assert payments[-1] == {"payer": "anna", "payee": "house", "amount": 2, "reason": "commission"}
    assert [p["payer"] for p in payments[:2]] == ["boris", "vera"]
    assert sum(p["amount"] for p in payments[:2]) == 50


def test_a_tie_pays_nothing():
    assert R.settlement({"boris": 30}, "anna", R.TIE, 5) == []


def test_a_winning_banker_keeps_the_bank_at_risk_plus_the_stakes_won_less_commission():
    assert R.bank_after_win(50, {"boris": 30, "vera": 20}, 5) == 50 + 50 - 2


@pytest.mark.parametrize(
    "bank,stakes,largest", [(100, {}, 100), (100, {"b": 30}, 70), (100, {"b": 30, "c": 70}, 0)]
)
def test_the_largest_stake_allowed_is_the_uncovered_rest_of_the_bank(bank, stakes, largest):
    assert R.largest_stake_allowed(bank, stakes) == largest


def test_stakes_short_of_the_bank_leave_only_their_sum_at_risk():
    assert R.bank_at_risk(100, {"b": 30, "c": 20}) == 50
    assert R.bank_at_risk(100, {"b": 100}) == 100


def test_the_largest_stake_plays_and_on_equal_stakes_the_first_to_stake():
    assert R.choose_punter({"boris": 20, "vera": 40, "gleb": 40}) == "vera"
    assert R.choose_punter({"boris": 40, "vera": 40}) == "boris"


def test_players_speak_clockwise_from_the_bankers_left_and_the_right_neighbour_cuts():
    assert R.stake_order(2, 5) == [3, 4, 0, 1]
    assert R.cutter_seat(0, 5) == 4
    assert R.cutter_seat(3, 5) == 2
    assert R.next_banker_seat(4, 5) == 0


def test_lots_group_by_rank_highest_first_and_suits_never_break_ties():
    draws = [("anna", "Ks"), ("boris", "2h"), ("vera", "Kd"), ("gleb", "Ac")]
    assert R.lots_groups(draws) == [["gleb"], ["anna", "vera"], ["boris"]]


@pytest.mark.parametrize("position,in_zone", [(96, False), (97, True), (103, True)])
def test_a_coup_taking_any_of_the_last_stop_card_cards_finishes_the_shoe(position, in_zone):
    assert R.takes_stop_zone(position, 104, 7) is in_zone


def test_defaults_give_as_many_decks_as_players():
    assert R.resolve_rules({}, 4) == {
        "decks": 4, "stop_card": 7, "draw_rule": "classic", "auto_forced": True, "commission_percent": 0
    }


@pytest.mark.parametrize(
    "options,option",
    [
        ({"decks": 1}, "decks"),
        ({"decks": 13}, "decks"),
        ({"decks": "2"}, "decks"),
        ({"stop_card": 5}, "stop_card"),
        ({"draw_rule": "vegas"}, "draw_rule"),
        ({"auto_forced": "yes"}, "auto_forced"),
        ({"commission_percent": 2.5}, "commission_percent"),
        ({"commission_percent": True}, "commission_percent"),
        ({"trumps": "hearts"}, "trumps"),
    ],
)
def test_options_out_of_range_or_unknown_are_refused_naming_the_option(options, option):
    with pytest.raises(InvalidRules) as raised:
        R.resolve_rules(options, 3)
    assert raised.value.option == option
    assert option in raised.value.message
