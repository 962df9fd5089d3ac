"""Baccarat's roads: the scoreboards drawn from a shoe's decided coups (docs/rules/roads.md).

Pure functions over a shoe's coups in the order they were decided. A game that keeps roads says, through its
``Roads`` (domain/game.py), which event decides a coup and what it decided; nothing here knows a game. Every
grid has ``ROWS`` rows and as many columns as it needs; columns and rows are counted from 1, row 1 on top.

- The bead plate: every coup, ties too, one cell each, down each column then on to the next.
- The big road: the banker's and the player's wins, a column a streak; a tie is marked on the cell of the
  coup before it (ties before the shoe's first win, on that first cell). A streak longer than the column,
  or one that meets a cell already taken, turns right along its row: the "dragon tail".
- The derived roads (big eye boy, small road, cockroach pig): each win after the first few is judged by
  comparing the big road's columns with the column one, two or three before it; red where the road repeats
  itself, blue where it does not. Drawn with the big road's placement, a column a run of one colour.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

BANKER, PLAYER, TIE = "banker", "player", "tie"
OUTCOMES = (BANKER, PLAYER, TIE)
RED, BLUE = "red", "blue"
ROWS = 6
# Each derived road and how many columns back it compares (big eye boy 1, small road 2, cockroach pig 3).
DERIVED = (("big_eye_boy", 1), ("small_road", 2), ("cockroach_pig", 3))


@dataclass(frozen=True)
class Coup:
    """A decided coup as the roads need it: its outcome, whether a natural decided it, and whether each hand's
    first two cards were a pair (equal ranks); None where the deciding event does not say."""

    outcome: str
    natural: bool | None = None
    banker_pair: bool | None = None
    player_pair: bool | None = None

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"a coup's outcome is one of {', '.join(OUTCOMES)}; got {self.outcome!r}")


@dataclass(frozen=True)
class Cell:
    """One cell of a grid: where it is drawn and what it shows (an outcome or a colour); ``coup``: the number,
    from 1 in the shoe, of the coup it stands for (a derived road's: the coup whose win it judges); ``ties``:
    on the big road, the ties marked on it."""

    column: int
    row: int
    mark: str
    coup: int
    ties: int = 0


def is_pair(cards: Sequence[str]) -> bool:
    """"A pair": the hand's first two cards have the same rank (a seven and a seven, a king and a king)."""
    return len(cards) >= 2 and cards[0][0] == cards[1][0]


def bead_plate(coups: Sequence[Coup]) -> list[Cell]:
    """"The bead plate": every coup in order, down column 1 from row 1, then down column 2, and so on."""
    return [Cell(i // ROWS + 1, i % ROWS + 1, c.outcome, i + 1) for i, c in enumerate(coups)]


def streaks(coups: Sequence[Coup]) -> list[list[tuple[int, int]]]:
    """The big road's columns as logical streaks, before any is drawn: each a list of (coup number, ties after
    it) for consecutive wins of one side. Ties before the first win count on the first win."""
    columns: list[list[tuple[int, int]]] = []
    last, leading = None, 0
    for number, coup in enumerate(coups, start=1):
        if coup.outcome == TIE:
            if columns:
                coup_no, ties = columns[-1][-1]
                columns[-1][-1] = (coup_no, ties + 1)
            else:
                leading += 1
            continue
        if coup.outcome != last:
            columns.append([])
            last = coup.outcome
        columns[-1].append((number, leading))
        leading = 0
    return columns


def placed(lengths: Iterable[int]) -> list[list[tuple[int, int]]]:
    """"The dragon tail": where each streak of the given lengths is drawn, as (column, row) per entry.

    A streak starts on row 1 of the column right of where the streak before it started (further right while
    that cell is taken by a tail) and goes down; at the bottom row, or above a cell already taken, it turns
    right and stays on that row to its end."""
    taken: set[tuple[int, int]] = set()
    drawn: list[list[tuple[int, int]]] = []
    start = 0
    for length in lengths:
        start += 1
        while (start, 1) in taken:
            start += 1
        column, row, turned = start, 1, False
        cells = []
        for i in range(length):
            if i:
                if not turned and row < ROWS and (column, row + 1) not in taken:
                    row += 1
                else:
                    column, turned = column + 1, True
            taken.add((column, row))
            cells.append((column, row))
        drawn.append(cells)
    return drawn


def big_road(coups: Sequence[Coup]) -> list[Cell]:
    """"The big road": the wins, one streak a column, drawn with the dragon tail; ties marked on the cell of
    the win before them."""
    columns = streaks(coups)
    drawn = placed(len(c) for c in columns)
    return [Cell(column, row, coups[number - 1].outcome, number, ties)
            for entries, cells in zip(columns, drawn) for (number, ties), (column, row) in zip(entries, cells)]


def judged(lengths: Sequence[int], column: int, row: int, back: int) -> str | None:
    """"The derived roads' rule": the colour of the big road's entry at (``column``, ``row``) of its logical
    streaks (``lengths``, counted from 1) for the road comparing ``back`` columns back, or None before it
    starts (it starts at column back+1 row 2, else at column back+2 row 1).

    - A new column (row 1): the two columns before it are compared, the one just before and the one
      ``back`` further: red if they are as long, blue if not.
    - Further down a column: the column ``back`` before this one is looked at: red if it has a cell at this
      row, or lacks the cell above it too (it stopped two short or more: the road goes on straight); blue if
      it ends exactly one row above this one."""
    if column < back + 1 or (column == back + 1 and row < 2):
        return None
    if row == 1:
        return RED if lengths[column - 2] == lengths[column - 2 - back] else BLUE
    compared = lengths[column - 1 - back]
    return BLUE if compared == row - 1 else RED


def derived_marks(coups: Sequence[Coup], back: int) -> list[tuple[str, int]]:
    """The derived road's colours in order, each with the number of the coup whose win it judges."""
    columns = streaks(coups)
    marks: list[tuple[str, int]] = []
    lengths: list[int] = []
    for column, entries in enumerate(columns, start=1):
        lengths.append(0)
        for row, (number, _) in enumerate(entries, start=1):
            lengths[-1] = row  # the road as it stood when this win was drawn
            colour = judged(lengths, column, row, back)
            if colour is not None:
                marks.append((colour, number))
    return marks


def derived_road(coups: Sequence[Coup], back: int) -> list[Cell]:
    """A derived road drawn: a column a run of one colour, with the big road's dragon tail."""
    marks = derived_marks(coups, back)
    runs: list[list[tuple[str, int]]] = []
    for mark in marks:
        if runs and runs[-1][0][0] == mark[0]:
            runs[-1].append(mark)
        else:
            runs.append([mark])
    drawn = placed(len(r) for r in runs)
    return [Cell(column, row, colour, number)
            for run, cells in zip(runs, drawn) for (colour, number), (column, row) in zip(run, cells)]


def roads(coups: Sequence[Coup]) -> dict[str, list[Cell]]:
    """Every road of a shoe: the bead plate, the big road and the three derived roads."""
    return {"bead_plate": bead_plate(coups), "big_road": big_road(coups),
            **{name: derived_road(coups, back) for name, back in DERIVED}}
