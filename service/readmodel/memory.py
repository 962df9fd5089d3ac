"""The read model in memory, for the in-memory event store."""

from __future__ import annotations

import json
from typing import Any

from eventsourcing.persistence import IntegrityError
from eventsourcing.popo import POPOTrackingRecorder

from service.readmodel.rows import IndexBatch, failure_of
from service.readmodel.view import IndexView


class POPOIndexView(IndexView, POPOTrackingRecorder):
    """In memory, for the in-memory event store."""

    def __init__(self) -> None:
        super().__init__()
        self._tables: dict[str, dict[str, Any]] = {}
        self._rounds: dict[str, dict[int, dict[str, Any]]] = {}
        self._shoes: dict[str, dict[int, dict[str, Any]]] = {}
        self._seat_rounds: dict[str, dict[int, dict[str, Any]]] = {}  # by the player's tag, then key

    def write(self, batch: IndexBatch, tracking: Any, read_at: int) -> None:
        with self._database_lock:
            if (self._max_tracking_ids[tracking.application_name] or 0) != read_at:
                raise IntegrityError(f"{tracking.application_name}: the read model moved on since it was read")
            for table_id, rows in batch.tables.items():
                try:  # copies made first, so that a table that cannot be copied changes nothing
                    table, rounds, shoes, seats = json.loads(
                        json.dumps([rows.table, rows.rounds, list(rows.shoes.items()), rows.seats]))
                except (TypeError, ValueError) as exc:
                    batch.failures[table_id] = failure_of(table_id, rows, exc)
                    continue
                self._tables[table_id] = table
                for row in rounds:
                    self._rounds.setdefault(table_id, {})[row["round"]] = row
                for shoe, row in shoes:
                    self._shoes.setdefault(table_id, {})[shoe] = row
                for row in seats:
                    self._seat_rounds.setdefault(self.sealer.tag(row["player"]), {})[row["key"]] = row
            for f in batch.failures.values():
                table = self._tables.setdefault(f.table_id, {
                    "table_id": f.table_id, "seq": f.seq, "game": f.game, "opened_at": f.opened_at, "version": 0,
                    "updated_at": f.opened_at, "rounds": 0, "players": [], "tracker": None,
                })
                table["index_error"] = {"version": f.version, "message": f.message}
            self._insert_tracking(tracking)

    @staticmethod
    def _copy(row: dict[str, Any]) -> dict[str, Any]:
        return {"index_error": None, **json.loads(json.dumps(row))}

    def get_tables(self, table_ids: list[str]) -> dict[str, dict[str, Any]]:
        with self._database_lock:
            return {t: self._copy(self._tables[t]) for t in table_ids if t in self._tables}

    def list_tables(self, game: str | None, after: int, limit: int) -> list[dict[str, Any]]:
        with self._database_lock:
            rows = sorted((r for r in self._tables.values() if r["seq"] > after and (not game or r["game"] == game)),
                          key=lambda r: r["seq"])
            return [self._copy(r) for r in rows[:limit]]

    def list_rounds(self, table_id: str, after: int, limit: int) -> list[dict[str, Any]]:
        with self._database_lock:
            rounds = self._rounds.get(table_id, {})
            return [dict(rounds[n]) for n in sorted(rounds) if n > after][:limit]

    def get_shoes(self, table_id: str, numbers: list[int] | None = None) -> list[dict[str, Any]]:
        with self._database_lock:
            shoes = self._shoes.get(table_id, {})
            return [dict(shoes[n]) for n in sorted(shoes) if numbers is None or n in numbers]

    def seat_rounds(self, player: str, before: int, limit: int,
                    tables: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
        with self._database_lock:
            rows = self._seat_rounds.get(self.sealer.tag(player), {})
            return [dict(rows[k]) for k in sorted(rows, reverse=True)
                    if k < before and (tables is None or rows[k]["table_id"] in tables)][:limit]
