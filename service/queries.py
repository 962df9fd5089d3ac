"""The read side: states now and in the past, pages of the log, heads, the read model's listings, feeds.

Every query reads; none appends. States at a version come from the nearest snapshot, states at a moment by a
binary search over single events, pages and exports in bounded batches (docs/design.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any
from uuid import UUID

from domain.chain import format_timestamp
from domain.errors import BadArgument
from domain.inputs import validate_name
from domain.sight import EVERYTHING, Sight, Viewer
from domain.table import TableEvent
from service import adjustments, audit, decisions, present, replay, roads, streams
from service.errors import DamagedLog, NotFoundInHistory, TableNotFound
from service.limits import MAX_NUMBER, page_size, position


class Queries:
    """The query side of TablesService (service/application.py)."""

    def current_state(self, table_id: str, viewer: Viewer = EVERYTHING) -> dict[str, Any]:
        """The state at the head, as ``viewer`` sees it (domain/sight.py)."""
        with replay.borrowed(self, table_id) as table:  # shown before any command changes it: no copy
            return present.state(table, viewer, expects=self.shown(table, table.expects()))

    def historic_state(
        self, table_id: str, version: int | None = None, at: datetime | None = None, viewer: Viewer = EVERYTHING,
    ) -> dict[str, Any]:
        if (version is None) == (at is None):
            raise BadArgument("version", "Give exactly one of 'version' (a version number) or 'at' (a moment).")
        if version is not None:
            return self.state_at_version(table_id, version, viewer)
        assert at is not None
        return self.state_at_moment(table_id, at, viewer)

    def state_at_version(self, table_id: str, version: int, viewer: Viewer = EVERYTHING) -> dict[str, Any]:
        """The state exactly as the table showed it when ``version`` was its head (docs/design.md: the
        repository's versioned get, from the nearest snapshot, so the cost does not grow with history)."""
        now = self.table(table_id)
        head = now.version
        if not 1 <= version <= head:
            versions = "only version 1" if head == 1 else f"versions 1 to {head}"
            raise NotFoundInHistory(f"Table '{table_id}' has {versions}; there is no version {version}.")
        return self.state_at(table_id, version, viewer, now)

    def state_at_moment(self, table_id: str, moment: datetime, viewer: Viewer = EVERYTHING) -> dict[str, Any]:
        """The state after the last event with timestamp <= ``moment`` (``version_at_moment``)."""
        if moment.tzinfo is None:
            raise BadArgument("at", "A moment must carry its UTC offset.")
        head = self.table(table_id)
        return self.state_at(table_id, self.version_at_moment(table_id, moment, head), viewer, head)

    def version_at_moment(self, table_id: str, moment: datetime, head: Any = None) -> int:
        """The version of the last event with timestamp <= ``moment``. Timestamps of a table strictly increase
        with its versions, so a binary search reads about log2(n) single events, never the log."""
        if moment.tzinfo is None:
            raise BadArgument("at", "A moment must carry its UTC offset.")
        head = head if head is not None else self.table(table_id)
        if head.modified_on <= moment:
            return head.version
        low, high = 0, head.version  # invariant: event `low` is at or before the moment, `high` after
        while high - low > 1:
            mid = (low + high) // 2
            if self.event_at(table_id, mid).timestamp <= moment:
                low = mid
            else:
                high = mid
        if low == 0:
            raise NotFoundInHistory(
                f"Table '{table_id}' did not exist at {format_timestamp(moment)}; "
                f"it was opened at {format_timestamp(self.event_at(table_id, 1).timestamp)}."
            )
        return low

    def seen_now(self, table_id: str, viewer: Viewer) -> Sight | None:
        """``viewer`` reading the table's events at its head (present.sight_now)."""
        return present.sight_now(viewer, lambda: self.table(table_id))

    def events_page(self, table_id: str, after: int = 0, limit: int = 100, viewer: Viewer = EVERYTHING) -> dict[str, Any]:
        limit = page_size(limit)
        stored = self.recorder.select_events(self._uuid(table_id), gt=position(after), limit=limit + 1)
        if not stored:  # a page with rows says the table exists; an empty one asks the log once more
            self.require_table(table_id)  # not the table's state: a log with damage further on still pages up to it
        more = len(stored) > limit
        events = self.decoded(table_id, stored[:limit])  # the row that only tells of more is not read
        return {
            "events": present.events(events, self.seen_now(table_id, viewer)),
            "next_after": events[-1].originator_version if more else None,
        }

    def iter_events(self, table_id: str, after: int = 0, batch: int = 500,
                    viewer: Viewer = EVERYTHING) -> Iterator[dict[str, Any]]:
        """The whole log from ``after`` on, read in batches so a long table streams in bounded memory, as
        ``viewer`` sees it at the head when the export starts (by default: as recorded)."""
        self.require_table(table_id)
        after = position(after)
        seen = self.seen_now(table_id, viewer)
        while True:
            events = self.read_events(table_id, after=after, limit=batch)
            yield from present.events(events, seen)
            if len(events) < batch:
                return
            after = events[-1].originator_version

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

    # --- live streams (service/streams/) -------------------------------------------------------------

    def table_feed(self, table_id: str, after: int = 0, heartbeat: float = 15.0, viewer: Viewer = EVERYTHING,
                   render: Callable[[dict[str, Any]], Any] | None = None) -> streams.TableFeed:
        """The table's events after version ``after``, then each new one as it is recorded, each as ``viewer``
        saw it at its own moment, and made by ``render`` into what the caller sends (a function of the event
        alone: what it makes is shared by the streams of the same viewer). Its batches give None where a
        heartbeat is due; close() it. TableNotFound, DamagedLog (its first page) and StreamRefused (this
        process holds its ``max_streams``, or is stopping) come at once."""
        seen = None if viewer == EVERYTHING else present.sight(viewer, None)
        return streams.TableFeed(self, self.hub, table_id, position(after), heartbeat, seen, render)

    def heads_feed(self, after: int | None = None, heartbeat: float = 15.0) -> streams.HeadFeed:
        """Every table's head as it changes, after position ``after`` of the log (None: from now on)."""
        return streams.HeadFeed(self, self.hub, None if after is None else position(after), heartbeat)

    def head_changes(self, after: int, limit: int) -> tuple[list[streams.HeadChange], int, bool]:
        """Each table's last change among the (at most ``limit``) notifications after position ``after``, the
        position read up to, and whether that was the end of the log."""
        notes = self.recorder.select_notifications(after, limit, inclusive_of_start=False)
        heads, _ = streams.heads_of(notes, self.mapper)
        return heads, notes[-1].id if notes else after, len(notes) < limit

    def log_position(self) -> int:
        """The position of the last event recorded in the notification log (0: none)."""
        return self.recorder.max_notification_id() or 0

    # --- the read model (service/readmodel/) -------------------------------------------------------------

    def list_tables(self, game: str | None = None, after: int = 0, limit: int = 50) -> dict[str, Any]:
        """Tables in the order they were opened, from the read model (up to date with the log); a page starts
        after the position ``after``, the ``next_after`` of the page before."""
        self.index.bring_up_to_date()
        limit = page_size(limit)
        rows = self.index.view.list_tables(game, position(after), limit + 1)
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
        limit = page_size(limit)
        rows = self.index.view.list_rounds(str(self._uuid(table_id)), position(after), limit + 1)
        more = len(rows) > limit
        rows = rows[:limit]
        voided = self.voided(table_id) if rows else {}
        return {
            "rounds": [{**{k: v for k, v in r.items() if k != "table_id"}, **_void(voided, r["round"])} for r in rows],
            "next_after": rows[-1]["round"] if more else None,
            "index_error": self.index_error(table_id),
        }

    def player_rounds(self, player: str, after: int = 0, limit: int = 50,
                      tables: Iterable[str] | None = None) -> dict[str, Any]:
        """Every finished round the player took part in, at every table (or only at ``tables``: a token limited
        to them), the newest first (his name compared as names are: NFKC, case folded); a page starts after the
        position ``after``, the ``next_after`` of the page before (0: from the newest). A name no table could
        seat is refused (InvalidPlayers)."""
        validate_name(player)
        self.index.bring_up_to_date()
        limit = page_size(limit)
        before = position(after) or MAX_NUMBER
        among = None if tables is None else tuple(sorted({_table_key(t) for t in tables}))
        rows = self.index.view.seat_rounds(player, before, limit + 1, among)
        more = len(rows) > limit
        rows = rows[:limit]
        voided: dict[str, dict[str, Any]] = {}
        for r in rows:
            if r["table_id"] not in voided:
                voided[r["table_id"]] = self.voided(r["table_id"])
        return {
            "player": player,
            "rounds": [{**present.seat_round(r), **_void(voided[r["table_id"]], r["round"])} for r in rows],
            "next_after": rows[-1]["key"] if more else None,
        }

    def read_model_status(self) -> dict[str, Any]:
        """How far the read model is behind the log (``lag``, in events) and whether a follower keeps it up."""
        return self.index.status()

    # --- the audits (service/audit/) -----------------------------------------------------------------

    def round_audit(self, table_id: str, number: int, viewer: Viewer = EVERYTHING) -> dict[str, Any]:
        """One finished round with its record and checks, as ``viewer`` sees it; a round voided says so (``void``),
        however long after its settlement."""
        found = audit.round_audit(self, table_id, number, viewer)
        return {**found, **_void(self.voided(table_id), number)}

    def voided(self, table_id: str) -> dict[str, Any]:
        """The rounds of a table voided so far, by number (as text), read from its head. A table whose stored history
        is damaged has no head to read: its rounds are listed and audited as ever (without ``void``), and the
        damage is its verification's to name."""
        try:
            return dict(self.table(table_id).voided or {})
        except DamagedLog:
            return {}

    # --- the adjustments log (service/adjustments.py) ---------------------------------------------------

    def adjustments_page(self, filters: adjustments.Filters, after: int = 0, limit: int = 50) -> dict[str, Any]:
        """A page of every correction decided, at every table, in the order they were decided."""
        return adjustments.page(self, filters, after, limit)

    def iter_adjustments(self, filters: adjustments.Filters, after: int = 0) -> Iterator[dict[str, Any]]:
        """Every correction decided after ``after``, one at a time (the NDJSON export)."""
        return adjustments.entries(self, filters, after)

    def verify(self, table_id: str, viewer: Viewer = EVERYTHING) -> dict[str, Any]:
        """The whole table verified; its details as ``viewer`` sees them."""
        return audit.verify(self, table_id, viewer)

    def roads(self, table_id: str, at: datetime | None = None, version: int | None = None,
              shoe: int | None = None) -> dict[str, Any]:
        """A baccarat table's roads for a shoe (by default its last) at a moment or a version (by default now),
        from its log (service/roads.py); the same for every reader: only decided coups, their cards shown."""
        if at is not None and version is not None:
            raise BadArgument("version", "Give at most one of 'version' (a version number) or 'at' (a moment).")
        if at is not None and at.tzinfo is None:
            raise BadArgument("at", "A moment must carry its UTC offset.")
        head = self.table(table_id)
        if version is not None and not 1 <= version <= head.version:
            versions = "only version 1" if head.version == 1 else f"versions 1 to {head.version}"
            raise NotFoundInHistory(f"Table '{table_id}' has {versions}; there is no version {version}.")
        upto = version or (self.version_at_moment(table_id, at, head) if at is not None else head.version)
        shown = roads.table_roads(self, table_id, upto, shoe)
        stamp = head.modified_on if upto == head.version else self.event_at(table_id, upto).timestamp
        return {"table_id": table_id, "game": head.GAME.name,
                "as_of": {"version": upto, "timestamp": format_timestamp(stamp)}, **shown}

    def decisions(self, table_id: str, after: int = 0, limit: int = 100, viewer: Viewer = EVERYTHING) -> dict[str, Any]:
        """A page of the table's free decisions weighed, and every player's summary (service/decisions.py), up
        to the live coup for a ``viewer`` who does not see its cards."""
        return decisions.table_decisions(self, table_id, after, limit, viewer)


def _void(voided: dict[str, Any], number: int) -> dict[str, Any]:
    """``void`` for a round voided, nothing for any other (a round never voided shows what it always did)."""
    found = voided.get(str(number))
    return {"void": found} if found else {}


def _table_key(table_id: str) -> str:
    """A table's id as the read model keys it (a UUID's canonical text; anything else matches no table)."""
    try:
        return str(UUID(table_id))
    except ValueError:
        return table_id
