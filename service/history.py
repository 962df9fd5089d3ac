"""What the audits may read of a table: its stored log, the table rebuilt at a version, the read model's rows.

TableHistory is the interface; History is how TablesService implements it. service/audit/ uses nothing else
of the service.
"""

from __future__ import annotations

from typing import Any, Protocol
from uuid import UUID

from domain.chain import format_timestamp
from domain.sight import EVERYTHING, Viewer
from domain.table import Table, TableEvent
from service import present, replay
from service.errors import DamagedLog, TableNotFound
from service.limits import MAX_NUMBER


class TableHistory(Protocol):
    # --- the log ---------------------------------------------------------------------------------------

    def require_table(self, table_id: str) -> None:
        """Raises TableNotFound unless the table has a stored event (a table whose first rows are damaged
        still exists, so that its audit can say what is wrong)."""

    def stored_rows(
        self, table_id: str, after: int, upto: int | None = None, limit: int | None = None
    ) -> list[tuple[int, TableEvent | None]]:
        """The stored rows after version ``after`` (up to ``upto``), each with its event, or None where the
        stored form cannot be read; one bad row hides no other."""

    def read_events(
        self, table_id: str, *, after: int = 0, upto: int | None = None, limit: int | None = None,
        newest_first: bool = False,
    ) -> list[TableEvent]:
        """The table's events after ``after`` (up to ``upto``); a row that cannot be read is a DamagedLog."""

    def events_of_types(
        self, table_id: str, types: frozenset[str], *, after: int = 0, upto: int | None = None, limit: int = 500,
    ) -> tuple[list[TableEvent], int | None]:
        """Of the (at most ``limit``) stored rows after ``after`` (up to ``upto``), the events of these types,
        and the version of the last row read (None: there was none): only those rows are decoded, the others
        are told apart by their stored topic."""

    def snapshot_version(self, table_id: str) -> int | None:
        """The version of the table's latest snapshot, or None."""

    # --- the table rebuilt -------------------------------------------------------------------------------

    def table(self, table_id: str, version: int | None = None) -> Table:
        """The table at its head or at ``version``; DamagedLog where the stored history cannot give it."""

    def state_at(self, table_id: str, version: int, viewer: Viewer = EVERYTHING,
                 now: Table | None = None, table: Table | None = None) -> dict[str, Any]:
        """The state the table showed when ``version`` was its head, with ``as_of``, as ``viewer`` sees it."""

    def current_state(self, table_id: str, viewer: Viewer = EVERYTHING) -> dict[str, Any]:
        """The table's state at its head."""

    # --- the read model ----------------------------------------------------------------------------------

    def index_caught_up(self) -> None:
        """Returns once the read model holds every event recorded before the call."""

    def indexed_table(self, table_id: str) -> dict[str, Any] | None:
        """The read model's row of the table (version, rounds, index_error...), or None."""

    def indexed_round(self, table_id: str, number: int) -> dict[str, Any] | None:
        """The read model's row of a finished round: its first and last versions, times and summary."""

    def indexed_rounds(self, table_id: str, after: int, limit: int) -> list[dict[str, Any]]:
        """The read model's rows of the finished rounds numbered after ``after``, at most ``limit``."""

    def indexed_shoes(self, table_id: str, numbers: list[int] | None) -> list[dict[str, Any]]:
        """The read model's rows of these shoes (of all, for None): where their shuffle and reveal are."""

    def index_error(self, table_id: str) -> dict[str, Any] | None:
        """Where and why the read model stopped indexing the table, or None if it holds all of it."""


class History:
    """TableHistory as TablesService (service/application.py) implements it: the log through the event
    store, the table through service/replay.py, the read model through the indexer."""

    def _uuid(self, table_id: str) -> UUID:
        return replay.table_uuid(table_id)

    def table(self, table_id: str, version: int | None = None) -> Table:
        return replay.rebuild(self, table_id, version)

    def decoded(self, table_id: str, rows: list[Any]) -> list[TableEvent]:
        return replay.decoded(self, table_id, rows)

    def require_table(self, table_id: str) -> None:
        """Raises TableNotFound unless the table has a stored event (one read of one raw row: a table whose
        first rows were deleted or damaged still exists, so that its audit can say what is wrong)."""
        if not self.recorder.select_events(self._uuid(table_id), limit=1):
            raise TableNotFound(table_id)

    def stored_rows(
        self, table_id: str, after: int, upto: int | None = None, limit: int | None = None
    ) -> list[tuple[int, TableEvent | None]]:
        """Stored rows after a version, each with its event, or None where the stored form cannot be read (it
        was altered or damaged). Rows are read as stored and decoded one by one, so one bad row hides no other."""
        rows = self.recorder.select_events(self._uuid(table_id), gt=after, lte=upto, limit=limit)
        return [(stored.originator_version, replay.readable(self, stored)) for stored in rows]

    def read_events(
        self, table_id: str, *, after: int = 0, upto: int | None = None, limit: int | None = None,
        newest_first: bool = False,
    ) -> list[TableEvent]:
        """Stored events of a table, decoded; a row that cannot be read is a DamagedLog naming its version."""
        rows = self.recorder.select_events(self._uuid(table_id), gt=after, lte=upto, desc=newest_first, limit=limit)
        return self.decoded(table_id, rows)

    def events_of_types(
        self, table_id: str, types: frozenset[str], *, after: int = 0, upto: int | None = None, limit: int = 500,
    ) -> tuple[list[TableEvent], int | None]:
        """Events of some types only: a stored topic ("module:Class") names its event's type in clear, so the rows
        of other types are never decrypted or decoded (a tenth of the cost of reading them all)."""
        rows = self.recorder.select_events(self._uuid(table_id), gt=after, lte=upto, limit=limit)
        wanted = [r for r in rows if r.topic.rsplit(":", 1)[-1].rsplit(".", 1)[-1] in types]
        return self.decoded(table_id, wanted), rows[-1].originator_version if rows else None

    def event_at(self, table_id: str, version: int) -> TableEvent:
        found = self.read_events(table_id, after=version - 1, upto=version)
        if not found:
            raise DamagedLog(table_id, f"version {version} is missing from the log", version)
        return found[0]

    def snapshot_version(self, table_id: str) -> int | None:
        if self.snapshots is None:
            return None
        found = self.snapshots.recorder.select_events(self._uuid(table_id), desc=True, limit=1)
        return found[0].originator_version if found else None

    def state_at(self, table_id: str, version: int, viewer: Viewer = EVERYTHING,
                 now: Table | None = None, table: Table | None = None) -> dict[str, Any]:
        """The state the table showed when ``version`` was its head, with ``as_of``, as ``viewer`` sees it
        (``now``: the table at its head, for what an auditor may see since; ``table``: the table at
        ``version``, where the caller already rebuilt it); DamagedLog where the stored history cannot give
        it."""
        return state_at(self, table_id, version, viewer, now, table)

    def index_caught_up(self) -> None:
        self.index.bring_up_to_date()

    def indexed_table(self, table_id: str) -> dict[str, Any] | None:
        uuid = str(self._uuid(table_id))
        return self.index.view.get_tables([uuid]).get(uuid)

    def indexed_round(self, table_id: str, number: int) -> dict[str, Any] | None:
        if not 1 <= number <= MAX_NUMBER:  # a larger number cannot exist, and would overflow a database integer
            return None
        rows = self.index.view.list_rounds(str(self._uuid(table_id)), number - 1, 1)
        return rows[0] if rows and rows[0]["round"] == number else None

    def indexed_rounds(self, table_id: str, after: int, limit: int) -> list[dict[str, Any]]:
        return self.index.view.list_rounds(str(self._uuid(table_id)), after, limit)

    def indexed_shoes(self, table_id: str, numbers: list[int] | None) -> list[dict[str, Any]]:
        return self.index.view.get_shoes(str(self._uuid(table_id)), numbers)

    def index_error(self, table_id: str) -> dict[str, Any] | None:
        """Where and why the read model stopped indexing this table, or None if it holds all of it."""
        row = self.indexed_table(table_id)
        if row is None:
            return {"version": 1, "message": "the read model holds nothing of this table yet"}
        return row["index_error"]


def state_at(history: TableHistory, table_id: str, version: int, viewer: Viewer = EVERYTHING,
             now: Table | None = None, table: Table | None = None) -> dict[str, Any]:
    """History.state_at through any TableHistory (an audit's, which keeps the rows it read)."""
    table = table if table is not None else history.table(table_id, version=version)
    state = present.state(table, viewer, now)
    following = history.read_events(table_id, after=version, upto=version + 1)
    if following and following[0].command == table.commands:  # type: ignore[attr-defined]
        state["expects"] = []  # between two events of one command nothing is expected
    state["as_of"] = {"version": version, "timestamp": format_timestamp(table.modified_on)}
    return state
