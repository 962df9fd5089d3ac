"""Records the events of one command on a table, each chained to the table's head."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from domain import chain

if TYPE_CHECKING:
    from domain.events import TableEvent
    from domain.table import Table


class Recorder:
    """Records the events of one command: one clock reading, one command number, a strictly rising time, and
    under chain rule 3 a fresh salt for each concealed part (``new_salt``: 32 hex characters a call, drawn by the
    service from the operating system's randomness: the domain draws none itself)."""

    def __init__(self, table: "Table", now: datetime, number: int | None = None, by: str | None = None,
                 new_salt: Callable[[], str] | None = None) -> None:
        self.table = table
        self.now = now
        self.number = table.commands + 1 if number is None else number
        self.by = by  # the credential that issued the command, recorded in each of its events
        self.new_salt = new_salt

    def __call__(self, event_class: type[TableEvent], actor: str, **data: Any) -> None:
        if self.by is not None:
            data = {**data, "by": self.by}
        table = self.table
        # Timestamps of one table strictly increase, so that a moment names exactly one version.
        moment = max(self.now, table.modified_on + timedelta(microseconds=1))
        stamp = chain.format_timestamp(moment)
        version = table.version + 1
        salts = self._salts(event_class.__name__, data, version)
        head = chain.digest(table.head, version, event_class.__name__, stamp, actor, data, salts)
        table.trigger_event(
            event_class, timestamp=moment, actor=actor, digest=head, command=self.number, salts=salts, **data
        )

    def _salts(self, kind: str, data: dict[str, Any], version: int) -> dict[str, str] | None:
        """Under chain rule 3, a fresh salt for each part of the event the game conceals (domain/sight.py)."""
        if self.table.chain_rule != chain.RULE_COMMITTED:
            return None
        spots = self.table.GAME.secrets.spots(kind, data, version)
        if not spots:
            return None
        if self.new_salt is None:
            raise ValueError(f"{kind} conceals a part under chain rule 3, and no salt source was given")
        return {spot.pointer: self.new_salt() for spot in spots}
