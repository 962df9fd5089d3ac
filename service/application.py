"""The eventsourcing Application for tables: one method per use, each its own transaction.

Commands: ``open_table`` and ``execute`` (which routes a command to the table aggregate). Queries:
``current_state``, ``state_at_version``, ``state_at_moment``, ``events_page``, ``iter_events``.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import IntegrityError

from domain.chain import canonical_json, format_timestamp
from domain.errors import BadArgument
from domain.games import GAMES, ROUND_MARKS
from domain.shuffle import SEED_BYTES
from domain.table import Table, TableEvent
from service import audit, store
from service.config import Settings
from service.index import Indexer
from service.errors import (
    ConcurrentWrite,
    IdempotencyKeyReused,
    NotFoundInHistory,
    TableNotFound,
    VersionMismatch,
)

Clock = Callable[[], datetime]
SeedSource = Callable[[], bytes]

# A command without If-Match is re-decided on the fresh table when another write won the race:
# the rules are checked again, so a retry can never record what the rules forbid.
RETRIES = 5
MAX_PAGE = 1000
# Versions, rounds and cursors past this cannot exist, and would overflow a database integer.
MAX_NUMBER = 2**62


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def fresh_seed() -> bytes:
    return secrets.token_bytes(SEED_BYTES)


class IdempotencyRecord(Aggregate):
    """Remembers which versions a keyed command appended; saved atomically with the table's events,
    so a repeated key can never append twice, even from two server processes at once."""

    class Created(Aggregate.Created):
        table_id: str
        body_sha256: str
        first_version: int
        last_version: int

    def __init__(self, table_id: str, body_sha256: str, first_version: int, last_version: int) -> None:
        self.table_id = table_id
        self.body_sha256 = body_sha256
        self.first_version = first_version
        self.last_version = last_version

    @staticmethod
    def id_for(table_id: str, key: str) -> UUID:
        return uuid5(NAMESPACE_URL, f"zametano:idempotency:{table_id}:{key}")


class TablesService(Application):
    name = "Zametano"
    snapshotting_intervals = {cls: 50 for cls in GAMES.values()}

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        clock: Clock = utc_now,
        new_seed: SeedSource = fresh_seed,
        env: dict[str, str] | None = None,
    ) -> None:
        merged = dict(settings.persistence) if settings else {}
        merged.update(env or {})
        self.statement_timeout = settings.statement_timeout if settings else 0.0
        try:
            super().__init__(env=merged)
            if settings is not None:
                self.snapshotting_intervals = {cls: settings.snapshot_interval for cls in GAMES.values()}
            self.clock = clock
            self.new_seed = new_seed
            self.index = Indexer(self, ROUND_MARKS)
        except BaseException:
            # built halfway (the database went away): close the connection pool it may have opened
            if getattr(self, "factory", None) is not None:
                self.factory.close()
            raise

    def construct_factory(self, env: Any) -> Any:
        factory = super().construct_factory(env)
        store.harden(factory, self.statement_timeout)
        return factory

    # --- commands ----------------------------------------------------------------------------------

    def open_table(self, game: str, players: Any, rules: Any, **roles: Any) -> dict[str, Any]:
        if game not in GAMES:
            raise BadArgument("game", f"Unknown game '{game}'; the games are: {', '.join(sorted(GAMES))}.")
        table = GAMES[game].open(players, rules if rules is not None else {}, self.clock(), **roles)
        self.save(table)
        return self._state(table)

    def execute(
        self,
        table_id: str,
        command: str,
        player: str,
        args: dict[str, Any],
        *,
        if_match: str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Runs one command and returns the receipt: new head version and digest, the appended events,
        the state. Nothing is appended unless every event of the command is."""
        body_sha = hashlib.sha256(
            canonical_json({"command": command, "player": player, **args}).encode()
        ).hexdigest()
        if idempotency_key is not None:
            earlier = self._earlier_response(table_id, idempotency_key, body_sha)
            if earlier is not None:
                return earlier
        for attempt in range(RETRIES):
            table = self._get(table_id)
            if if_match is not None and if_match != str(table.version):
                raise VersionMismatch(if_match, table.version)
            first = table.version + 1
            table.handle(command, player, args, self.clock(), self.new_seed)
            appended = list(table.pending_events)
            to_save: list[Aggregate] = [table]
            if idempotency_key is not None:
                to_save.append(
                    IdempotencyRecord._create(
                        IdempotencyRecord.Created,
                        id=IdempotencyRecord.id_for(table_id, idempotency_key),
                        table_id=table_id,
                        body_sha256=body_sha,
                        first_version=first,
                        last_version=table.version,
                    )
                )
            try:
                self.save(*to_save)
            except IntegrityError:
                if idempotency_key is not None:
                    earlier = self._earlier_response(table_id, idempotency_key, body_sha)
                    if earlier is not None:
                        return earlier
                if if_match is not None or attempt == RETRIES - 1:
                    raise ConcurrentWrite() from None
                continue
            return {
                "version": table.version,
                "digest": table.head,
                "events": [event_dict(e) for e in appended],
                "state": self._state(table),
            }
        raise AssertionError("unreachable")  # pragma: no cover

    def _earlier_response(self, table_id: str, key: str, body_sha: str) -> dict[str, Any] | None:
        try:
            record = self.repository.get(IdempotencyRecord.id_for(table_id, key))
        except AggregateNotFoundError:
            return None
        if record.body_sha256 != body_sha:
            raise IdempotencyKeyReused()
        table = self._get(table_id, version=record.last_version)
        events = self.events.get(self._uuid(table_id), gt=record.first_version - 1, lte=record.last_version)
        return {
            "version": table.version,
            "digest": table.head,
            "events": [event_dict(e) for e in events],
            "state": self._state(table),
        }

    # --- queries -----------------------------------------------------------------------------------

    def current_state(self, table_id: str) -> dict[str, Any]:
        return self._state(self._get(table_id))

    def historic_state(
        self, table_id: str, version: int | None = None, at: datetime | None = None
    ) -> dict[str, Any]:
        if (version is None) == (at is None):
            raise BadArgument("version", "Give exactly one of 'version' (a version number) or 'at' (an RFC 3339 time).")
        if version is not None:
            return self.state_at_version(table_id, version)
        assert at is not None
        return self.state_at_moment(table_id, at)

    def state_at_version(self, table_id: str, version: int) -> dict[str, Any]:
        """The state exactly as the table showed it when ``version`` was its head (DESIGN.md: the
        repository's versioned get, from the nearest snapshot, so the cost does not grow with history)."""
        head = self._get(table_id).version
        if not 1 <= version <= head:
            raise NotFoundInHistory(f"Table '{table_id}' has versions 1 to {head}; there is no version {version}.")
        return self._historic_state(table_id, version)

    def state_at_moment(self, table_id: str, moment: datetime) -> dict[str, Any]:
        """The state after the last event with timestamp <= ``moment``. Timestamps of a table strictly
        increase with its versions, so a binary search reads about log2(n) single events, never the log."""
        if moment.tzinfo is None:
            raise BadArgument("at", "'at' must carry a UTC offset, e.g. 2026-11-29T20:15:03.123456+00:00.")
        head = self._get(table_id)
        if head.modified_on <= moment:
            return self._historic_state(table_id, head.version)
        low, high = 0, head.version  # invariant: event `low` is at or before the moment, `high` after
        while high - low > 1:
            mid = (low + high) // 2
            if self._event(table_id, mid).timestamp <= moment:
                low = mid
            else:
                high = mid
        if low == 0:
            raise NotFoundInHistory(
                f"Table '{table_id}' did not exist at {format_timestamp(moment)}; "
                f"it was opened at {format_timestamp(self._event(table_id, 1).timestamp)}."
            )
        return self._historic_state(table_id, low)

    def events_page(self, table_id: str, after: int = 0, limit: int = 100) -> dict[str, Any]:
        uuid = self._uuid(table_id)
        self._get(table_id)
        limit = max(1, min(limit, MAX_PAGE))
        after = min(max(after, 0), MAX_NUMBER)
        events = list(self.events.get(uuid, gt=after, limit=limit + 1))
        more = len(events) > limit
        events = events[:limit]
        return {
            "events": [event_dict(e) for e in events],
            "next_after": events[-1].originator_version if more else None,
        }

    def iter_events(self, table_id: str, after: int = 0, batch: int = 500) -> Iterator[dict[str, Any]]:
        """The whole log from ``after`` on, read in batches so a long table streams in bounded memory."""
        uuid = self._uuid(table_id)
        self._get(table_id)
        after = min(max(after, 0), MAX_NUMBER)
        while True:
            events = list(self.events.get(uuid, gt=after, limit=batch))
            for e in events:
                yield event_dict(e)
            if len(events) < batch:
                return
            after = events[-1].originator_version

    def list_tables(self, game: str | None = None, cursor: str | None = None, limit: int = 50) -> dict[str, Any]:
        """Tables in the order they were opened, from the read model (caught up from the log first)."""
        self.index.catch_up()
        after = _cursor(cursor)
        limit = max(1, min(limit, MAX_PAGE))
        rows = self.index.view.list_tables(game, after, limit + 1)
        more = len(rows) > limit
        rows = rows[:limit]
        return {
            "tables": [
                {k: r[k] for k in ("table_id", "game", "players", "opened_at", "version", "updated_at", "rounds")}
                for r in rows
            ],
            "next_cursor": str(rows[-1]["seq"]) if more else None,
        }

    def list_rounds(self, table_id: str, cursor: str | None = None, limit: int = 50) -> dict[str, Any]:
        """A table's finished rounds, oldest first."""
        self._known(table_id)
        self.index.catch_up()
        after = _cursor(cursor)
        limit = max(1, min(limit, MAX_PAGE))
        rows = self.index.view.list_rounds(str(self._uuid(table_id)), after, limit + 1)
        more = len(rows) > limit
        rows = rows[:limit]
        return {
            "rounds": [{k: v for k, v in r.items() if k != "table_id"} for r in rows],
            "next_cursor": str(rows[-1]["round"]) if more else None,
        }

    def round_audit(self, table_id: str, number: int) -> dict[str, Any]:
        """One finished round with its record and checks (service/audit.py)."""
        return audit.round_audit(self, table_id, number)

    def verify(self, table_id: str) -> dict[str, Any]:
        """The whole table verified (service/audit.py)."""
        return audit.verify(self, table_id)

    def ping(self) -> None:
        """Raises StoreUnavailable unless the event store answers within a couple of seconds."""
        store.ping(self)

    # --- helpers -----------------------------------------------------------------------------------

    def _known(self, table_id: str) -> None:
        """Raises TableNotFound unless the table exists (its first event, one read)."""
        if not list(self.events.get(self._uuid(table_id), lte=1)):
            raise TableNotFound(table_id)

    def _uuid(self, table_id: str) -> UUID:
        try:
            return UUID(str(table_id))
        except ValueError:
            raise TableNotFound(table_id) from None

    def _get(self, table_id: str, version: int | None = None) -> Table:
        try:
            table = self.repository.get(self._uuid(table_id), version=version)
        except AggregateNotFoundError:
            raise TableNotFound(table_id) from None
        if not isinstance(table, Table):
            raise TableNotFound(table_id)
        return table

    def _event(self, table_id: str, version: int) -> TableEvent:
        (event,) = self.events.get(self._uuid(table_id), gt=version - 1, lte=version)
        return event  # type: ignore[return-value]

    def _historic_state(self, table_id: str, version: int) -> dict[str, Any]:
        table = self._get(table_id, version=version)
        state = self._state(table)
        following = list(self.events.get(self._uuid(table_id), gt=version, lte=version + 1))
        if following and following[0].command == table.commands:  # type: ignore[attr-defined]
            state["expects"] = []  # between two events of one command nothing is expected
        state["as_of"] = {"version": version, "timestamp": format_timestamp(table.modified_on)}
        return state

    @staticmethod
    def _state(table: Table) -> dict[str, Any]:
        return {"table_id": str(table.id), "version": table.version, "digest": table.head, **table.view()}


def event_dict(event: Any) -> dict[str, Any]:
    """An event as the events API shows it: the envelope, the data, never an unrevealed seed."""
    return event.public()


def _cursor(cursor: str | None) -> int:
    if cursor in (None, ""):
        return 0
    try:
        value = int(cursor)  # type: ignore[arg-type]
    except ValueError:
        raise BadArgument("cursor", "'cursor' is the 'next_cursor' of the previous page.") from None
    if not 0 <= value <= MAX_NUMBER:
        raise BadArgument("cursor", "'cursor' is the 'next_cursor' of the previous page.")
    return value
