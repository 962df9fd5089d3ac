"""Every free decision of a table weighed against the game's solution, and each player's expected loss per stake.

Read from the table's stored log alone, through TableHistory (service/history.py), as the audits read it:
the game and its rules from TableOpened, then every event in version order. Chemin de fer's decisions are
weighed by domain/chemin_de_fer/decisions.py against the solution for the table's rule set and decks
(solved once per process and kept: ``solution.solve`` is cached per rule set and deck count, never stored
in the log); punto banco's stakes are rated with domain/punto_banco/edges.py. service/present.py makes
what a caller sees (docs/api.md, "Decisions").
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from domain.chemin_de_fer import decisions as D
from domain.chemin_de_fer import solution
from domain.punto_banco import edges
from domain.rounds import Event
from domain.sight import EVERYTHING, Viewer
from service import present
from service.errors import DamagedLog
from service.history import TableHistory
from service.limits import page_size, position

BATCH = 500  # events read at a time


class Ledger:
    """What the page and its summary are made of: the table's weighed decisions, and per player what he
    staked, what it was expected to cost him, and what he won or lost (the payments)."""

    def __init__(self, game: str, rules: dict[str, Any], players: list[str]) -> None:
        self.game, self.rules, self.players = game, rules, players
        self.decisions: list[tuple[D.FreeDecision, dict[str, Any]]] = []
        self.staked = {p: 0 for p in players}
        self.expected = {p: Fraction(0) for p in players}
        self.result = {p: 0 for p in players}
        self.reader = D.DecisionReader(rules["draw_rule"]) if game == "chemin-de-fer" else None
        self.edges = edges.spot_edges(rules) if game == "punto-banco" else {}
        self.closed: dict[str, dict[str, int]] = {}
        self.rated = game in ("chemin-de-fer", "punto-banco")  # the games with an edge to rate stakes by

    def feed(self, e: Event) -> None:
        if e["type"] == "PaymentMade":
            self._paid(e["data"])
        if self.reader is not None:
            for found in self.reader.feed(e):
                if isinstance(found, D.FreeDecision):
                    self.decisions.append((found, figures(self.rules, found)))
                else:
                    self._dealt(found)
        elif e["type"] == "StakesClosed" and self.game == "punto-banco":
            self.closed = e["data"]["stakes"]
        elif e["type"] == "CoupDecided":
            self._rated()

    def _paid(self, data: dict[str, Any]) -> None:
        for who, sign in ((data["payer"], -1), (data["payee"], 1)):
            if who in self.result:
                self.result[who] += sign * data["amount"]

    def _dealt(self, deal: D.DealPlayed) -> None:
        """Chemin de fer: the banker's value per unit at stake, given by the stakers to the banker (a
        negative value would go the other way)."""
        value = solution.solve(self.rules["decks"], self.rules["draw_rule"]).value
        for staker, amount in deal.stakes.items():
            self._stake(staker, amount, value)
        self._stake(deal.banker, sum(deal.stakes.values()), -value)

    def _rated(self) -> None:
        """Punto banco: each stake of the coup at its spot's house edge."""
        for player, spots in self.closed.items():
            for spot, amount in spots.items():
                self._stake(player, amount, self.edges[spot])
        self.closed = {}

    def _stake(self, player: str, amount: int, edge: Fraction) -> None:
        if player in self.staked:
            self.staked[player] += amount
            self.expected[player] += amount * edge


def figures(rules: dict[str, Any], decision: D.FreeDecision) -> dict[str, Any]:
    """One decision's exact figures: the gains of both options, the best one, and the cost per unit."""
    third = decision.third if decision.third is not None else solution.STOOD
    gains = D.option_gains(rules["decks"], rules["draw_rule"], decision.role, decision.total, third)
    return {"gains": gains, "best": D.best_option(gains), "cost": D.cost_of(gains, decision.chosen)}


def _log(history: TableHistory, table_id: str, upto: int | None = None) -> Iterator[Event]:
    """The table's events as the events API shows them, read in batches."""
    after = 0
    while True:
        batch = history.read_events(table_id, after=after, upto=upto, limit=BATCH)
        yield from present.events(batch)
        if len(batch) < BATCH:
            return
        after = batch[-1].originator_version


def table_decisions(history: TableHistory, table_id: str, after: int = 0, limit: int = 100,
                    viewer: Viewer = EVERYTHING) -> dict[str, Any]:
    """A page of the table's free decisions after version ``after``, and every player's summary over the
    whole table (docs/api.md, "Decisions"); for a ``viewer`` who does not see every card, only up to the coup
    whose cards are still face down (a decision weighs a hand's total)."""
    history.require_table(table_id)
    limit, after = page_size(limit), position(after)
    events = _log(history, table_id, None if viewer == EVERYTHING else _before_hidden(history, table_id))
    opened = next(events)
    ledger = Ledger(opened["data"]["game"], opened["data"]["rules"], opened["data"]["players"])
    for e in events:
        ledger.feed(e)
    later = [(d, f) for d, f in ledger.decisions if d.version > after]
    page = later[:limit]
    return {
        "decisions": [present.weighed_decision(d, f) for d, f in page],
        "players": present.decision_summary(ledger.players, ledger.decisions, ledger.staked,
                                            ledger.expected if ledger.rated else None, ledger.result),
        "next_after": page[-1][0].version if len(later) > limit else None,
    }


def _before_hidden(history: TableHistory, table_id: str) -> int | None:
    """Chemin de fer: the version before the first card of the coup still face down now (None: none is)."""
    table = history.table(table_id)
    hidden = [e["version"] for e in table.hidden] if table.game == "chemin-de-fer" else []
    return min(hidden) - 1 if hidden else None


def round_decisions(history: TableHistory, table_id: str, number: int, first: int,
                    events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The free decisions among a round's events (as the events API shows them), weighed: the round is read
    on from the table's state just before it. None for games without free decisions, or where that state
    cannot be rebuilt (the audit's checks name why)."""
    try:
        table = history.table(table_id, version=first - 1)
    except DamagedLog:
        return []
    if table.game != "chemin-de-fer":
        return []
    reader = D.DecisionReader.from_table(table, number)
    found = [d for e in events for d in reader.feed(e) if isinstance(d, D.FreeDecision)]
    return [present.weighed_decision(d, figures(table.rules, d)) for d in found]

