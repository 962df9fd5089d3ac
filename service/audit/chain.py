"""The chain check: the stored log whole and in order, and every digest recomputed from the one before.

Where it names a version missing or unreadable, the other checks leave naming it to this one.
"""

from __future__ import annotations

from typing import Any

from domain.chain import RULE_COMMITTED, binding_problem, chain_rule, digest, format_timestamp
from domain.games import GAMES, SECRETS
from domain.table import TableEvent
from service.audit.problems import at, missing_message, unreadable_message


class LogCheck:
    """Follows a stretch of the stored log row by row and names every break at its version: a version
    missing, a row that cannot be read, a timestamp not after the one before (rows exchanged, or a time
    altered), a digest that does not follow from the one before (docs/design.md "The event envelope and the hash
    chain"). It goes on after a break, so that one problem does not hide the next."""

    def __init__(self, expected: int = 1, prev: str | None = "", moment: Any = None) -> None:
        self.rule: int | None = None  # the chain rule, told by the first event (domain/chain.py)
        self.game: str | None = None  # the game, told by the same event
        self.expected = expected  # the version the next row must have
        self.prev = prev  # the digest of the event before it; None when that event is missing or unreadable
        self.moment = moment  # the timestamp of the last readable event
        self.last: int | None = None  # the last version read, readable or not
        self.rows = 0
        self.problems: list[dict[str, Any]] = []

    def _arrive(self, version: int) -> None:
        self.rows += 1
        if version > self.expected:
            self.problems.append(at("chain", self.expected, missing_message(self.expected, version - 1, version)))
            self.prev = None
        elif version < self.expected:  # the stores refuse it, but a log served by anything else may do it
            self.problems.append(at("chain", version, f"version {version} comes after version {self.expected - 1}: "
                                                      "the log is out of order"))
        self.expected = max(self.expected, version + 1)
        self.last = version

    def feed(self, e: TableEvent) -> None:
        version = e.originator_version
        self._arrive(version)
        timestamp = format_timestamp(e.timestamp)  # the string the chain hashes
        found = []
        if self.moment is not None and e.timestamp <= self.moment:
            found.append(f"its timestamp {timestamp} is not after {format_timestamp(self.moment)}, the one "
                         "before it: versions out of order (rows exchanged) or a timestamp altered")
        if version == 1 and e.type == "TableOpened":
            self.rule = chain_rule(e.data)
            self.game = e.data.get("game")
            moved = binding_problem(str(e.originator_id), e.data)
            if moved:
                found.append(moved)
        if self.rule == RULE_COMMITTED:
            found += self._uncommitted(e)
        if self.prev is not None:
            expected = digest(self.prev, version, e.type, timestamp, e.actor, e.data, e.salts)
            if expected != e.digest:
                found.append(f"digest {e.digest} recorded, {expected} recomputed from the event before it: "
                             "this event or the one before it was altered")
        if found:
            self.problems.append(at("chain", version, "; ".join(found), e.type))
        self.prev, self.moment = e.digest, e.timestamp

    def _uncommitted(self, e: TableEvent) -> list[str]:
        """Under chain rule 3, each part the game conceals is chained as its salted commitment, and nothing else
        is: a part chained in clear gives its value away to whoever holds the digest."""
        game = GAMES.get(self.game or "")
        wanted = {s.pointer for s in (game.secrets if game else SECRETS).spots(e.type, e.data, e.originator_version)}
        salted = set(e.salts or {})
        if wanted == salted:
            return []
        return [f"under chain rule 3 the concealed parts {sorted(wanted) or 'none'} are committed with salts, but "
                f"this event salts {sorted(salted) or 'none'}"]

    def unreadable(self, version: int) -> None:
        self._arrive(version)
        self.problems.append(at("chain", version, unreadable_message(version)))
        self.prev = None

    def end(self, upto: int) -> None:
        """The stretch should reach ``upto``: the versions after the last row read are missing."""
        if self.expected <= upto:
            self.problems.append(at("chain", self.expected, missing_message(self.expected, upto, None)))

