"""A count in a message takes the word in the right number: never "1 were listed", never "player(s)"."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from domain.card_lottery import rules as lottery
from domain.card_lottery.rounds import MARKS as LOTTERY_ROUNDS
from domain.chain import format_timestamp
from domain.chemin_de_fer.rounds import MARKS as CHEMIN_ROUNDS
from domain.punto_banco.rounds import MARKS as PUNTO_ROUNDS
from domain.words import counted
from service.signing import Signer, key_entry


@pytest.mark.parametrize("count,singular,plural,words", [
    (0, "card", None, "0 cards"), (1, "card", None, "1 card"), (2, "card", None, "2 cards"),
    (1, "player was", "players were", "1 player was"), (3, "player was", "players were", "3 players were"),
])
def test_counted_puts_the_word_in_the_number_the_count_takes(count, singular, plural, words):
    assert counted(count, singular, plural) == words


@pytest.mark.parametrize("amounts,words", [([5], "1 amount was given"), ([1, 2], "2 amounts were given")])
def test_a_lottery_spread_of_the_wrong_length_counts_its_amounts_right(amounts, words):
    assert words in lottery.distribution_problem(amounts, 10)


@pytest.mark.parametrize("marks,summary,one,none_of", [
    (CHEMIN_ROUNDS, {"stakes": 1, "staked": 10, "punter": "anna"}, "1 stake,", "stake(s)"),
    (PUNTO_ROUNDS, {"players": 1, "staked": 10}, "1 player staked", "player(s)"),
    (LOTTERY_ROUNDS, {"pot": 8, "prizes": 1, "won": 8}, "1 prize paying", "prize(s)"),
])
def test_a_round_summary_counts_in_words(marks, summary, one, none_of):
    text = marks.describe(summary)
    assert one in text and none_of not in text
    many = marks.describe({k: 2 if isinstance(v, int) and k in ("stakes", "players", "prizes") else v
                           for k, v in summary.items()})
    assert "(s)" not in many and "2 " in many


@pytest.mark.parametrize("retired,words", [(("k1",), "retired key k1 stays listed"),
                                           (("k1", "k2"), "retired keys k1, k2 stay listed")])
def test_the_start_up_line_agrees_with_how_many_keys_were_retired(retired, words):
    key = Ed25519PrivateKey.generate()
    entry = key_entry(key, format_timestamp(datetime(2026, 1, 1, tzinfo=timezone.utc)))
    assert words in Signer(key, [entry], retired=retired).describe()
