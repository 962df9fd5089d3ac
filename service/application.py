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
from service import audit
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
        super().__init__(env=merged)
        if settings is not None:
            self.snapshotting_intervals = {cls: settings.snapshot_interval for cls in GAMES.values()}
        self.clock = clock
        self.new_seed = new_seed
        self.index = Indexer(self, ROUND_MARKS)

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
        """One finished round: its events, the state before and after, cards, decisions, payments, and the
        checks (DESIGN.md "Replay and audit"). Reads only the round's events and two snapshot-based states."""
        uuid = self._uuid(table_id)
        self._known(table_id)
        self.index.catch_up()
        rows = self.index.view.list_rounds(str(uuid), number - 1, 1)
        if number < 1 or not rows or rows[0]["round"] != number:
            finished = self.index.view.get_tables([str(uuid)])[str(uuid)]["rounds"]
            raise NotFoundInHistory(
                f"Table '{table_id}' has no finished round {number}; its finished rounds are "
                + (f"1 to {finished}." if finished else "none yet.")
            )
        row = rows[0]
        first, last = row["first_version"], row["last_version"]
        events = list(self.events.get(uuid, gt=first - 1, lte=last))
        prev = self._event(table_id, first - 1).digest if first > 1 else ""
        state_before = self._historic_state(table_id, first - 1) if first > 1 else None
        state_after = self._historic_state(table_id, last)
        numbers = sorted({e.shoe for e in events if e.type == "CardDealt"})  # type: ignore[attr-defined]
        shoes = {s["shoe"]: s for s in self.index.view.get_shoes(str(uuid), numbers)}
        chain_problems = audit.check_chain(prev, events)
        cards_ok, card_problems = audit.check_cards(events, shoes)
        # The rules re-run whole commands: a round may start or end inside one (the card lottery's stage 2
        # begins in the command that reveals the last stage-1 round).
        whole = self._whole_commands(uuid, events)
        start = whole[0].originator_version
        rule_problems = audit.check_rules(self._get(table_id, version=start - 1), whole)
        money_problems = audit.check_money(state_before, state_after, events)
        public = [e.public() for e in events]
        return {
            **{k: v for k, v in row.items() if k != "table_id"},
            "events": public,
            "state_before": state_before,
            "state_after": state_after,
            "cards": [{"version": e["version"], **e["data"]} for e in public if e["type"] == "CardDealt"],
            "decisions": [
                {"version": e["version"], "type": e["type"], "actor": e["actor"], "data": e["data"]}
                for e in public
                if e["type"] not in ("PaymentMade", "CardDealt") or (e["type"] == "CardDealt" and e["data"]["face_up"])
            ],
            "payments": [{"version": e["version"], **e["data"]} for e in public if e["type"] == "PaymentMade"],
            "checks": {
                "chain": not chain_problems,
                "cards": cards_ok,
                "rules": not rule_problems,
                "money": not money_problems,
            },
            "problems": chain_problems + card_problems + rule_problems + money_problems,
        }

    def _whole_commands(self, uuid: UUID, events: list[TableEvent]) -> list[TableEvent]:
        """The events widened to the whole commands they belong to, read a few at a time: most rounds start
        and end at a command's edge, so one small read each way shows it."""
        head: list[TableEvent] = []
        while True:
            edge = (head[-1] if head else events[0]).originator_version
            page = list(self.events.get(uuid, lte=edge - 1, desc=True, limit=8))
            same = [e for e in page if e.command == events[0].command]  # type: ignore[attr-defined]
            head += same
            if len(same) < len(page) or len(page) < 8:
                break
        tail: list[TableEvent] = []
        while True:
            edge = (tail[-1] if tail else events[-1]).originator_version
            page = list(self.events.get(uuid, gt=edge, limit=8))
            same = [e for e in page if e.command == events[-1].command]  # type: ignore[attr-defined]
            tail += same
            if len(same) < len(page) or len(page) < 8:
                break
        return list(reversed(head)) + events + tail

    def verify(self, table_id: str) -> dict[str, Any]:
        """The whole table: the chain from its first event, every shoe against its revealed seed, every
        command run again through the rules, and the money."""
        uuid = self._uuid(table_id)
        self._known(table_id)
        self.index.catch_up()
        problems: list[dict[str, Any]] = []
        prev, count, chain_broken = "", 0, None
        dealt: dict[int, list[TableEvent]] = {}
        rules: audit.RulesCheck | None = None
        pending: list[TableEvent] = []
        payments: list[TableEvent] = []
        after = 0
        while True:
            batch = list(self.events.get(uuid, gt=after, limit=1000))
            for e in batch:
                count += 1
                if chain_broken is None:
                    found = audit.check_chain(prev, [e])
                    if found:
                        chain_broken = e.originator_version
                        problems += found
                prev = e.digest
                if e.type == "CardDealt":
                    dealt.setdefault(e.shoe, []).append(e)  # type: ignore[attr-defined]
                elif e.type == "PaymentMade":
                    payments.append(e)
                if pending and e.command != pending[-1].command:
                    rules = self._rules_feed(table_id, rules, pending)
                    pending = []
                pending.append(e)
            if len(batch) < 1000:
                break
            after = batch[-1].originator_version
        if pending:
            rules = self._rules_feed(table_id, rules, pending)
        shoes = []
        for shoe in self.index.view.get_shoes(str(uuid)):
            cards = dealt.get(shoe["shoe"], [])
            ok, found = audit.check_cards(cards, {shoe["shoe"]: shoe})
            problems += found
            shoes.append({
                "shoe": shoe["shoe"], "deck": shoe["deck"], "decks": shoe["decks"], "cut": shoe["cut"],
                "dealt": len(cards), "revealed": shoe["seed"] is not None, "ok": ok,
            })
        if rules is not None:
            problems += rules.problems
        head = self.current_state(table_id)
        problems += audit.check_money(None, head, payments)
        rounds = self.index.view.get_tables([str(uuid)])[str(uuid)]["rounds"]
        return {
            "ok": not problems,
            "chain": {"events": count, "ok": chain_broken is None, "first_broken_version": chain_broken},
            "shoes": shoes,
            "commands_checked": rules.commands if rules else 0,
            "rounds_checked": rounds,
            "problems": problems,
        }

    def _rules_feed(self, table_id: str, rules: "audit.RulesCheck | None", group: list[TableEvent]) -> "audit.RulesCheck":
        if rules is None:  # the opening: start from the table as it was opened
            rules = audit.RulesCheck(self._get(table_id, version=group[-1].originator_version))
            return rules
        rules.feed(group)
        return rules

    def ping(self) -> None:
        """Raises unless the event store answers."""
        self.recorder.select_events(UUID(int=0), limit=1)

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
    if value < 0:
        raise BadArgument("cursor", "'cursor' is the 'next_cursor' of the previous page.")
    return value
