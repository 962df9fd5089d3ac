"""Baccarat's roads (domain/roads.py, docs/rules/roads.md) drawn from hand-made shoes whose roads were worked out
by hand from the rules, and their invariants over any shoe."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from domain.chemin_de_fer.roads import decided as chemin_de_fer_coup
from domain.punto_banco.roads import decided as punto_banco_coup
from domain.roads import (
    BANKER,
    BLUE,
    DERIVED,
    PLAYER,
    RED,
    ROWS,
    TIE,
    Cell,
    Coup,
    bead_plate,
    big_road,
    derived_road,
    is_pair,
    roads,
    streaks,
)

LETTER = {"B": BANKER, "P": PLAYER, "T": TIE}
SHOWN = {BANKER: "B", PLAYER: "P", TIE: "T", RED: "R", BLUE: "B"}


def shoe(outcomes: str) -> list[Coup]:
    return [Coup(LETTER[letter]) for letter in outcomes.split()]


def grid(cells: list[Cell]) -> list[str]:
    """The cells as the scoreboard draws them: one line a row, a cell as its letter and its ties, '.' empty."""
    width = max(c.column for c in cells)
    height = max(c.row for c in cells)
    rows = [["." for _ in range(width)] for _ in range(height)]
    for c in cells:
        assert rows[c.row - 1][c.column - 1] == ".", f"two cells at column {c.column}, row {c.row}"
        rows[c.row - 1][c.column - 1] = SHOWN[c.mark] + (str(c.ties) if c.ties else "")
    return [" ".join(row) for row in rows]


def drawn(text: str) -> list[str]:
    return [line.strip() for line in text.strip().splitlines()]


def colours(cells: list[Cell]) -> str:
    return " ".join(SHOWN[c.mark] for c in sorted(cells, key=lambda c: c.coup))


# --- shoe A: ties at the start, in the middle, two in a row ------------------------------------------------

SHOE_A = shoe("T B B P T T B P P P B T B")


def test_shoe_a_bead_plate_holds_every_coup_ties_too_down_each_column():
    assert grid(bead_plate(SHOE_A)) == drawn("""
        T B B
        B P .
        B P .
        P P .
        T B .
        T T .
    """)


def test_shoe_a_big_road_marks_each_tie_on_the_win_before_it_and_a_leading_tie_on_the_first_win():
    assert grid(big_road(SHOE_A)) == drawn("""
        B1 P2 B P B1
        B . . P B
        . . . P .
    """)


def test_shoe_a_derived_roads():
    assert colours(derived_road(SHOE_A, 1)) == "B R B R B R"
    assert grid(derived_road(SHOE_A, 1)) == ["B R B R B R"]
    assert grid(derived_road(SHOE_A, 2)) == drawn("""
        B R B
        B . B
    """)
    assert grid(derived_road(SHOE_A, 3)) == drawn("""
        R B
        . B
        . B
    """)


# --- shoe B: a banker streak of eight wraps into the dragon tail, and the next one runs into it --------------

SHOE_B = shoe("P " + "B " * 8 + "P " + "B " * 7 + "T P")


def test_shoe_b_big_road_turns_right_at_the_bottom_and_above_a_taken_cell():
    assert [len(s) for s in streaks(SHOE_B)] == [1, 8, 1, 7, 1]
    assert grid(big_road(SHOE_B)) == drawn("""
        P B P B P .
        . B . B . .
        . B . B . .
        . B . B . .
        . B . B B B1
        . B B B . .
    """)


def test_shoe_b_derived_roads_one_with_its_own_dragon_tail():
    assert colours(derived_road(SHOE_B, 1)) == "B R R R R R R B B B R R R R R B"
    assert grid(derived_road(SHOE_B, 1)) == drawn("""
        B R B R B
        . R B R .
        . R B R .
        . R . R .
        . R . R .
        . R . . .
    """)
    assert grid(derived_road(SHOE_B, 2)) == drawn("""
        R B
        R .
        R .
        R .
        R .
        R R
    """)
    assert grid(derived_road(SHOE_B, 3)) == drawn("""
        B R B
        . R .
        . R .
        . R .
        . R .
    """)


# --- shoe C: a shoe that opens on two ties, chops, then streaks ---------------------------------------------

SHOE_C = shoe("T T P B P B P P B B B P T T B")


def test_shoe_c_bead_plate_and_big_road():
    assert grid(bead_plate(SHOE_C)) == drawn("""
        T P T
        T P T
        P B B
        B B .
        P B .
        B P .
    """)
    assert grid(big_road(SHOE_C)) == drawn("""
        P2 B P B P B P2 B
        . . . . P B . .
        . . . . . B . .
    """)


def test_shoe_c_derived_roads():
    assert grid(derived_road(SHOE_C, 1)) == drawn("""
        R B R B
        R B . B
        R . . B
    """)
    assert grid(derived_road(SHOE_C, 2)) == drawn("""
        R B R B
        R B . B
        . B . .
    """)
    assert grid(derived_road(SHOE_C, 3)) == drawn("""
        R B R B R
        . B . . .
        . B . . .
    """)


def test_a_derived_road_starts_at_column_two_row_two_or_else_at_column_three_row_one():
    first = {back: derived_road(shoe(outcomes), back)[0].coup
             for back, outcomes in ((1, "B P P"), (2, "B P B B"), (3, "B P B P P"))}
    assert first == {1: 3, 2: 4, 3: 5}  # column back+1, row 2
    later = {back: derived_road(shoe(outcomes), back)[0].coup
             for back, outcomes in ((1, "B P B"), (2, "B P B P"), (3, "B P B P B"))}
    assert later == {1: 3, 2: 4, 3: 5}  # column back+2, row 1: no column back+1 reached row 2
    assert all(derived_road(shoe("B P B"), back) == [] for back in (2, 3))


def test_a_shoe_of_ties_only_draws_the_bead_plate_alone():
    ties = shoe("T T T")
    assert [c.mark for c in bead_plate(ties)] == [TIE] * 3
    assert big_road(ties) == [] and all(derived_road(ties, back) == [] for _, back in DERIVED)


# --- each game's hook --------------------------------------------------------------------------------------

def test_punto_banco_reads_a_coup_from_its_decision_with_naturals_and_pairs():
    event = {"type": "CoupDecided", "data": {"coup": 3, "player_hand": ["7s", "7h"], "banker_hand": ["Ks", "8d"],
                                             "player_total": 4, "banker_total": 8, "natural": True,
                                             "outcome": "banker"}}
    assert punto_banco_coup(event) == Coup(BANKER, natural=True, banker_pair=False, player_pair=True)
    assert punto_banco_coup({"type": "StakesClosed", "data": {}}) is None


def test_chemin_de_fer_reads_a_coup_from_the_hands_shown_the_punter_as_the_player():
    shown = {"type": "HandsShown", "data": {"punter": ["2s", "3h", "Ad"], "banker": ["Qs", "Qd", "6c"],
                                            "punter_total": 6, "banker_total": 6, "natural": False}}
    assert chemin_de_fer_coup(shown) == Coup(TIE, natural=False, banker_pair=True, player_pair=False)
    shown["data"]["punter_total"] = 7
    assert chemin_de_fer_coup(shown).outcome == PLAYER
    assert chemin_de_fer_coup({"type": "CoupSettled", "data": {"winner": "banker"}}) is None


def test_a_pair_is_two_first_cards_of_one_rank():
    assert is_pair(["Ts", "Th"]) and is_pair(["Ks", "Kd", "2c"])
    assert not is_pair(["Ts", "Js"]) and not is_pair(["Ts"])


# --- invariants over any shoe ------------------------------------------------------------------------------

shoes = st.lists(st.sampled_from([BANKER, PLAYER, TIE]), max_size=90).map(lambda o: [Coup(x) for x in o])


@given(shoes)
def test_every_road_keeps_its_invariants(coups):
    drawn_roads = roads(coups)
    wins = [i + 1 for i, c in enumerate(coups) if c.outcome != TIE]
    ties = len(coups) - len(wins)
    big = drawn_roads["big_road"]
    assert len(drawn_roads["bead_plate"]) == len(coups)
    assert [c.coup for c in big] == wins  # one cell a win, in order, each its coup's outcome
    assert all(c.mark == coups[c.coup - 1].outcome for c in big)
    assert sum(c.ties for c in big) == (ties if wins else 0)
    for name, cells in drawn_roads.items():
        places = [(c.column, c.row) for c in cells]
        assert len(set(places)) == len(places), name  # never two cells in one place
        assert all(1 <= c.row <= ROWS and c.column >= 1 for c in cells), name
    lengths = [len(s) for s in streaks(coups)]
    for name, back in DERIVED:
        # every win judged once its column is past back+1, or at row 2 or below of column back+1
        judged = sum(n for n in lengths[back + 1:]) + max(0, (lengths[back] - 1) if len(lengths) > back else 0)
        assert len(drawn_roads[name]) == judged, name
        assert {c.mark for c in drawn_roads[name]} <= {RED, BLUE}


@given(shoes)
def test_a_streak_goes_down_then_only_right(coups):
    big = big_road(coups)
    for streak in streaks(coups):
        cells = [c for c in big if c.coup in {n for n, _ in streak}]
        steps = [(b.column - a.column, b.row - a.row) for a, b in zip(cells, cells[1:])]
        assert all(step in ((0, 1), (1, 0)) for step in steps)
        turned = [i for i, step in enumerate(steps) if step == (1, 0)]
        assert not turned or all(step == (1, 0) for step in steps[turned[0]:])
