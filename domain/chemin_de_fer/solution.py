"""The exact solution of Chemin de fer's draw game (docs/rules/chemin-de-fer-solution.md), in rational numbers.

The model (Kemeny and Snell's, dealt from a real shoe): the four first cards and the third cards come from
a full shoe of ``decks`` decks without replacement (``decks=None``: with replacement, the infinite shoe);
the punter knows his own two-card total; the banker knows his own two-card total and the point value of
the punter's face-up third card, or that the punter stood; neither knows more. Each side then chooses to
draw or stand where the table's draw rule (A.9, A.10) leaves a choice; every other cell is played as the
rule says. The payoff is the banker's gain per unit staked: +1 when the banker's hand wins, -1 when the
punter's does, 0 on a tie (the game without commission, as the rule book plays it).

A strategy is a probability of drawing in each cell: the punter's by his total (0-7), the banker's by his
total (0-7) and what he saw of the punter's third card (``STOOD`` or 0-9). The banker's expected gain is
bilinear in the two: ``k + a.p + q.(b + M p)``; ``solve`` reduces the game by iterated strict dominance,
then solves what is left exactly (the punter keeps at most one free cell in every game of the two rule
sets: the breakpoints of the banker's best reply decide it), and ``verify`` checks exactly that neither
side gains by changing any one cell. Only the standard library and the rules of ``rules.py`` are used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache

from domain.chemin_de_fer import rules

STOOD = "stood"
THIRDS: tuple[int | str, ...] = (STOOD, *range(10))  # what the banker knows of the punter's third card
TOTALS = range(8)  # the two-card totals a hand chooses on (8 and 9 are naturals)
PUNTER_CELLS = tuple(TOTALS)
BANKER_CELLS = tuple((b, x) for b in TOTALS for x in THIRDS)
ONE, ZERO = Fraction(1), Fraction(0)


def shoe_counts(decks: int | None) -> list[int]:
    """Cards of each point value 0-9 in a full shoe (A.8: 10 J Q K count 0); for the infinite shoe, the
    weights of one deck, drawn with replacement."""
    per_deck = [16, *[4] * 9]
    return [c * (decks or 1) for c in per_deck]


@dataclass
class Tallies:
    """Ordered deals by outcome, every deal brought to six cards so all share one denominator.

    ``natural``: banker wins minus punter wins over the deals a natural decides; ``stood[t][b][a]``: the
    same where the punter holds t and stands and the banker holds b and stands (a=0) or draws (a=1);
    ``drew[t][b][x][a]``: where the punter holds t and draws a card worth x.
    """

    denominator: int
    natural: int = 0
    stood: list[list[list[int]]] = field(default_factory=lambda: [[[0, 0] for _ in TOTALS] for _ in TOTALS])
    drew: list[list[list[list[int]]]] = field(
        default_factory=lambda: [[[[0, 0] for _ in range(10)] for _ in TOTALS] for _ in TOTALS])


def _sign(punter: int, banker: int) -> int:
    """The banker's gain per unit (A.11, without commission) from the final totals."""
    winner = rules.coup_winner(punter, banker)
    return 1 if winner == rules.BANKER else (-1 if winner == rules.PUNTER else 0)


SIGN = [[_sign(p, b) for b in range(10)] for p in range(10)]


@lru_cache(maxsize=32)
def tallies(decks: int | None) -> Tallies:
    """Every ordered deal of point values, weighted by the card sequences it stands for (exact integers)."""
    counts = shoe_counts(decks)
    n = sum(counts)
    deplete = 1 if decks else 0
    pad = [1] * 7  # pad[k]: card sequences of the 6-k cards that follow a deal of k cards
    for k in range(5, -1, -1):
        pad[k] = pad[k + 1] * (n - deplete * k)
    out = Tallies(denominator=pad[0])
    for deal, weight in _first_four(counts, deplete):
        p1, b1, p2, b2 = deal
        t, b = (p1 + p2) % 10, (b1 + b2) % 10
        if t >= 8 or b >= 8:  # A.8: a natural decides the coup at once
            out.natural += weight * pad[4] * SIGN[t][b]
            continue
        out.stood[t][b][0] += weight * pad[4] * SIGN[t][b]
        out.stood[t][b][1] += weight * pad[5] * _draw_sum(counts, t, b)
        for x in range(10):
            if counts[x]:
                w5 = weight * counts[x]
                counts[x] -= deplete
                final = (t + x) % 10
                out.drew[t][b][x][0] += w5 * pad[5] * SIGN[final][b]
                out.drew[t][b][x][1] += w5 * _draw_sum(counts, final, b)
                counts[x] += deplete
    return out


@lru_cache(maxsize=32)
def deal_probabilities(decks: int | None) -> tuple[dict[tuple[int, int], Fraction], dict[tuple[int, int, int], Fraction]]:
    """How often each cell is reached, from the same ordered deals as ``tallies``: ``(two, three)``, where
    ``two[t, b]`` is the probability that the punter holds t and the banker b (both 0-7: no natural) and
    ``three[t, b, x]`` that, besides, the next card (the punter's third, if he draws) is worth x."""
    counts = shoe_counts(decks)
    deplete = 1 if decks else 0
    n = sum(counts)
    four = n * (n - deplete) * (n - 2 * deplete) * (n - 3 * deplete)  # sequences of four cards
    two = {(t, b): 0 for t in TOTALS for b in TOTALS}
    three = {(t, b, x): 0 for t in TOTALS for b in TOTALS for x in range(10)}
    for (p1, b1, p2, b2), weight in _first_four(counts, deplete):
        t, b = (p1 + p2) % 10, (b1 + b2) % 10
        if t < 8 and b < 8:
            two[t, b] += weight
            for x in range(10):  # ``counts`` holds the shoe less the four cards dealt
                three[t, b, x] += weight * counts[x]
    five = four * (n - 4 * deplete)
    return ({k: Fraction(v, four) for k, v in two.items()}, {k: Fraction(v, five) for k, v in three.items()})


def _draw_sum(counts: list[int], punter: int, banker: int) -> int:
    """Σ over the banker's third card of its count times the banker's gain."""
    row = SIGN[punter]
    return sum(c * row[(banker + v) % 10] for v, c in enumerate(counts) if c)


def _first_four(counts: list[int], deplete: int):
    """(p1, b1, p2, b2) point values of the four first cards (A.7), with their card sequences; ``counts``
    is left as it was."""
    for p1 in range(10):
        w1 = counts[p1]
        counts[p1] -= deplete
        for b1 in range(10):
            w2 = w1 * counts[b1]
            counts[b1] -= deplete
            for p2 in range(10):
                w3 = w2 * counts[p2]
                counts[p2] -= deplete
                for b2 in range(10):
                    w4 = w3 * counts[b2]
                    if w4:
                        counts[b2] -= deplete
                        yield (p1, b1, p2, b2), w4
                        counts[b2] += deplete
                counts[p2] += deplete
            counts[b1] += deplete
        counts[p1] += deplete


# --- the game as a bilinear form ----------------------------------------------------------------------

def free_cells(rule: str) -> tuple[tuple[int, ...], tuple[tuple[int, int | str], ...]]:
    """The cells where each side chooses under ``rule`` (A.9, A.10)."""
    punter = tuple(t for t in PUNTER_CELLS if rules.punter_choice(t, rule) == rules.EITHER)
    banker = tuple(c for c in BANKER_CELLS if rules.banker_choice(c[0], _third(c[1]), rule) == rules.EITHER)
    return punter, banker


def forced_play(rule: str) -> tuple[dict[int, Fraction], dict[tuple[int, int | str], Fraction]]:
    """The probability of drawing in every cell the rule decides (1 or 0)."""
    punter = {t: ONE if rules.punter_choice(t, rule) == rules.DRAW else ZERO
              for t in PUNTER_CELLS if rules.punter_choice(t, rule) != rules.EITHER}
    banker = {}
    for b, x in BANKER_CELLS:
        choice = rules.banker_choice(b, _third(x), rule)
        if choice != rules.EITHER:
            banker[(b, x)] = ONE if choice == rules.DRAW else ZERO
    return punter, banker


def _third(x: int | str) -> int | None:
    return None if x == STOOD else int(x)


def cell_values(decks: int | None, t: int, cell: tuple[int, int | str]) -> tuple[Fraction, Fraction]:
    """The banker's gain from the deals where the punter holds ``t`` and the banker's cell is ``cell``,
    standing and drawing (unconditional: weighted by how often the deal comes)."""
    return _values(decks)[t, cell]


@lru_cache(maxsize=32)
def _values(decks: int | None) -> dict:
    tal = tallies(decks)
    out = {}
    for t in PUNTER_CELLS:
        for b, x in BANKER_CELLS:
            pair = tal.stood[t][b] if x == STOOD else tal.drew[t][b][int(x)]
            out[t, (b, x)] = (Fraction(pair[0], tal.denominator), Fraction(pair[1], tal.denominator))
    return out


def expected_gain(decks: int | None, punter: dict[int, Fraction], banker: dict) -> Fraction:
    """The banker's expected gain per unit staked when the punter draws on t with probability
    ``punter[t]`` and the banker in cell c with probability ``banker[c]`` (every cell given)."""
    tal = tallies(decks)
    value = Fraction(tal.natural, tal.denominator)
    for t in PUNTER_CELLS:
        for cell in BANKER_CELLS:
            reach = punter[t] if cell[1] != STOOD else 1 - punter[t]
            if reach:
                stand, draw = cell_values(decks, t, cell)
                value += reach * (stand + banker[cell] * (draw - stand))
    return value


def banker_form(decks: int | None, cell: tuple[int, int | str]) -> tuple[Fraction, dict[int, Fraction]]:
    """How much more the banker gains (unconditionally) by drawing than by standing in ``cell``, as a linear
    form in the punter's probabilities of drawing: ``(constant, {t: coefficient})``."""
    return _forms(decks)[0][cell]


def punter_form(decks: int | None, t: int) -> tuple[Fraction, dict]:
    """How much more the punter gains (unconditionally) by drawing than by standing on ``t``, as a linear
    form in the banker's probabilities of drawing: ``(constant, {cell: coefficient})``."""
    return _forms(decks)[1][t]


@lru_cache(maxsize=32)
def _forms(decks: int | None) -> tuple[dict, dict]:
    banker: dict = {cell: (ZERO, {}) for cell in BANKER_CELLS}
    punter: dict = {t: (ZERO, {}) for t in PUNTER_CELLS}
    for (t, cell), (stand, draw) in _values(decks).items():
        const, coefs = banker[cell]
        if cell[1] == STOOD:  # reached when the punter stands: (1 - p_t) (draw - stand)
            banker[cell] = (const + draw - stand, {**coefs, t: coefs.get(t, ZERO) - (draw - stand)})
        else:  # reached when he draws: p_t (draw - stand)
            banker[cell] = (const, {**coefs, t: coefs.get(t, ZERO) + (draw - stand)})
        sign = 1 if cell[1] == STOOD else -1  # the punter's gain is the banker's loss
        const, coefs = punter[t]
        punter[t] = (const + sign * stand, {**coefs, cell: sign * (draw - stand)})
    return banker, punter


def evaluate(form: tuple[Fraction, dict], play: dict) -> Fraction:
    const, coefs = form
    return const + sum((c * play[k] for k, c in coefs.items()), ZERO)


def _range(form: tuple[Fraction, dict], bounds: dict) -> tuple[Fraction, Fraction]:
    """The least and the greatest value of a linear form over the box ``bounds``."""
    const, coefs = form
    least = greatest = const
    for k, c in coefs.items():
        lo, hi = bounds[k]
        least += min(c * lo, c * hi)
        greatest += max(c * lo, c * hi)
    return least, greatest


# --- solving --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Solution:
    """Optimal play for both sides and the game's value (the banker's expected gain per unit staked).

    ``punter`` and ``banker`` give the probability of drawing in every cell, forced ones included;
    ``punter_free`` and ``banker_free`` name the cells where the side chooses.
    """

    decks: int | None
    rule: str
    punter: dict[int, Fraction]
    banker: dict[tuple[int, int | str], Fraction]
    value: Fraction
    punter_free: tuple[int, ...]
    banker_free: tuple[tuple[int, int | str], ...]


def _dominance(decks, rule) -> tuple[dict, dict]:
    """Iterated strict dominance: a free cell whose advantage keeps one sign whatever the other side does
    (within what is left of its choices) is played that way; repeated until nothing changes.
    Returns the bounds (least, greatest probability of drawing) of every cell of each side."""
    forced_p, forced_b = forced_play(rule)
    pb = {t: (forced_p[t],) * 2 if t in forced_p else (ZERO, ONE) for t in PUNTER_CELLS}
    bb = {c: (forced_b[c],) * 2 if c in forced_b else (ZERO, ONE) for c in BANKER_CELLS}
    changed = True
    while changed:
        changed = False
        for bounds, other, form in ((bb, pb, banker_form), (pb, bb, punter_form)):
            for cell, (lo, hi) in bounds.items():
                if lo != hi:
                    least, greatest = _range(form(decks, cell), other)
                    if least > 0 or greatest < 0:
                        bounds[cell] = (ONE, ONE) if least > 0 else (ZERO, ZERO)
                        changed = True
    return pb, bb


@lru_cache(maxsize=64)
def solve(decks: int | None, rule: str) -> Solution:
    """The game's exact solution for a shoe of ``decks`` decks (None: infinite) under the draw rule ``rule``."""
    pb, bb = _dominance(decks, rule)
    open_punter = [t for t, (lo, hi) in pb.items() if lo != hi]
    if len(open_punter) > 1:  # never so under the two rule sets; a new rule set would need a general solver
        raise ValueError(f"dominance leaves the punter {len(open_punter)} free cells; at most one is solved")
    punter = {t: lo for t, (lo, _) in pb.items()}
    if open_punter:
        punter[open_punter[0]] = _punter_mix(decks, open_punter[0], punter, bb)
    banker = _banker_reply(decks, punter, bb, open_punter)
    punter_free, banker_free = free_cells(rule)
    return Solution(decks, rule, punter, banker, expected_gain(decks, punter, banker), punter_free, banker_free)


def _best_reply(decks, punter: dict, bb: dict) -> dict:
    """The banker's best reply to ``punter`` within ``bb``: draw where drawing gains more (ties: stand)."""
    return {c: lo if lo == hi else (ONE if evaluate(banker_form(decks, c), punter) > 0 else ZERO)
            for c, (lo, hi) in bb.items()}


def _punter_mix(decks, t: int, punter: dict, bb: dict) -> Fraction:
    """The punter's probability of drawing on ``t`` that leaves the banker's best reply the least: the
    banker's best-reply gain is convex and piecewise linear in it, so the least is at 0, at 1 or where
    one of the banker's open cells changes sign."""
    candidates = {ZERO, ONE}
    for cell, (lo, hi) in bb.items():
        if lo != hi:
            const, coefs = banker_form(decks, cell)
            at0 = const + sum((c * punter[k] for k, c in coefs.items() if k != t), ZERO)
            slope = coefs.get(t, ZERO)
            if slope and 0 < -at0 / slope < 1:
                candidates.add(-at0 / slope)

    def reply_value(p: Fraction) -> Fraction:
        play = {**punter, t: p}
        return expected_gain(decks, play, _best_reply(decks, play, bb))

    return min(sorted(candidates), key=reply_value)


def _banker_reply(decks, punter: dict, bb: dict, open_punter: list[int]) -> dict:
    """The banker's optimal play against the punter's optimal ``punter``: his best reply, mixing in the cells
    where he is indifferent so that the punter's mixed cell is no worse for him than its alternatives."""
    banker = _best_reply(decks, punter, bb)
    indifferent = [c for c, (lo, hi) in bb.items()
                   if lo != hi and evaluate(banker_form(decks, c), punter) == 0]
    if not open_punter or not indifferent:
        return banker
    t = open_punter[0]
    coefs = punter_form(decks, t)[1]
    # The punter's advantage of drawing on t must come to 0 where he mixes; where he draws (stands) it may
    # stay above (below) 0.
    gap = -evaluate(punter_form(decks, t), banker)
    if (punter[t] == ONE and gap <= 0) or (punter[t] == ZERO and gap >= 0):
        return banker
    for cell in indifferent:  # move the indifferent cells, one at a time, towards closing the gap
        slope = coefs.get(cell, ZERO)
        if slope and gap:
            step = max(-banker[cell], min(1 - banker[cell], gap / slope))
            banker[cell] += step
            gap -= step * slope
    return banker


def deviations(solution: Solution) -> list[str]:
    """Every cell where one side would gain by playing otherwise, the other side's play held (none for an
    optimal pair): in this game each side moves once, in one cell, so a pure change in one cell is every
    deviation there is to check. Exact: a gain of any size is listed."""
    found = []
    for cell in solution.banker_free:
        found += _gains_by_changing("banker", cell, banker_form(solution.decks, cell), solution.punter,
                                    solution.banker[cell])
    for t in solution.punter_free:
        found += _gains_by_changing("punter", t, punter_form(solution.decks, t), solution.banker,
                                    solution.punter[t])
    return found


def _gains_by_changing(side: str, cell, form, other: dict, drawing: Fraction) -> list[str]:
    advantage = evaluate(form, other)  # what drawing gains over standing for ``side``
    if (advantage > 0 and drawing < 1) or (advantage < 0 and drawing > 0):
        return [f"the {side} gains {abs(advantage) * (1 - drawing if advantage > 0 else drawing)} in {cell}"]
    return []
