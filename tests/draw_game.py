"""Each cell's option gains in Chemin de fer's draw game, recomputed for the tests without the domain's code.

Given both sides' play (as ``scripts/odds --solve --json`` prints it, the forced cells filled in from the
rule), this enumerates every deal of a real shoe of ``decks`` decks card value by card value and
accumulates, in integers, what each option of each cell yields, then divides by how often the cell is
reached. A different route from domain/chemin_de_fer/solution.py and decisions.py to the same numbers.
"""

from __future__ import annotations

import json
import subprocess
from fractions import Fraction
from functools import lru_cache
from pathlib import Path

ODDS = Path(__file__).resolve().parents[1] / "scripts" / "odds"
PUNTER_FREE_CLASSIC, BANKER_FREE_CLASSIC = {5}, {(3, 9), (5, 4)}


def sign(punter: int, banker: int) -> int:
    return (banker > punter) - (punter > banker)


def classic_banker_draws(b: int, third: int | None) -> bool:
    """The classic tableau, written out here from the rule book's table."""
    if third is None:
        return b <= 5
    row = {0: range(10), 1: range(10), 2: range(10), 3: [0, 1, 2, 3, 4, 5, 6, 7, 9], 4: range(2, 8),
           5: range(4, 8), 6: (6, 7), 7: ()}
    return third in row[b]


@lru_cache(maxsize=8)
def played(decks: int, rule: str) -> tuple[dict[int, Fraction], dict[tuple[int, str], Fraction]]:
    """Both sides' probabilities of drawing in every cell: the script's solution, the rest by the rule."""
    out = subprocess.run([str(ODDS), "--solve", "--decks", str(decks), "--rule", rule, "--json"],
                         capture_output=True, text=True, check=True)
    solved = json.loads(out.stdout)
    punter = {t: Fraction(int(t <= 4)) for t in range(8)}
    punter.update({int(t): Fraction(p) for t, p in solved["punter"].items()})
    banker = {}
    for b in range(8):
        for x in ["stood", *map(str, range(10))]:
            banker[b, x] = Fraction(int(classic_banker_draws(b, None if x == "stood" else int(x))))
    banker.update({(int(b), x): Fraction(p) for b, row in solved["banker"].items() for x, p in row.items()})
    return punter, banker


@lru_cache(maxsize=4)
def tallies(decks: int) -> tuple[dict, dict]:
    """``gains[(t, b, x)] = (banker's gain standing, drawing)`` and ``reached[(t, b, x)]``, x "stood" or the
    punter's third card as a string, all over one denominator (every deal carried to six cards)."""
    counts = [16 * decks] + [4 * decks] * 9
    n = sum(counts)
    gains: dict = {}
    reached: dict = {}

    def add(key, stand, draw, weight):
        s, d = gains.get(key, (0, 0))
        gains[key] = (s + stand, d + draw)
        reached[key] = reached.get(key, 0) + weight

    def take(v):
        w = counts[v]
        counts[v] -= 1
        return w

    for p1 in range(10):
        w1 = take(p1)
        for b1 in range(10):
            w2 = w1 * take(b1)
            for p2 in range(10):
                w3 = w2 * take(p2)
                for b2 in range(10):
                    w4 = w3 * take(b2)
                    t, b = (p1 + p2) % 10, (b1 + b2) % 10
                    if w4 and t < 8 and b < 8:
                        left = n - 4
                        draw = sum(counts[y] * sign(t, (b + y) % 10) for y in range(10))
                        add((t, b, "stood"), w4 * sign(t, b) * left * (left - 1), w4 * draw * (left - 1),
                            w4 * left * (left - 1))
                        for x in range(10):
                            w5 = w4 * take(x)
                            if w5:
                                final = (t + x) % 10
                                draw = sum(counts[y] * sign(final, (b + y) % 10) for y in range(10))
                                add((t, b, str(x)), w5 * sign(final, b) * (left - 1), w5 * draw, w5 * (left - 1))
                            counts[x] += 1
                    counts[b2] += 1
                counts[p2] += 1
            counts[b1] += 1
        counts[p1] += 1
    return gains, reached


def cell_gains(decks: int, rule: str, role: str, total: int, third: int | str | None) -> dict[str, Fraction]:
    """The decider's expected gain per unit staked, drawing and standing, given what he knew."""
    punter, banker = played(decks, rule)
    gains, reached = tallies(decks)
    if role == "punter":
        out = {"draw": Fraction(0), "stand": Fraction(0)}
        weight = sum(reached[total, b, "stood"] for b in range(8))
        for (t, b, x), (stand, draw) in gains.items():
            if t == total:
                option = "stand" if x == "stood" else "draw"
                out[option] -= (stand + banker[b, x] * (draw - stand)) / Fraction(weight)
        return out
    x = str(third)
    stand = draw = weight = Fraction(0)
    for t in range(8):
        p = 1 - punter[t] if x == "stood" else punter[t]
        s, d = gains[t, total, x]
        stand, draw, weight = stand + p * s, draw + p * d, weight + p * reached[t, total, x]
    return {"draw": draw / weight, "stand": stand / weight}
