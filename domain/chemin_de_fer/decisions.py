"""What each free decision of Chemin de fer's draw game was worth, against the game's exact solution.

A decision is free where the table's draw rule (A.9, A.10) lets the punter or the banker choose. Its
options are weighed as docs/rules/chemin-de-fer-solution.md's model weighs them: from the decider's side,
given what he knew (the punter his total; the banker his total and the punter's third card, or that he
stood), the other side playing the solution (``solution.solve``) for the table's rule set and decks. A
gain is the decider's expected gain per unit staked, conditional on reaching his cell: exact fractions.

``DecisionReader`` reads a table's events (as the events API shows them) in version order and names every
free decision, with who was at stake against whom; nothing here reads a clock, a store or the service.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from domain.cards import point_value
from domain.chemin_de_fer import rules
from domain.chemin_de_fer import solution as S
from domain.chemin_de_fer.rounds import MARKS
from domain.events import DEALER_RULE
from domain.rounds import Event, RoundTracker

PUNTER, BANKER = "punter", "banker"
DRAW, STAND, EITHER = rules.DRAW, rules.STAND, rules.EITHER
# Two options whose gains differ by no more than this are equally good: ``best`` is then ``either``.
INDIFFERENT = Fraction(1, 10**12)


def option_gains(decks: int, rule: str, role: str, total: int, third: int | str) -> dict[str, Fraction]:
    """The decider's expected gain per unit staked from drawing and from standing in his cell: the punter's
    on ``total``, the banker's on ``total`` having seen ``third`` (the punter's third card, or ``STOOD``)."""
    solved = S.solve(decks, rule)
    if role == PUNTER:
        return _punter_gains(solved, total)
    return _banker_gains(solved, total, third)


def _punter_gains(solved: S.Solution, t: int) -> dict[str, Fraction]:
    """Given his total t: the banker's gain over every banker total and third card, the banker drawing
    as the solution says, divided by how often the punter holds t (his gain is the banker's loss)."""
    two, _ = S.deal_probabilities(solved.decks)
    stand = draw = S.ZERO
    for b in S.TOTALS:
        for x in S.THIRDS:
            kept, drawn = S.cell_values(solved.decks, t, (b, x))
            value = kept + solved.banker[b, x] * (drawn - kept)
            if x == S.STOOD:
                stand += value
            else:
                draw += value
    reached = sum((two[t, b] for b in S.TOTALS), S.ZERO)
    return {DRAW: -draw / reached, STAND: -stand / reached}


def _banker_gains(solved: S.Solution, b: int, x: int | str) -> dict[str, Fraction]:
    """Given his total b and what he saw x: the banker's gain over every punter total, each weighted by how
    often the punter, playing the solution, holds it and shows x."""
    two, three = S.deal_probabilities(solved.decks)
    stand = draw = reached = S.ZERO
    for t in S.TOTALS:
        play = 1 - solved.punter[t] if x == S.STOOD else solved.punter[t]
        if play:
            kept, drawn = S.cell_values(solved.decks, t, (b, x))
            stand += play * kept
            draw += play * drawn
            reached += play * (two[t, b] if x == S.STOOD else three[t, b, int(x)])
    if not reached:  # a cell the solution never reaches (none in the two rule sets): nothing to tell apart
        return {DRAW: S.ZERO, STAND: S.ZERO}
    return {DRAW: draw / reached, STAND: stand / reached}


def best_option(gains: dict[str, Fraction]) -> str:
    """The option with the larger gain, or ``either`` when they are within ``INDIFFERENT``."""
    if abs(gains[DRAW] - gains[STAND]) <= INDIFFERENT:
        return EITHER
    return DRAW if gains[DRAW] > gains[STAND] else STAND


def cost_of(gains: dict[str, Fraction], chosen: str) -> Fraction:
    """What the choice gave away per unit staked: the best option's gain less the chosen one's (0 when
    indifferent)."""
    best = best_option(gains)
    return S.ZERO if best == EITHER else gains[best] - gains[chosen]


@dataclass(frozen=True)
class FreeDecision:
    """A draw or a stand the rule left free. ``stakes``: each staker's stake in the coup (their sum is
    what was at stake); the decider's opponents are the banker (for the punter) or the stakers."""

    version: int
    round: int
    player: str
    role: str
    total: int
    third: int | str | None
    chosen: str
    banker: str
    stakes: dict[str, int]


@dataclass
class DecisionReader:
    """Reads a Chemin de fer table's events in version order, from the first (or from a table's state, see
    ``from_table``), and names its free decisions (the deals' stakes are rated by domain/chemin_de_fer/rating.py)."""

    rule: str
    banker: str = ""
    punter: str = ""
    stakes: dict[str, int] = field(default_factory=dict)
    hands: dict[str, list[str]] = field(default_factory=lambda: {PUNTER: [], BANKER: []})
    rounds: RoundTracker = field(default_factory=lambda: RoundTracker(MARKS))
    round: int | None = None  # set: every event read belongs to this round

    @classmethod
    def from_table(cls, table: Any, round_number: int) -> DecisionReader:
        """A reader that goes on from ``table`` (a ChemindeferTable), reading the events of one round."""
        hands = {PUNTER: list(table.hands["punter"]), BANKER: list(table.hands["banker"])}
        return cls(table.rules["draw_rule"], table.banker, table.punter, dict(table.stakes), hands,
                   round=round_number)

    def feed(self, e: Event) -> list[FreeDecision]:
        """The free decision the event records, if any."""
        self.rounds.feed(e)
        kind, data = e["type"], e["data"]
        found: list[FreeDecision] = []
        if kind == "SeatsDrawn":
            self.banker = data["banker"]
        elif kind == "BankPassed":
            self.banker = data["to_banker"]
        elif kind == "StakesClosed":
            self.stakes, self.punter = dict(data["stakes"]), data["punter"]
        elif kind == "CardDealt" and self.punter and data["to"] in (self.punter, self.banker):
            found += self._dealt(e)
        elif kind == "HandStood":
            found += self._decision(e, data["hand"], STAND)
        elif kind == "HandsShown":
            self.hands = {PUNTER: [], BANKER: []}
        elif kind == "CoupSettled":
            self.punter, self.stakes = "", {}
        return found

    def _round(self) -> int:
        return self.round if self.round is not None else self.rounds.state["rounds"]

    def _dealt(self, e: Event) -> list[FreeDecision]:
        data = e["data"]
        hand = BANKER if data["to"] == self.banker else PUNTER
        found = self._decision(e, hand, DRAW) if data["face_up"] else []
        self.hands[hand].append(data["card"])
        return found

    def _decision(self, e: Event, hand: str, chosen: str) -> list[FreeDecision]:
        """The choice of ``hand``'s holder, if the rule left it to him (never one the rule forced)."""
        if e["actor"] == DEALER_RULE or len(self.hands[hand]) != 2:
            return []
        total = rules.hand_total(self.hands[hand])
        if hand == PUNTER:
            third: int | str | None = None
            free = rules.punter_choice(total, self.rule) == EITHER
        else:
            punter = self.hands[PUNTER]
            third = point_value(punter[2]) if len(punter) == 3 else S.STOOD
            free = rules.banker_choice(total, None if third == S.STOOD else third, self.rule) == EITHER
        if not free:
            return []
        who = self.punter if hand == PUNTER else self.banker
        return [FreeDecision(e["version"], self._round(), who, hand, total, third, chosen, self.banker,
                             dict(self.stakes))]
