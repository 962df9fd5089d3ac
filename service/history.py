"""What the audits may read of a table: its stored log, the table rebuilt at a version, and the read model's
rows about it. TablesService implements it; service/audit.py uses nothing else of the service."""

from __future__ import annotations

from typing import Any, Protocol

from domain.table import Table, TableEvent


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

    def snapshot_version(self, table_id: str) -> int | None:
        """The version of the table's latest snapshot, or None."""

    # --- the table rebuilt -------------------------------------------------------------------------------

    def table(self, table_id: str, version: int | None = None) -> Table:
        """The table at its head or at ``version``; DamagedLog where the stored history cannot give it."""

    def state_at(self, table_id: str, version: int) -> dict[str, Any]:
        """The state the table showed when ``version`` was its head, with ``as_of``."""

    def current_state(self, table_id: str) -> dict[str, Any]:
        """The table's state at its head."""

    # --- the read model ----------------------------------------------------------------------------------

    def index_caught_up(self) -> None:
        """Returns once the read model holds every event recorded before the call."""

    def indexed_table(self, table_id: str) -> dict[str, Any] | None:
        """The read model's row of the table (version, rounds, index_error...), or None."""

    def indexed_round(self, table_id: str, number: int) -> dict[str, Any] | None:
        """The read model's row of a finished round: its first and last versions, times and summary."""

    def indexed_shoes(self, table_id: str, numbers: list[int]) -> list[dict[str, Any]]:
        """The read model's rows of these shoes: where their shuffle and reveal are in the log."""

    def index_error(self, table_id: str) -> dict[str, Any] | None:
        """Where and why the read model stopped indexing the table, or None if it holds all of it."""
