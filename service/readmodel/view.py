"""What every store of the read model offers: a batch written with its position, and its rows read back.

Each event store has its own (service/readmodel/memory.py, sqlite.py, postgres.py): the read model lives in
the event store's own database, so that its rows and its tracking position are written in one transaction.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from eventsourcing.persistence import TrackingRecorder

from service.readmodel.rows import IndexBatch, Sealer


class IndexView(TrackingRecorder, ABC):
    sealer = Sealer()

    @abstractmethod
    def write(self, batch: IndexBatch, tracking: Any, read_at: int) -> None:
        """Writes the rows and moves the tracking position from ``read_at`` on, in one transaction that first
        claims the position: if another process moved it since it was read, IntegrityError and nothing is
        written. Claiming the position first also makes writers queue on one row, so they cannot deadlock.
        A table whose rows the database refuses is written as failed instead (added to ``batch.failures``)."""

    @abstractmethod
    def get_tables(self, table_ids: list[str]) -> dict[str, dict[str, Any]]: ...

    @abstractmethod
    def list_tables(self, game: str | None, after: int, limit: int) -> list[dict[str, Any]]: ...

    @abstractmethod
    def list_rounds(self, table_id: str, after: int, limit: int) -> list[dict[str, Any]]: ...

    @abstractmethod
    def get_shoes(self, table_id: str, numbers: list[int] | None = None) -> list[dict[str, Any]]:
        """The table's shoes, or only those numbered."""

    @abstractmethod
    def seat_rounds(self, player: str, before: int, limit: int,
                    tables: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
        """The player's parts in rounds (service/readmodel/seats.py) whose key is below ``before``, the newest
        first; ``player`` is found as names are compared (NFKC, case folded); only at ``tables`` where given."""
