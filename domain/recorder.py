"""Records the events of one command on a table, each chained to the table's head."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from domain import chain

if TYPE_CHECKING:
    from domain.events import TableEvent
    from domain.table import Table


class Recorder:
    """Records the events of one command: one clock reading, one command number, a strictly rising time."""

    def __init__(self, table: "Table", now: datetime, number: int | None = None, by: str | None = None) -> None:
        self.table = table
        self.now = now
        self.number = table.commands + 1 if number is None else number
        self.by = by  # the credential that issued the command, recorded in each of its events

    def __call__(self, event_class: type[TableEvent], actor: str, **data: Any) -> None:
        if self.by is not None:
            data = {**data, "by": self.by}
        table = self.table
        # Timestamps of one table strictly increase, so that a moment names exactly one version.
        moment = max(self.now, table.modified_on + timedelta(microseconds=1))
        stamp = chain.format_timestamp(moment)
        version = table.version + 1
        head = chain.digest(table.head, version, event_class.__name__, stamp, actor, data)
        table.trigger_event(
            event_class, timestamp=moment, actor=actor, digest=head, command=self.number, **data
        )
