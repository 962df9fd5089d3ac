"""Players' names at a table (domain/inputs.py): compared after NFKC and case folding, and two names that look
alike (Unicode's confusables skeleton, UTS #39) refused with both named."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.errors import InvalidPlayers
from domain.games import reserved_names
from domain.inputs import folded, skeletons, validate_players

# Latin letters and the Cyrillic or Greek letters drawn the same.
LOOKALIKES = {"a": "а", "e": "е", "o": "о", "p": "р", "c": "с", "x": "х", "y": "у", "i": "і"}


def refused(players):
    with pytest.raises(InvalidPlayers) as caught:
        validate_players(players, 2, 12)
    return caught.value


@pytest.mark.parametrize("first, second, says", [
    ("anna", "аnna", "look alike"),            # Cyrillic а (U+0430)
    ("vera", "νera", "look alike"),            # Greek nu
    ("ANNA", "ΑΝΝΑ", "look alike"),            # Greek capitals, case kept
    ("boris", "b0ris", "look alike"),          # a zero for an o
    ("marta1", "martal", "look alike"),        # a one for an l
    ("mary", "rnary", "look alike"),           # r and n side by side for an m
    ("Anna", "anna", "one name"),              # case
    ("ﬁona", "fiona", "one name"),             # the fi ligature (NFKC)
    ("ＡＮＮＡ", "anna", "one name"),            # full-width letters (NFKC)
    ("Straße", "STRASSE", "one name"),         # case folding, not lower-casing
    ("ǆoka", "džoka", "one name"),             # a digraph and its letters
])
def test_two_names_that_are_one_or_look_alike_are_refused_naming_both(first, second, says):
    refusal = refused(["boris" if first != "boris" else "zora", first, second])
    assert says in refusal.message and f"'{first}'" in refusal.message and f"'{second}'" in refusal.message
    assert refusal.details == {"field": "players", "names": [first, second]}


def test_a_lookalike_names_the_character_that_differs():
    assert "character 1: U+0061 LATIN SMALL LETTER A against U+0430 CYRILLIC SMALL LETTER A" in refused(
        ["anna", "аnna"]).message


@pytest.mark.parametrize("players", [
    ["anna", "boris", "vera"],
    ["anna", "anne", "annа-maria"],            # alike in part, not whole
    ["Ivan", "Iwan", "Jan"],
    ["Ольга", "Olga", "Όλγα"],                  # one name in three scripts, none drawn like another
    ["p1", "p2", "p10"],
    ["Zoë", "Zoe"],                            # a diaeresis is seen
])
def test_names_that_are_neither_one_nor_alike_are_kept_as_given(players):
    assert validate_players(players, 2, 12) == players


def test_the_same_name_twice_keeps_its_message():
    assert refused(["anna", "anna"]).message == "Each player is listed once; listed twice: anna."


# Names a table may seat: the reserved ones (domain/games.py) are refused for being reserved, whatever else.
RESERVED = {folded(name) for name in reserved_names()}
NAMES = st.text(st.characters(codec="ascii", categories=("Ll", "Lu", "Nd")), min_size=1, max_size=12).filter(
    lambda name: folded(name) not in RESERVED)


@settings(deadline=None)  # the first call loads Unicode's confusables: slow on a loaded machine, not wrong
@given(NAMES, st.data())
def test_a_name_with_latin_letters_swapped_for_their_lookalikes_is_refused_beside_it(name, data):
    swappable = [i for i, c in enumerate(name) if c.lower() in LOOKALIKES and c.islower()]
    if not swappable:
        name, swappable = name + "a", [len(name)]
    at = data.draw(st.sampled_from(swappable))
    spoof = name[:at] + LOOKALIKES[name[at]] + name[at + 1:]
    refusal = refused([name, spoof])
    assert refusal.details["names"] == [name, spoof]


@given(NAMES)
def test_a_name_beside_itself_in_another_case_is_one_name(name):
    other = name.swapcase()
    refusal = refused([name, other])
    if other == name:  # no letter in it
        assert "listed twice" in refusal.message
    else:
        assert "one name" in refusal.message and refusal.details["names"] == [name, other]


@given(st.lists(NAMES, min_size=2, max_size=6, unique_by=folded))
def test_what_is_refused_does_not_depend_on_the_order_of_the_names(players):
    def verdict(names):
        try:
            validate_players(names, 2, 12)
            return None
        except InvalidPlayers as refusal:
            return frozenset(refusal.details["names"])

    first, backwards = verdict(players), verdict(players[::-1])
    assert (first is None) == (backwards is None)
    if first is not None:
        assert skeletons(min(first))[0] == skeletons(max(first))[0] or skeletons(min(first))[1] == skeletons(max(first))[1]
