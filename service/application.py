"""The eventsourcing Application for tables: one method per use, each its own transaction.

Commands: ``open_table`` and ``execute`` (which routes a command to the table aggregate). Queries:
``current_state``, ``state_at_version``, ``state_at_moment``, ``events_page``, ``iter_events``, ``head``.
Every command's result and ``head`` carry a receipt signed by the service's key (service/signing.py).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.domain import Aggregate, OriginatorVersionError
from eventsourcing.persistence import IntegrityError, PersistenceError

from domain.chain import canonical_json, format_timestamp
from domain.errors import BadArgument, DomainError
from domain.games import GAMES, ROUND_MARKS
from domain.shuffle import SEED_BYTES
from domain.table import Table, TableEvent
from service import audit, store
from service.config import Settings
from service.index import Indexer
from service.signing import Signer, load_signer
from service.errors import (
    ConcurrentWrite,
    DamagedLog,
    IdempotencyKeyReused,
    NotFoundInHistory,
    ServiceError,
    StoreUnreadable,
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
# How many of the newest events the start-up check tries to read before it calls the store unreadable.
CHECKED_EVENTS = 5


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
    snapshotting_intervals = {game.table: 50 for game in GAMES.values()}

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        clock: Clock = utc_now,
        new_seed: SeedSource = fresh_seed,
        env: dict[str, str] | None = None,
        signer: Signer | None = None,
    ) -> None:
        # The key first: a key that cannot be used stops start-up before the store is touched.
        if signer is None:
            signer = load_signer(settings) if settings is not None else Signer.in_memory()
        self.signer = signer
        merged = dict(settings.persistence) if settings else {}
        merged.update(env or {})
        self.statement_timeout = settings.statement_timeout if settings else 0.0
        try:
            super().__init__(env=merged)
            if settings is not None:
                self.snapshotting_intervals = {game.table: settings.snapshot_interval for game in GAMES.values()}
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
        return {**self._state(table), "receipt": self._receipt(table)}

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
            first = table.version + 1
            try:
                if if_match is not None and if_match != str(table.version):
                    raise VersionMismatch(if_match, table.version)
                table.handle(command, player, args, self.clock(), self.new_seed)
            except (DomainError, VersionMismatch):
                # The same key may have been recorded since it was looked up (a repeat that arrived while the
                # first was in flight reads the table after the first's commit): its response, not a refusal.
                if idempotency_key is not None:
                    earlier = self._earlier_response(table_id, idempotency_key, body_sha)
                    if earlier is not None:
                        return earlier
                raise
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
                "receipt": self._receipt(table),
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
            "receipt": self._receipt(table),
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
        self._known(table_id)  # not the table's state: a log with damage further on still pages up to it
        limit = max(1, min(limit, MAX_PAGE))
        after = min(max(after, 0), MAX_NUMBER)
        stored = self.recorder.select_events(self._uuid(table_id), gt=after, limit=limit + 1)
        more = len(stored) > limit
        events = self._decoded(table_id, stored[:limit])  # the row that only tells of more is not read
        return {
            "events": [event_dict(e) for e in events],
            "next_after": events[-1].originator_version if more else None,
        }

    def iter_events(self, table_id: str, after: int = 0, batch: int = 500) -> Iterator[dict[str, Any]]:
        """The whole log from ``after`` on, read in batches so a long table streams in bounded memory."""
        self._known(table_id)
        after = min(max(after, 0), MAX_NUMBER)
        while True:
            events = self._read(table_id, gt=after, limit=batch)
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
                {k: r[k] for k in ("table_id", "game", "players", "opened_at", "version", "updated_at", "rounds",
                                   "index_error")}
                for r in rows
            ],
            "next_cursor": str(rows[-1]["seq"]) if more else None,
        }

    def list_rounds(self, table_id: str, cursor: str | None = None, limit: int = 50) -> dict[str, Any]:
        """A table's finished rounds, oldest first; ``index_error`` says where the list stops if the read model
        could not index the whole table."""
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
            "index_error": self.index_error(table_id),
        }

    def index_error(self, table_id: str) -> dict[str, Any] | None:
        """Where and why the read model stopped indexing this table, or None if it holds all of it."""
        uuid = str(self._uuid(table_id))
        row = self.index.view.get_tables([uuid]).get(uuid)
        if row is None:
            return {"version": 1, "message": "the read model holds nothing of this table yet"}
        return row["index_error"]

    def round_audit(self, table_id: str, number: int) -> dict[str, Any]:
        """One finished round with its record and checks (service/audit.py)."""
        return audit.round_audit(self, table_id, number)

    def verify(self, table_id: str) -> dict[str, Any]:
        """The whole table verified (service/audit.py)."""
        return audit.verify(self, table_id)

    def head(self, table_id: str) -> dict[str, Any]:
        """The table's head event (version, digest, timestamp) and a receipt for it: one read, however
        long the table."""
        uuid = self._uuid(table_id)
        last = next(iter(self.events.get(uuid, desc=True, limit=1)), None)
        if not isinstance(last, TableEvent):
            raise TableNotFound(table_id)
        receipt = self.signer.sign_receipt(str(uuid), last.originator_version, last.digest, last.timestamp_text)
        return {k: receipt[k] for k in ("table_id", "version", "digest", "timestamp")} | {"receipt": receipt}

    def signing_keys(self) -> dict[str, Any]:
        """Every key receipts were signed with, the current one first (the body of GET /keys)."""
        return {"keys": self.signer.keys()}

    def check_store(self) -> None:
        """Raises StoreUnreadable unless this configuration reads what is stored. A wrong CIPHER_KEY would
        otherwise start a service whose old tables fail and whose new ones are written under another key.
        Any of the newest few events will do (one damaged event is the audit's business, not a reason to
        stop); an empty store is readable with any key."""
        newest = self.recorder.max_notification_id()
        if not newest:
            return
        failures = []
        for note in self.recorder.select_notifications(max(1, newest - CHECKED_EVENTS + 1), CHECKED_EVENTS):
            try:
                self.mapper.to_domain_event(note)
                return
            except Exception as exc:  # noqa: BLE001 - whatever stops reading is what the operator must hear of
                failures.append(exc)
        if failures:
            cause = failures[-1].__cause__ or failures[-1]
            key = "with this CIPHER_KEY" if self.mapper.cipher is not None else "without a CIPHER_KEY"
            raise StoreUnreadable(
                f"The stored events cannot be read {key} ({type(cause).__name__}: {cause}); start with the "
                "CIPHER_KEY and COMPRESSOR_TOPIC they were written with."
            )

    def ping(self) -> None:
        """Raises StoreUnavailable unless the event store answers within a couple of seconds."""
        store.ping(self)

    # --- helpers -----------------------------------------------------------------------------------

    def _known(self, table_id: str) -> None:
        """Raises TableNotFound unless the table has a stored event (one read of one raw row: a table whose
        first rows were deleted or damaged still exists, so that its audit can say what is wrong)."""
        if not self.recorder.select_events(self._uuid(table_id), limit=1):
            raise TableNotFound(table_id)

    def _uuid(self, table_id: str) -> UUID:
        try:
            return UUID(str(table_id))
        except ValueError:
            raise TableNotFound(table_id) from None

    def _get(self, table_id: str, version: int | None = None) -> Table:
        """The table at its head or at a version, from the cache or the nearest snapshot and the events after
        it. A stored history that cannot give it (a version missing, a row that cannot be read, a snapshot
        ahead of the log) is a DamagedLog, never a table silently built from part of its history."""
        uuid = self._uuid(table_id)
        replay = _Replay()
        try:
            table = self.repository.get(uuid, version=version, projector_func=replay)
        except AggregateNotFoundError:
            raise TableNotFound(table_id) from None
        except (PersistenceError, ServiceError):
            raise  # the store down or busy (503), not a damaged log
        except Exception as exc:
            if store.as_outage(exc) is not None:
                raise
            # The repository mutates a cached table in place: one caught up from a damaged log must not be
            # served from the cache next time.
            self._forget(uuid)
            raise self._damage(table_id, uuid, exc) from exc
        if not isinstance(table, Table):
            raise TableNotFound(table_id)
        return table

    def _damage(self, table_id: str, uuid: UUID, exc: Exception) -> DamagedLog:
        """What a failed rebuild says of the log, in its words (a read or two, on this rare path only)."""
        if isinstance(exc, OriginatorVersionError):
            found, expected = exc.args[:2]
            return DamagedLog(table_id, _gap_detail(found, expected), expected)
        if isinstance(exc, _NotFromHead):
            below = self.recorder.select_events(uuid, lte=exc.head, desc=True, limit=1)
            end = below[0].originator_version if below else 0
            if exc.found is not None:
                detail = _gap_detail(exc.found, end + 1)
            elif exc.snapshot is not None:
                detail = f"the snapshot at version {exc.snapshot} is ahead of the log, which ends at {end}"
            else:
                detail = f"this server's copy of the table is at version {exc.head}, but the log now ends at {end}"
            return DamagedLog(table_id, detail, end + 1)
        if isinstance(exc, _Unreadable):
            if exc.after is not None:  # rows are decoded while projected: the next stored row is the bad one
                bad = self.recorder.select_events(uuid, gt=exc.after, limit=1)
                version = bad[0].originator_version if bad else exc.after + 1
                return DamagedLog(table_id, f"the stored event at version {version} cannot be read", version)
            return DamagedLog(table_id, exc.detail, exc.version)
        # Only the snapshot is decoded outside the replay.
        return DamagedLog(table_id, f"its latest snapshot cannot be read ({type(exc).__name__})")

    def _forget(self, uuid: UUID) -> None:
        if self.repository.cache is not None:
            try:
                self.repository.cache.get(uuid, evict=True)
            except KeyError:
                pass

    def construct_repository(self) -> Any:
        repository = super().construct_repository()
        repository.event_store = _FromItsHead(self.events)  # type: ignore[assignment]
        return repository

    def _read(self, table_id: str, **query: Any) -> list[TableEvent]:
        """Stored events of a table, decoded; a row that cannot be read is a DamagedLog naming its version."""
        return self._decoded(table_id, self.recorder.select_events(self._uuid(table_id), **query))

    def _decoded(self, table_id: str, rows: list[Any]) -> list[TableEvent]:
        events = []
        for stored in rows:
            try:
                event = self.mapper.to_domain_event(stored)
                event.public()  # type: ignore[attr-defined] - a field missing from the stored form shows here
            except Exception as exc:  # noqa: BLE001 - whatever the damage, the row is unreadable
                version = stored.originator_version
                raise DamagedLog(table_id, f"the stored event at version {version} cannot be read", version) from exc
            if not isinstance(event, TableEvent):
                raise TableNotFound(table_id)
            events.append(event)
        return events  # type: ignore[return-value]

    def _event(self, table_id: str, version: int) -> TableEvent:
        found = self._read(table_id, gt=version - 1, lte=version)
        if not found:
            raise DamagedLog(table_id, f"version {version} is missing from the log", version)
        return found[0]

    def _historic_state(self, table_id: str, version: int) -> dict[str, Any]:
        table = self._get(table_id, version=version)
        state = self._state(table)
        following = self._read(table_id, gt=version, lte=version + 1)
        if following and following[0].command == table.commands:  # type: ignore[attr-defined]
            state["expects"] = []  # between two events of one command nothing is expected
        state["as_of"] = {"version": version, "timestamp": format_timestamp(table.modified_on)}
        return state

    def _receipt(self, table: Table) -> dict[str, Any]:
        # The head event's own timestamp, not the signing time: re-signing a head gives the same receipt.
        return self.signer.sign_receipt(str(table.id), table.version, table.head, format_timestamp(table.modified_on))

    @staticmethod
    def _state(table: Table) -> dict[str, Any]:
        return {"table_id": str(table.id), "version": table.version, "digest": table.head, **table.view()}


class _Unreadable(Exception):
    def __init__(self, detail: str, version: int | None, after: int | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.version = version
        self.after = after  # set when the row after this version could not be decoded


class _NotFromHead(Exception):
    """The table (cached, or from a snapshot) stands at ``head``, but the log has no event at ``head``: it
    has ``found`` next (a version missing) or nothing from there on (the log was cut short behind it)."""

    def __init__(self, head: int, found: int | None) -> None:
        super().__init__(head, found)
        self.head = head
        self.found = found
        self.snapshot: int | None = None  # set when the table at ``head`` came from a snapshot


class _FromItsHead:
    """The repository's reads of the event store. Where it asks for the events after a version it holds
    (a cached table's head, a snapshot's version), the same query also reads the row at that version, so
    that a table whose own last event is gone from the log is noticed without another database read."""

    def __init__(self, events: Any) -> None:
        self.events = events

    def get(self, originator_id: Any, *, gt: int | None = None, lte: int | None = None, desc: bool = False,
            limit: int | None = None) -> Iterator[Any]:
        if gt is None or gt < 1 or desc or limit is not None:
            return self.events.get(originator_id, gt=gt, lte=lte, desc=desc, limit=limit)
        rows = self.events.recorder.select_events(originator_id, gt=gt - 1, lte=lte)
        return self._after(gt, rows)

    def _after(self, head: int, rows: list[Any]) -> Iterator[Any]:
        # A generator: the check runs while the repository projects, where _Replay knows what ``head`` is.
        if not rows or rows[0].originator_version != head:
            raise _NotFromHead(head, rows[0].originator_version if rows else None)
        for row in rows[1:]:
            yield self.events.mapper.to_domain_event(row)


class _Replay:
    """The repository's projector. It names the stored row it could not read (rows are decoded lazily,
    while they are projected), and says whether a table ahead of its log came from a snapshot."""

    def __init__(self) -> None:
        self.snapshot: int | None = None

    def __call__(self, table: Any, items: Any) -> Any:
        items = iter(items)
        last = table.version if table is not None else 0
        while True:
            try:
                item = next(items)
            except StopIteration:
                return table
            except _NotFromHead as exc:
                exc.snapshot = self.snapshot
                raise
            except PersistenceError:
                raise
            except Exception as exc:  # noqa: BLE001 - a row that cannot be decoded
                raise _Unreadable(f"the stored event after version {last} cannot be read", last + 1, last) from exc
            if not isinstance(item, TableEvent):
                self.snapshot = item.originator_version
            try:
                table = item.mutate(table)
            except OriginatorVersionError:
                raise
            except Exception as exc:  # noqa: BLE001 - a row decoded with fields missing or of the wrong kind
                version = item.originator_version
                raise _Unreadable(f"the stored event at version {version} cannot be applied", version) from exc
            last = item.originator_version


def _gap_detail(found: int, expected: int) -> str:
    """What OriginatorVersionError(found, expected) means for a table's log."""
    if found > expected:
        missing = f"version {expected} is" if found == expected + 1 else f"versions {expected} to {found - 1} are"
        return f"{missing} missing: the log goes from {expected - 1} to {found}"
    return f"version {found} comes where {expected} was expected: the log is out of order"


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
