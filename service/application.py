"""The eventsourcing Application for tables: one method per use, each its own transaction.

Commands: ``open_table`` and ``execute`` (which routes a command to the table aggregate). Queries:
``current_state``, ``state_at_version``, ``state_at_moment``, ``events_page``, ``iter_events``, ``head``,
the read model's listings, and the audits (service/audit.py), which read the table through the small
TableHistory interface this class implements (service/history.py). Every command's result and ``head``
carry a receipt signed by the service's key (service/signing.py). Live streams of a table's events and of
every table's head (``table_feed``, ``heads_feed``) wait on the service's hub (service/streams.py).
"""

from __future__ import annotations

import copy
import hashlib
import logging
import pickle
import secrets
import threading
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
from service import audit, metrics, present, store, streams
from service.config import Settings
from service.groupcommit import GroupCommitter
from service.readmodel import Indexer
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

# A command that expects no particular version is re-decided on the fresh table when another write won the
# race: the rules are checked again, so a retry can never record what the rules forbid.
RETRIES = 5
MAX_PAGE = 1000
log = logging.getLogger("zametano.commands")
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
        follow: bool = False,
        group_commit: bool | None = None,
    ) -> None:
        """``follow``: keep the read model up to date in a background thread (a server does; tests and tools
        without it have each query index what it needs first). close() stops the thread. ``group_commit``
        (default: the settings' ZAMETANO_GROUP_COMMIT): commands of different tables decided at once by
        several threads are saved in one transaction (service/groupcommit.py)."""
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
            if group_commit is None:
                group_commit = settings.group_commit if settings is not None else False
            self.committer = GroupCommitter(self._save_together) if group_commit else None
            self._head_locks: dict[UUID, threading.Lock] = {}  # one a table; setdefault is atomic
            # Before the follower, which publishes to it.
            self.hub = streams.Hub(settings.max_streams if settings is not None else 32)
            self.index = Indexer(self, ROUND_MARKS)
            if follow:
                self.index.follow(streams.Publisher(self.hub, self.mapper))
        except BaseException:
            # built halfway (the database went away): close the connection pool it may have opened
            if getattr(self, "factory", None) is not None:
                self.factory.close()
            raise

    def construct_factory(self, env: Any) -> Any:
        factory = super().construct_factory(env)
        store.harden(factory, self.statement_timeout)
        return factory

    def construct_repository(self) -> Any:
        repository = super().construct_repository()
        repository.event_store = _FromItsHead(self.events)  # type: ignore[assignment]
        return repository

    def close(self) -> None:
        if getattr(self, "hub", None) is not None:
            self.hub.close()  # its streams end, and give their connections back
        # The follower first: it reads and writes through the connections the factory is about to close.
        if getattr(self, "index", None) is not None:
            self.index.close()
        super().close()

    def _notify(self, recordings: list[Any]) -> None:
        """After every save of this process: its streams hear of the tables' new versions at once, before the
        follower reads them from the log (the library's hook, called once the events are committed)."""
        hub = getattr(self, "hub", None)
        if hub is not None:
            hub.moved(streams.versions_of([r.domain_event for r in recordings if isinstance(r.domain_event, TableEvent)]))

    # --- commands ----------------------------------------------------------------------------------

    def open_table(self, game: str, players: Any, rules: Any, **roles: Any) -> dict[str, Any]:
        if game not in GAMES:
            raise BadArgument("game", f"Unknown game '{game}'; the games are: {', '.join(sorted(GAMES))}.")
        table = GAMES[game].open(players, rules if rules is not None else {}, self.clock(), **roles)
        self.save(table)
        return {**present.state(table), "receipt": self._receipt(table)}

    def execute(
        self,
        table_id: str,
        command: str,
        player: str,
        args: dict[str, Any],
        *,
        expected_version: int | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Runs one command and returns the receipt: new head version and digest, the appended events,
        the state. Nothing is appended unless every event of the command is. With ``expected_version`` the
        command is refused unless the table is still at that version; a repeated ``idempotency_key`` with the
        same command returns the first answer and appends nothing."""
        body_sha = hashlib.sha256(canonical_json({"command": command, "player": player, **args}).encode()).hexdigest()
        earlier = self._repeated(table_id, command, idempotency_key, body_sha)
        if earlier is not None:
            return earlier
        for attempt in range(RETRIES):
            table = self.table(table_id)
            first = table.version + 1
            try:
                if expected_version is not None and expected_version != table.version:
                    raise VersionMismatch(expected_version, table.version)
                table.handle(command, player, args, self.clock(), self.new_seed)
            except (DomainError, VersionMismatch) as refused:
                # The same key may have been recorded since it was looked up (a repeat that arrived while the
                # first was in flight reads the table after the first's commit): its response, not a refusal.
                earlier = self._repeated(table_id, command, idempotency_key, body_sha)
                if earlier is not None:
                    return earlier
                if isinstance(refused, VersionMismatch):
                    metrics.conflict("version_mismatch")
                raise
            appended = list(table.pending_events)
            try:
                self._commit(table, *_records(table_id, idempotency_key, body_sha, first, table.version))
            except IntegrityError:
                earlier = self._repeated(table_id, command, idempotency_key, body_sha)
                if earlier is not None:
                    return earlier
                if expected_version is not None or attempt == RETRIES - 1:
                    metrics.conflict("concurrent_write")
                    raise ConcurrentWrite() from None
                _retried(table_id, command, attempt + 1)
                continue
            return self._result(table, appended)
        raise AssertionError("unreachable")  # pragma: no cover

    def _commit(self, table: Table, *saved_with: Any) -> None:
        """One command's save: its own transaction, or a share of a group commit's."""
        if self.committer is None:
            self.save(table, *saved_with)
        else:
            self.committer.commit(table, *saved_with)

    def _save_together(self, *aggregates: Any) -> None:
        # Looked up at each call, not bound once: what save does is what a group commit does.
        self.save(*aggregates)

    def _repeated(self, table_id: str, command: str, key: str | None, body_sha: str) -> dict[str, Any] | None:
        """The first response of a repeated Idempotency-Key, else None."""
        earlier = None if key is None else self._earlier_response(table_id, key, body_sha)
        if earlier is not None:
            label = metrics.command_label(command)
            metrics.IDEMPOTENT_REPEATS.labels(label).inc()
            log.info("idempotent repeat of %s on table %s: the first response, nothing appended", label, table_id,
                     extra={"table_id": table_id, "command": label})
        return earlier

    def _earlier_response(self, table_id: str, key: str, body_sha: str) -> dict[str, Any] | None:
        try:
            record = self.repository.get(IdempotencyRecord.id_for(table_id, key))
        except AggregateNotFoundError:
            return None
        if record.body_sha256 != body_sha:
            raise IdempotencyKeyReused()
        table = self.table(table_id, version=record.last_version)
        events = self.events.get(self._uuid(table_id), gt=record.first_version - 1, lte=record.last_version)
        return self._result(table, list(events))

    def _result(self, table: Table, appended: list[Any]) -> dict[str, Any]:
        return present.command_result(table, appended, self._receipt(table))

    # --- queries -----------------------------------------------------------------------------------

    def current_state(self, table_id: str) -> dict[str, Any]:
        return present.state(self.table(table_id))

    def historic_state(
        self, table_id: str, version: int | None = None, at: datetime | None = None
    ) -> dict[str, Any]:
        if (version is None) == (at is None):
            raise BadArgument("version", "Give exactly one of 'version' (a version number) or 'at' (a moment).")
        if version is not None:
            return self.state_at_version(table_id, version)
        assert at is not None
        return self.state_at_moment(table_id, at)

    def state_at_version(self, table_id: str, version: int) -> dict[str, Any]:
        """The state exactly as the table showed it when ``version`` was its head (docs/design.md: the
        repository's versioned get, from the nearest snapshot, so the cost does not grow with history)."""
        head = self.table(table_id).version
        if not 1 <= version <= head:
            versions = "only version 1" if head == 1 else f"versions 1 to {head}"
            raise NotFoundInHistory(f"Table '{table_id}' has {versions}; there is no version {version}.")
        return self.state_at(table_id, version)

    def state_at_moment(self, table_id: str, moment: datetime) -> dict[str, Any]:
        """The state after the last event with timestamp <= ``moment``. Timestamps of a table strictly
        increase with its versions, so a binary search reads about log2(n) single events, never the log."""
        if moment.tzinfo is None:
            raise BadArgument("at", "A moment must carry its UTC offset.")
        head = self.table(table_id)
        if head.modified_on <= moment:
            return self.state_at(table_id, head.version)
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
        return self.state_at(table_id, low)

    def events_page(self, table_id: str, after: int = 0, limit: int = 100) -> dict[str, Any]:
        self.require_table(table_id)  # not the table's state: a log with damage further on still pages up to it
        limit = max(1, min(limit, MAX_PAGE))
        after = min(max(after, 0), MAX_NUMBER)
        stored = self.recorder.select_events(self._uuid(table_id), gt=after, limit=limit + 1)
        more = len(stored) > limit
        events = self._decoded(table_id, stored[:limit])  # the row that only tells of more is not read
        return {
            "events": present.events(events),
            "next_after": events[-1].originator_version if more else None,
        }

    def iter_events(self, table_id: str, after: int = 0, batch: int = 500) -> Iterator[dict[str, Any]]:
        """The whole log from ``after`` on, read in batches so a long table streams in bounded memory."""
        self.require_table(table_id)
        after = min(max(after, 0), MAX_NUMBER)
        while True:
            events = self.read_events(table_id, after=after, limit=batch)
            yield from present.events(events)
            if len(events) < batch:
                return
            after = events[-1].originator_version

    # --- live streams (service/streams.py) -------------------------------------------------------------

    def table_feed(self, table_id: str, after: int = 0, heartbeat: float = 15.0) -> streams.TableFeed:
        """The table's events after version ``after``, then each new one as it is recorded (an iterator that
        gives None where a heartbeat is due; close() it). TableNotFound, DamagedLog (its first page) and
        StreamRefused (this process holds its ``max_streams``, or is stopping) come at once."""
        return streams.TableFeed(self, self.hub, table_id, min(max(after, 0), MAX_NUMBER), heartbeat)

    def heads_feed(self, after: int | None = None, heartbeat: float = 15.0) -> streams.HeadFeed:
        """Every table's head as it changes, after position ``after`` of the log (None: from now on)."""
        return streams.HeadFeed(self, self.hub, None if after is None else min(max(after, 0), MAX_NUMBER), heartbeat)

    def head_changes(self, after: int, limit: int) -> tuple[list[streams.HeadChange], int, bool]:
        """Each table's last change among the (at most ``limit``) notifications after position ``after``, the
        position read up to, and whether that was the end of the log."""
        notes = self.recorder.select_notifications(after, limit, inclusive_of_start=False)
        heads, _ = streams.heads_of(notes, self.mapper)
        return heads, notes[-1].id if notes else after, len(notes) < limit

    def log_position(self) -> int:
        """The position of the last event recorded in the notification log (0: none)."""
        return self.recorder.max_notification_id() or 0

    def list_tables(self, game: str | None = None, after: int = 0, limit: int = 50) -> dict[str, Any]:
        """Tables in the order they were opened, from the read model (up to date with the log); a page starts
        after the position ``after``, the ``next_after`` of the page before."""
        self.index.bring_up_to_date()
        after = min(max(after, 0), MAX_NUMBER)
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
            "next_after": rows[-1]["seq"] if more else None,
        }

    def list_rounds(self, table_id: str, after: int = 0, limit: int = 50) -> dict[str, Any]:
        """A table's finished rounds after round ``after``, oldest first; ``index_error`` says where the list
        stops if the read model could not index the whole table."""
        self.require_table(table_id)
        self.index.bring_up_to_date()
        after = min(max(after, 0), MAX_NUMBER)
        limit = max(1, min(limit, MAX_PAGE))
        rows = self.index.view.list_rounds(str(self._uuid(table_id)), after, limit + 1)
        more = len(rows) > limit
        rows = rows[:limit]
        return {
            "rounds": [{k: v for k, v in r.items() if k != "table_id"} for r in rows],
            "next_after": rows[-1]["round"] if more else None,
            "index_error": self.index_error(table_id),
        }

    def read_model_status(self) -> dict[str, Any]:
        """How far the read model is behind the log (``lag``, in events) and whether a follower keeps it up."""
        return self.index.status()

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

    # --- what the audits read (service/history.py) ---------------------------------------------------

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
        rows: list[tuple[int, TableEvent | None]] = []
        for stored in self.recorder.select_events(self._uuid(table_id), gt=after, lte=upto, limit=limit):
            try:
                event = self.mapper.to_domain_event(stored)
                present.event(event)  # type: ignore[arg-type] - a field missing from the stored form shows here
                if not isinstance(event, TableEvent):
                    raise TypeError(type(event).__name__)
            except Exception:  # noqa: BLE001 - any failure to decode a stored event is what an auditor must hear of
                event = None
            rows.append((stored.originator_version, event))
        return rows

    def read_events(
        self, table_id: str, *, after: int = 0, upto: int | None = None, limit: int | None = None,
        newest_first: bool = False,
    ) -> list[TableEvent]:
        """Stored events of a table, decoded; a row that cannot be read is a DamagedLog naming its version."""
        rows = self.recorder.select_events(self._uuid(table_id), gt=after, lte=upto, desc=newest_first, limit=limit)
        return self._decoded(table_id, rows)

    def snapshot_version(self, table_id: str) -> int | None:
        if self.snapshots is None:
            return None
        found = self.snapshots.recorder.select_events(self._uuid(table_id), desc=True, limit=1)
        return found[0].originator_version if found else None

    def state_at(self, table_id: str, version: int) -> dict[str, Any]:
        """The state the table showed when ``version`` was its head, with ``as_of``; DamagedLog where the
        stored history cannot give it."""
        table = self.table(table_id, version=version)
        state = present.state(table)
        following = self.read_events(table_id, after=version, upto=version + 1)
        if following and following[0].command == table.commands:  # type: ignore[attr-defined]
            state["expects"] = []  # between two events of one command nothing is expected
        state["as_of"] = {"version": version, "timestamp": format_timestamp(table.modified_on)}
        return state

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

    def indexed_shoes(self, table_id: str, numbers: list[int]) -> list[dict[str, Any]]:
        return self.index.view.get_shoes(str(self._uuid(table_id)), numbers)

    def index_error(self, table_id: str) -> dict[str, Any] | None:
        """Where and why the read model stopped indexing this table, or None if it holds all of it."""
        row = self.indexed_table(table_id)
        if row is None:
            return {"version": 1, "message": "the read model holds nothing of this table yet"}
        return row["index_error"]

    # --- helpers -----------------------------------------------------------------------------------

    def _uuid(self, table_id: str) -> UUID:
        try:
            return UUID(str(table_id))
        except ValueError:
            raise TableNotFound(table_id) from None

    def table(self, table_id: str, version: int | None = None) -> Table:
        """The table at its head or at a version, from the cache or the nearest snapshot and the events after
        it. A stored history that cannot give it (a version missing, a row that cannot be read, a snapshot
        ahead of the log) is a DamagedLog, never a table silently built from part of its history."""
        uuid = self._uuid(table_id)
        replay = _Replay()
        try:
            # The copy of a cached table is ours to make (see _private_copy), not the repository's deepcopy.
            if version is None and self.repository.cache is not None:
                # The library fast-forwards the cached table in place and copies it after releasing its own
                # lock: with several request threads a copy could catch another thread's fast-forward half
                # done. Getting and copying under one lock per table (in this process) rules that out.
                with self._head_locks.setdefault(uuid, threading.Lock()):
                    table = self.repository.get(uuid, projector_func=replay, deepcopy_from_cache=False)
                    table = _private_copy(table)
            else:
                table = self.repository.get(uuid, version=version, projector_func=replay, deepcopy_from_cache=False)
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


    def _decoded(self, table_id: str, rows: list[Any]) -> list[TableEvent]:
        events = []
        for stored in rows:
            try:
                event = self.mapper.to_domain_event(stored)
                present.event(event)  # type: ignore[arg-type] - a field missing from the stored form shows here
            except Exception as exc:  # noqa: BLE001 - whatever the damage, the row is unreadable
                version = stored.originator_version
                raise DamagedLog(table_id, f"the stored event at version {version} cannot be read", version) from exc
            if not isinstance(event, TableEvent):
                raise TableNotFound(table_id)
            events.append(event)
        return events  # type: ignore[return-value]

    def _event(self, table_id: str, version: int) -> TableEvent:
        found = self.read_events(table_id, after=version - 1, upto=version)
        if not found:
            raise DamagedLog(table_id, f"version {version} is missing from the log", version)
        return found[0]

    def _receipt(self, table: Table) -> dict[str, Any]:
        # The head event's own timestamp, not the signing time: re-signing a head gives the same receipt.
        return self.signer.sign_receipt(str(table.id), table.version, table.head, format_timestamp(table.modified_on))


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


def _private_copy(table: Any) -> Any:
    """A copy of a cached table that a command may change, refused or not, without touching the cache. A
    pickle round trip copies a table in half the time deepcopy takes, and keeps what deepcopy keeps (shared
    references stay shared); deepcopy remains for whatever pickle cannot write."""
    try:
        return pickle.loads(pickle.dumps(table, pickle.HIGHEST_PROTOCOL))
    except (pickle.PicklingError, TypeError, AttributeError):
        return copy.deepcopy(table)


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


def _retried(table_id: str, command: str, attempt: int) -> None:
    label = metrics.command_label(command)
    metrics.RETRIES.labels(label).inc()
    log.info("%s on table %s decided again (retry %d): another write to the table came first", label, table_id,
             attempt, extra={"table_id": table_id, "command": label})


def _records(table_id: str, key: str | None, body_sha: str, first: int, last: int) -> list[IdempotencyRecord]:
    """What a keyed command saves with its events: which versions it appended, under its key."""
    if key is None:
        return []
    record = IdempotencyRecord._create(
        IdempotencyRecord.Created, id=IdempotencyRecord.id_for(table_id, key), table_id=table_id,
        body_sha256=body_sha, first_version=first, last_version=last,
    )
    return [record]
