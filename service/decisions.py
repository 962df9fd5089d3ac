"""Every free decision of a table weighed against the game's solution, and each player's expected loss per stake.

Read from the table's stored log alone, through TableHistory (service/history.py), as the audits read it:
the game and its rules from TableOpened, then every event in version order. Each game says how its stakes
are rated and its free decisions read and weighed (its ``Rating``, domain/game.py: Chemin de fer's against the
solution for the table's rule set and decks, punto banco's at each spot's edge); service/present.py makes what
a caller sees (docs/api.md, "Decisions").
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from domain.corrections import MOVEMENTS
from domain.games import GAMES
from domain.rounds import Event
from domain.sight import EVERYTHING, Viewer
from service import present
from service.errors import DamagedLog
from service.history import TableHistory
from service.limits import page_size, position

BATCH = 500  # events read at a time


class Ledger:
    """What the page and its summary are made of: the table's weighed decisions, and per player what he
    staked, what it was expected to cost him, and what he won or lost (the payments); the game says how
    (its ``Rating``, domain/game.py)."""

    def __init__(self, game: str, rules: dict[str, Any], players: list[str]) -> None:
        self.rating, self.joining = GAMES[game].rating, GAMES[game].joining_events
        self.rules, self.players = rules, players
        self.decisions: list[tuple[Any, dict[str, Any]]] = []
        self.staked = {p: 0 for p in players}
        self.expected = {p: Fraction(0) for p in players}
        self.result = {p: 0 for p in players}
        self.reader = self.rating.decisions(rules) if self.rating.decisions else None
        self.carried: dict[str, Any] = {}

    def feed(self, e: Event) -> None:
        if e["type"] in self.joining and e["data"]["player"] not in self.staked:
            self._joined(e["data"]["player"])
        if e["type"] in MOVEMENTS:
            self._paid(e["data"])
        if self.reader is not None:
            self.decisions += [(found, self.rating.figures(self.rules, found))  # type: ignore[misc]
                               for found in self.reader.feed(e)]
        for player, _, amount, edge in self.rating.settled(e, self.rules, self.carried):
            if player in self.staked:
                self.staked[player] += amount
                self.expected[player] += amount * edge

    def _joined(self, player: str) -> None:
        """A player not named at the opening (punto banco's bettor at an open table): one of its players from then on."""
        self.players = [*self.players, player]
        self.staked[player], self.expected[player], self.result[player] = 0, Fraction(0), 0

    def _paid(self, data: dict[str, Any]) -> None:
        for who, sign in ((data["payer"], -1), (data["payee"], 1)):
            if who in self.result:
                self.result[who] += sign * data["amount"]


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
                                            ledger.expected if ledger.rating.rated else None, ledger.result),
        "next_after": page[-1][0].version if len(later) > limit else None,
    }


def _before_hidden(history: TableHistory, table_id: str) -> int | None:
    """A game with free decisions: the version before the first card of the coup still face down now (None:
    none is); a decision weighs a hand's total."""
    table = history.table(table_id)
    hidden = [e["version"] for e in table.hidden] if table.GAME.rating.decisions else []
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
    rating = table.GAME.rating
    if rating.resumed is None or rating.figures is None:
        return []
    reader = rating.resumed(table, number)
    found = [d for e in events for d in reader.feed(e)]
    return [present.weighed_decision(d, rating.figures(table.rules, d)) for d in found]
