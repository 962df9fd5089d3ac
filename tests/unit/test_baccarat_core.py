"""The baccarat core shared by Chemin de fer and punto banco, and how Chemin de fer builds on it."""

import pytest

from domain import baccarat
from domain.chemin_de_fer import rules as chemin_de_fer

THIRD_CARDS = [None, *range(10)]


@pytest.mark.parametrize("banker_total", range(8))
@pytest.mark.parametrize("player_third", THIRD_CARDS)
def test_chemin_de_fer_classic_tableau_is_the_core_tableau_but_for_its_free_cells(banker_total, player_third):
    classic = chemin_de_fer.banker_choice(banker_total, player_third, "classic")
    if (banker_total, player_third) in chemin_de_fer.FREE_TABLEAU_CELLS:
        assert classic == chemin_de_fer.EITHER
    else:
        assert classic == baccarat.banker_tableau(banker_total, player_third)


def test_the_free_cells_of_chemin_de_fer_are_draws_in_the_core():
    # Banker 3 against a 9 and banker 5 against a 4: where Chemin de fer lets the banker choose,
    # the fixed tableau draws.
    assert chemin_de_fer.FREE_TABLEAU_CELLS == {(3, 9), (5, 4)}
    assert all(baccarat.banker_tableau(b, p) == baccarat.DRAW for b, p in chemin_de_fer.FREE_TABLEAU_CELLS)


@pytest.mark.parametrize("total", range(8))
def test_chemin_de_fer_classic_punter_rule_is_the_core_rule_but_for_a_free_five(total):
    classic = chemin_de_fer.punter_choice(total, "classic")
    assert classic == (chemin_de_fer.EITHER if total == 5 else baccarat.player_choice(total))


def test_chemin_de_fer_keeps_the_shared_names():
    assert chemin_de_fer.hand_total is baccarat.hand_total
    assert chemin_de_fer.is_natural is baccarat.is_natural
    assert (chemin_de_fer.DRAW, chemin_de_fer.STAND) == (baccarat.DRAW, baccarat.STAND)


@pytest.mark.parametrize(
    "total,expected", [(t, baccarat.DRAW) for t in range(6)] + [(t, baccarat.STAND) for t in range(6, 10)]
)
def test_the_player_draws_on_0_to_5_and_stands_on_6_to_9(total, expected):
    assert baccarat.player_choice(total) == expected


@pytest.mark.parametrize(
    "cards,natural",
    [
        (["8s", "Th"], True),
        (["9d", "Kc"], True),
        (["4s", "4h"], True),
        (["9s", "9h"], True),
        (["7s", "Ah"], True),
        (["7s", "Kh"], False),
        (["5s", "3h", "Kc"], False),
    ],
)
def test_a_natural_is_a_two_card_eight_or_nine(cards, natural):
    assert baccarat.is_natural(cards) is natural
