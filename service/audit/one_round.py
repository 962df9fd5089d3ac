"""A round's audit: its events, the states around it, its cards, decisions and payments, and the checks."""

from __future__ import annotations

from typing import Any

from domain.chain import binding_problem
from domain.sight import EVERYTHING, Sight, Viewer
from domain.table import Table, TableEvent
from service import decisions, present
from service.replay import copy_of, projected, table_uuid
from service.audit.cards import check_cards, shoe_record
from service.audit.chain import LogCheck
from service.audit.log_rounds import LogRounds, compare_round, finding
from service.audit.money import check_money
from service.audit.problems import at, unreadable_message
from service.audit.read_model import catch_up, index_problems
from service.audit.rules import check_rules
from service.errors import DamagedLog, IndexIncomplete, NotFoundInHistory, TableNotFound
from service.history import TableHistory, state_at

PAGE = 250  # rows read (and decoded) at a time while the log is read for a round, at most
FIRST_PAGE = 32  # the first read where the read model does not say where the round ends
NEAR = 8  # rows read at a time where what is looked for is a few versions away (a shoe's cut, a command's edge)


def round_audit(history: TableHistory, table_id: str, number: int, viewer: Viewer = EVERYTHING) -> dict[str, Any]:
    """One finished round: its events, the state before and after, cards, decisions, payments, and the
    checks (docs/design.md "Replay and audit"), as ``viewer`` sees them at the table's head (domain/sight.py;
    the checks run on the events as recorded). Reads the round's events with a few rows on either side, and
    the snapshot of the state before it (which, with the rows read, gives the states before and after it). A
    round whose stored events are not whole is audited as far as they allow, every break named."""
    history = rebuilt = _Rebuilt(history)  # type: ignore[assignment]
    row, found = _the_round(history, table_id, number)
    first, last = row["first_version"], row["last_version"]
    log, events = _round_log(history, table_id, first, last)
    problems = _bound(history, table_id) + list(log.problems)
    now = _head(rebuilt, table_id)
    seen = None if viewer == EVERYTHING else present.sight(viewer, now)
    states = (viewer, now, problems, bool(problems))
    state_before = _damaged_state(history, table_id, first - 1, *states) if first > 1 else None
    state_after = _damaged_state(history, table_id, last, *states)
    shoes, shoe_problems = _log_shoes(history, table_id, events)
    cards_ok, card_problems = check_cards(events, shoes)
    if shoe_problems:
        cards_ok, card_problems = False, shoe_problems + card_problems
    rule_problems = _round_rules(history, table_id, first, events, seen)
    if state_after is None or (first > 1 and state_before is None):
        money_problems = [at("money", None, "the states around the round cannot be rebuilt: the money is not checked")]
    else:
        money_problems = check_money(state_before, state_after, events)
    shown = present.events(events, seen)
    return {
        **{k: v for k, v in row.items() if k != "table_id"},
        "events": shown,
        "state_before": state_before,
        "state_after": state_after,
        **present.round_record(shown),
        "free_decisions": decisions.round_decisions(history, table_id, number, first, present.events(events)),
        "checks": {
            "chain": not [p for p in problems if p["check"] == "chain"],
            "cards": cards_ok,
            "rules": not rule_problems,
            "money": not money_problems,
            "read_model": not found,
        },
        "problems": problems + card_problems + rule_problems + money_problems + found
        + index_problems(history, table_id),
    }


Rows = list[tuple[int, TableEvent | None]]


class _Rebuilt:
    """The audit's history. It rebuilds each version of the table once (the state before the round, its rules
    check and its decisions all start from the table just before it), from the rows already read where they
    hold every version it needs (after an earlier version, or after the version's latest snapshot), as the
    log's replay would, else from the store. It keeps every row it read, and answers again from them any read
    of versions it holds every one of: finding the round reads the rows around it, which the round's chain,
    its whole commands and the states around it read again. A row is kept as it was read, unreadable ones
    too, so what the audit says of a row is what one read of it said. Each caller gets a table of its own
    (the rules check runs the round's commands on it), a pickle copy being a fraction of a rebuild's cost."""

    def __init__(self, history: TableHistory) -> None:
        self._history = history
        self._tables: dict[int | None, Table | DamagedLog] = {}
        self._held: dict[int, TableEvent | None] = {}

    def table(self, table_id: str, version: int | None = None) -> Table:
        return copy_of(self.shared(table_id, version))

    def shared(self, table_id: str, version: int | None = None) -> Table:
        """The audit's own copy of the table at ``version``, for reading only."""
        if version not in self._tables:
            try:
                self._tables[version] = (self._replayed(version) or self._from_snapshot(table_id, version)
                                         or self._history.table(table_id, version=version))
            except DamagedLog as exc:
                self._tables[version] = exc
        found = self._tables[version]
        if isinstance(found, DamagedLog):
            raise found
        return found

    def _replayed(self, version: int | None) -> Table | None:
        """The table at ``version`` from the latest earlier version rebuilt and the events between, where
        every one of them was read and can be read; else None (the version is rebuilt from the store)."""
        if version is None:
            return None
        earlier = [v for v, t in self._tables.items() if v is not None and v < version and isinstance(t, Table)]
        if not earlier:
            return None
        start = max(earlier)
        events = [self._held.get(v) for v in range(start + 1, version + 1)]
        if any(e is None for e in events):
            return None
        try:
            return projected(events, copy_of(self._tables[start]))  # type: ignore[arg-type]
        except Exception:  # noqa: BLE001 - rebuilt from the store instead, which names what is wrong
            return None

    def _from_snapshot(self, table_id: str, version: int | None) -> Table | None:
        """The table at ``version`` from its latest snapshot (one read of the snapshot store) and the events
        after it, where every version from the snapshot's own on was read and can be read, as a rebuild would
        make it (which also requires the snapshot's own version in the log); else None."""
        snapshots = self._history.snapshots  # type: ignore[attr-defined]
        if version is None or snapshots is None or self._held.get(version) is None:
            return None  # (the version itself not read: the store's rebuild, without reading the snapshot twice)
        try:
            found = list(snapshots.get(table_uuid(table_id), desc=True, limit=1, lte=version))
            start = found[0].originator_version if found else 1
            events = [self._held.get(v) for v in range(start, version + 1)]
            if any(e is None for e in events):
                return None
            return projected(found + events[1:] if found else events)
        except Exception:  # noqa: BLE001 - rebuilt from the store instead, which names what is wrong (or is down)
            return None

    def state_at(self, table_id: str, version: int, viewer: Viewer = EVERYTHING,
                 now: Table | None = None) -> dict[str, Any]:
        return state_at(self, table_id, version, viewer, now, table=self.shared(table_id, version))

    def require_table(self, table_id: str) -> None:
        # The first row, kept: the chain's binding check reads it again.
        if not self.stored_rows(table_id, 0, None, limit=1):
            raise TableNotFound(table_id)

    def stored_rows(self, table_id: str, after: int, upto: int | None = None, limit: int | None = None) -> Rows:
        wanted = _versions(after, upto, limit)
        if wanted is not None and all(v in self._held for v in wanted):
            return [(v, self._held[v]) for v in wanted]
        rows = self._history.stored_rows(table_id, after, upto, limit)
        self._held.update(rows)
        return rows

    def read_events(self, table_id: str, *, after: int = 0, upto: int | None = None, limit: int | None = None,
                    newest_first: bool = False) -> list[TableEvent]:
        wanted = _versions(after, upto, limit, newest_first)
        if wanted is None or not all(v in self._held for v in wanted):
            events = self._history.read_events(table_id, after=after, upto=upto, limit=limit, newest_first=newest_first)
            self._held.update((e.originator_version, e) for e in events)
            return events
        events = []
        for v in wanted:
            event = self._held[v]
            if event is None:  # as the store's own read says it (service/replay.py decoded)
                raise DamagedLog(table_id, f"the stored event at version {v} cannot be read", v)
            events.append(event)
        return events

    def __getattr__(self, name: str) -> Any:
        return getattr(self._history, name)


def _versions(after: int, upto: int | None, limit: int | None, newest_first: bool = False) -> list[int] | None:
    """The versions a read of the log asks for, in the order it gives them, if a log holding every one gives
    exactly those; None for a read to the log's end, which only the store can answer."""
    if upto is None:
        return None if limit is None or newest_first else list(range(after + 1, after + 1 + limit))
    versions = range(after + 1, upto + 1)[::-1 if newest_first else 1]  # a range: sliced without being listed
    return list(versions if limit is None else versions[:limit])


def _the_round(history: TableHistory, table_id: str, number: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The round as the table's own log gives it (its bounds, times and summary), with every field where the
    read model's row says otherwise. Where a break in the log keeps the rounds from being told up to this one,
    the read model's row says where to look (the log's own check names the break)."""
    row = _finished_round(history, table_id, number)
    log = LogRounds(table_id)
    # The first read goes as far as the read model says the round ends, with the few rows after it that the
    # round's whole commands and the state after it look at; the log alone says where the round is.
    through = row["last_version"] + 1 + NEAR if row is not None else None
    after = log.resume(history, number, through)
    size = FIRST_PAGE if through is None else min(max(through - after, 1), PAGE)
    while log.round(number) is None and not log.stopped:
        page = history.stored_rows(table_id, after, None, limit=size)
        for version, e in page:
            log.feed(version, e)
            if log.round(number) is not None:
                break
        if len(page) < size:
            log.close()
        after = page[-1][0] if page else after
        size = min(2 * max(size, FIRST_PAGE), PAGE)  # doubled: a few rows past the round, not a whole page
    truth = log.round(number)
    if truth is None:
        if row is None:
            raise _not_found(history, table_id, number)
        return row, compare_round(row, None, log.known)
    if row is None:
        return truth, [finding(truth["first_version"], f"round {number}: the log finishes it at versions "
                                                       f"{truth['first_version']} to {truth['last_version']}, but "
                                                       "the read model does not list it", "round", number)]
    return truth, compare_round(row, truth, log.known)


def _bound(history: TableHistory, table_id: str) -> list[dict[str, Any]]:
    """Chain rule 2: the table's first event names this table (one small read; the round's own chain starts
    from the event before it, which cannot tell a log moved whole from another table)."""
    rows = history.stored_rows(table_id, 0, 1)
    opened = rows[0][1] if rows else None
    if opened is None or opened.type != "TableOpened":
        return []  # named by verify, whose chain starts at version 1
    moved = binding_problem(str(opened.originator_id), opened.data)
    return [at("chain", 1, moved, opened.type)] if moved else []


def _finished_round(history: TableHistory, table_id: str, number: int) -> dict[str, Any] | None:
    """The read model's row of the round: where it starts and ends in the log. None where the read model
    counts the round among the table's finished rounds but has no row of it (the log is read for it)."""
    history.require_table(table_id)
    stuck = catch_up(history)
    row = history.indexed_round(table_id, number)
    if row is not None:
        return row
    indexed = history.indexed_table(table_id)
    if indexed is not None and 1 <= number <= indexed["rounds"] and indexed["index_error"] is None:
        return None
    index_error = history.index_error(table_id)
    if index_error is not None:
        raise IndexIncomplete(table_id, index_error, f"Round {number}")
    if stuck is not None and 1 <= number <= 2**62:  # a larger number cannot exist
        raise stuck  # the round may lie past a row the read model could not read: a 409 that says so
    raise _not_found(history, table_id, number)


def _not_found(history: TableHistory, table_id: str, number: int) -> NotFoundInHistory:
    indexed = history.indexed_table(table_id)
    finished = indexed["rounds"] if indexed is not None else 0
    return NotFoundInHistory(
        f"Table '{table_id}' has no finished round {number}; "
        + {0: "it has none yet.", 1: "its only finished round is 1."}.get(finished, f"its finished rounds are 1 to {finished}.")
    )


def _round_log(history: TableHistory, table_id: str, first: int, last: int) -> tuple[LogCheck, list[TableEvent]]:
    """The round's stored rows checked as a stretch of the log (from the digest of the event before it), and
    the events among them that can be read."""
    log = LogCheck(first, "")
    if first > 1:  # the event before the round, for the first link of its chain
        before = history.stored_rows(table_id, first - 2, first - 1)
        if not before:
            log = LogCheck(first, None)
            log.problems.append(at("chain", first - 1, f"version {first - 1}, just before the round, is missing: "
                                                       f"the round's first digest cannot be checked"))
        elif before[0][1] is None:
            log = LogCheck(first, None)
            log.problems.append(at("chain", first - 1, unreadable_message(first - 1)))
        else:
            log = LogCheck(first, before[0][1].digest, before[0][1].timestamp)
    events: list[TableEvent] = []
    for version, e in history.stored_rows(table_id, first - 1, last):
        if e is None:
            log.unreadable(version)
        else:
            log.feed(e)
            events.append(e)
    log.end(last)
    return log, events


def _head(rebuilt: _Rebuilt, table_id: str) -> Table | None:
    """The table at its head (what an auditor may see now), or None where it cannot be rebuilt."""
    try:
        return rebuilt.shared(table_id)
    except DamagedLog:
        return None


def _damaged_state(history: TableHistory, table_id: str, version: int, viewer: Viewer, now: Table | None,
                   problems: list[dict[str, Any]], quiet: bool) -> dict[str, Any] | None:
    """The state at ``version`` as ``viewer`` sees it, or None where the log cannot give it (named, unless
    already named)."""
    try:
        return history.state_at(table_id, version, viewer, now)
    except DamagedLog as exc:
        if not quiet:
            problems.append(at("chain", exc.version, f"the state at version {version} cannot be rebuilt: {exc.detail}"))
        return None


def _log_shoes(history: TableHistory, table_id: str, events: list[TableEvent]) -> tuple[dict[int, dict[str, Any]], list[dict[str, Any]]]:
    """The shoes dealt from in ``events``, as the log records them. The read model only says where to look
    (the versions of each shoe's ShoeShuffled and ShoeRevealed); the commitment, the seed and the cut are read
    from those very events, so a seed altered in the log cannot hide behind the read model's copy."""
    first_card: dict[int, int] = {}
    for e in events:
        if e.type == "CardDealt":
            first_card.setdefault(e.shoe, e.originator_version)  # type: ignore[attr-defined]
    shoes: dict[int, dict[str, Any]] = {}
    problems: list[dict[str, Any]] = []
    for row in history.indexed_shoes(table_id, sorted(first_card)):
        number = row["shoe"]
        # The shuffle and the few events after it, where its cut is, in one read (kept for the two looks below).
        history.stored_rows(table_id, row["shuffled_version"] - 1, None, limit=1 + NEAR)
        shuffled = _one(history, table_id, row["shuffled_version"], "ShoeShuffled", number, problems)
        if shuffled is None:
            continue
        shoe = shoe_record(shuffled)
        cut = _find_cut(history, table_id, row["shuffled_version"], first_card[number], number)
        if cut is not None:
            shoe["cut"], shoe["cut_version"] = cut.position, cut.originator_version  # type: ignore[attr-defined]
        if row["revealed_version"] is not None:
            revealed = _one(history, table_id, row["revealed_version"], "ShoeRevealed", number, problems)
            if revealed is None:
                continue
            shoe["seed"], shoe["revealed_version"] = revealed.seed, revealed.originator_version  # type: ignore[attr-defined]
        shoes[number] = shoe
    return shoes, problems


def _one(history: TableHistory, table_id: str, version: int, kind: str, shoe: int, problems: list[dict[str, Any]]) -> TableEvent | None:
    """The event at ``version``, which must be the ``kind`` of ``shoe``; else a problem saying what is there."""
    rows = history.stored_rows(table_id, version - 1, version)
    event = rows[0][1] if rows else None
    if event is not None and event.type == kind and event.shoe == shoe:  # type: ignore[attr-defined]
        return event
    there = ("nothing (the version is missing)" if not rows else "a row that cannot be read" if event is None
             else f"{event.type} {present.event_text(event, False)}")
    problems.append(at("cards", version, f"shoe {shoe} has its {kind} at version {version}, but the log now has "
                                         f"{there} there", event.type if event else None))
    return None


def _find_cut(history: TableHistory, table_id: str, shuffled: int, first_card: int, shoe: int) -> TableEvent | None:
    """The shoe's ShoeCut: between its shuffle and its first card (right after the shuffle in practice, so the
    first small read finds it); None for a deck dealt uncut."""
    after = shuffled
    while after < first_card:
        try:
            page = history.read_events(table_id, after=after, upto=first_card, limit=NEAR)
        except DamagedLog:
            return None  # the rows in between are named by the log's own check
        for e in page:
            if getattr(e, "shoe", None) == shoe and e.type in ("ShoeCut", "CardDealt", "ShoeShuffled"):
                return e if e.type == "ShoeCut" else None
        if len(page) < NEAR:
            return None
        after = page[-1].originator_version
    return None


def _round_rules(history: TableHistory, table_id: str, first: int, events: list[TableEvent],
                 seen: Sight | None) -> list[dict[str, Any]]:
    """The round's commands run again through the rules. Whole commands: a round may start or end inside one
    (the card lottery's stage 2 begins in the command that reveals the last stage-1 round)."""
    if not events:
        return [at("rules", first, "none of the round's events can be read: no command was checked")]
    whole = _whole_commands(history, table_id, events)
    start = whole[0].originator_version
    problems: list[dict[str, Any]] = []
    rebuild = lambda v: history.table(table_id, version=v)  # noqa: E731
    try:
        table_before = rebuild(start - 1)
    except DamagedLog as exc:
        table_before = None
        problems.append(at("rules", start - 1, f"the table cannot be rebuilt at version {start - 1} to "
                                               f"check the round's commands ({exc.detail})"))
    return problems + check_rules(table_before, whole, rebuild, seen)


def _whole_commands(history: TableHistory, table_id: str, events: list[TableEvent]) -> list[TableEvent]:
    """The events widened to the whole commands they belong to, read a few at a time: most rounds start
    and end at a command's edge, so one small read each way shows it. Damage at the edges stops the widening
    (the log's own check names it; the rules check then says which commands it could not run)."""
    head = _same_command_beyond(history, table_id, events[0], backwards=True)
    tail = _same_command_beyond(history, table_id, events[-1], backwards=False)
    return list(reversed(head)) + events + tail


def _same_command_beyond(history: TableHistory, table_id: str, edge: TableEvent, backwards: bool) -> list[TableEvent]:
    """The events of ``edge``'s command before it (nearest first) or after it."""
    found: list[TableEvent] = []
    try:
        while True:
            at_version = (found[-1] if found else edge).originator_version
            if backwards:
                page = history.read_events(table_id, upto=at_version - 1, newest_first=True, limit=NEAR)
            else:
                page = history.read_events(table_id, after=at_version, limit=NEAR)
            same = [e for e in page if e.command == edge.command]  # type: ignore[attr-defined]
            found += same
            if len(same) < len(page) or len(page) < NEAR:
                return found
    except DamagedLog:
        return found
