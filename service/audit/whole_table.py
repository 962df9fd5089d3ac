"""A whole table verified in one pass over its stored log: the chain, every shoe, every command, the money."""

from __future__ import annotations

from typing import Any

from domain.corrections import MOVEMENTS
from domain.sight import EVERYTHING, Sight, Viewer
from domain.table import TableEvent
from service import present
from service.audit.cards import ShoeLog, by_number, check_shoe
from service.audit.chain import LogCheck
from service.audit.log_rounds import LogRounds, compare_rounds, compare_shoes, compare_table, finding
from service.audit.money import check_money
from service.audit.problems import at, versions
from service.audit.read_model import catch_up, index_problems
from service.audit.rules import RulesCheck
from service.errors import DamagedLog, IndexUnreadable
from service.history import TableHistory


class _WholeLog:
    """Everything verify() learns in one pass over the stored log."""

    def __init__(self, history: TableHistory, table_id: str, indexed_version: int, seen: Sight | None) -> None:
        self.log, self.shoes = LogCheck(), ShoeLog()
        self.rounds, self.indexed_shoes = LogRounds(table_id), ShoeLog()  # the latter: the shoes up to the read model's version
        self.indexed_version = indexed_version
        self.opened: TableEvent | None = None
        self.updated_at: str | None = None
        self.rules = RulesCheck(None, lambda v: history.table(table_id, version=v), seen)
        self.payments: list[TableEvent] = []
        self._pending: list[TableEvent] = []

    def read(self, history: TableHistory, table_id: str) -> None:
        after = 0
        while True:
            batch = history.stored_rows(table_id, after, None, limit=1000)
            for version, e in batch:
                self._feed(version, e)
            if len(batch) < 1000:
                break
            after = batch[-1][0]
        if self._pending:
            self.rules.feed(self._pending)
        self.rounds.close()

    def _feed(self, version: int, e: TableEvent | None) -> None:
        self.rounds.feed(version, e)
        if e is not None and version <= self.indexed_version:
            self.indexed_shoes.feed(e)
            if version == 1:
                self.opened = e
            if version == self.indexed_version:
                self.updated_at = e.timestamp_text
        if e is None:
            self.log.unreadable(version)
            self._pending = []  # the command around an unreadable row cannot be run again
            return
        self.log.feed(e)
        self.shoes.feed(e)
        if e.type in MOVEMENTS:
            self.payments.append(e)
        if self._pending and e.command != self._pending[-1].command:
            self.rules.feed(self._pending)
            self._pending = []
        self._pending.append(e)


def verify(history: TableHistory, table_id: str, viewer: Viewer = EVERYTHING) -> dict[str, Any]:
    """The whole table: the log whole and in order, the chain from its first event, every shoe against the
    seed and commitment the log records, every command run again through the rules, and the money. The
    checks read the log as recorded; a problem that quotes an event quotes it as ``viewer`` sees it now."""
    history.require_table(table_id)
    catch_up(history)
    # Read before the log, which only grows: in an honest store neither can be ahead of what is read next.
    indexed, rounds, shoes = _read_model(history, table_id)
    snapshot = history.snapshot_version(table_id)
    whole = _WholeLog(history, table_id, indexed["version"] if indexed else 0, present.sight_now(viewer, lambda: history.table(table_id)))
    whole.read(history, table_id)
    end = whole.log.last or 0
    problems = list(whole.log.problems) + _ends_ahead(end, snapshot, indexed)
    chain_problems = [p for p in problems if p["check"] == "chain"]
    shoe_rows, shoe_problems = _shoe_rows(whole.shoes)
    problems += shoe_problems + whole.shoes.problems + whole.rules.problems
    problems += _held_to_the_log(whole, indexed, rounds, shoes)
    try:
        head = history.current_state(table_id)
    except DamagedLog as exc:
        if not chain_problems:
            problems.append(at("chain", exc.version, f"the table's state cannot be rebuilt: {exc.detail}"))
    else:
        # Payments missing from a damaged log cannot add up to the balances: that is named at its version.
        problems += check_money(None, head, whole.payments)
    problems += index_problems(history, table_id)
    first_broken = min((p["version"] for p in chain_problems), default=None)
    return {
        "ok": not problems,
        "chain": {"events": whole.log.rows, "last_version": end, "ok": not chain_problems,
                  "first_broken_version": first_broken, "rule": whole.log.rule},
        "shoes": shoe_rows,
        "commands_checked": whole.rules.commands,
        "rounds_checked": len(whole.rounds.finished),
        "problems": problems,
    }


def _read_model(history: TableHistory, table_id: str) -> tuple[dict[str, Any] | None, list[dict[str, Any]], list[dict[str, Any]]]:
    """The read model's rows of the table, its rounds and its shoes, all as of one version of the table:
    read again where the read model moved on while they were read."""
    for _ in range(5):
        indexed = history.indexed_table(table_id)
        try:
            rounds: list[dict[str, Any]] | None = _indexed_rounds(history, table_id)
        except IndexUnreadable:
            rounds = None
        try:
            shoes: list[dict[str, Any]] | None = history.indexed_shoes(table_id, None)
        except IndexUnreadable:
            shoes = None
        if history.indexed_table(table_id) == indexed:
            break
    return indexed, rounds, shoes


def _held_to_the_log(whole: _WholeLog, indexed: dict[str, Any] | None, rounds: list[dict[str, Any]] | None,
                     shoes: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Every row of the read model against the log; rows that cannot be opened are named once."""
    if indexed is None:
        return []
    problems = compare_table(indexed, whole.opened, whole.rounds, whole.updated_at)
    for name, rows in (("rounds", rounds), ("shoes", shoes)):
        if rows is None:
            problems.append(finding(None, f"the read model's rows of the table's {name} cannot be read: they are "
                                          "not checked", name))
    if rounds is not None:
        problems += compare_rounds(rounds, whole.rounds, indexed["version"])
    if shoes is not None:
        problems += compare_shoes(shoes, whole.indexed_shoes.shoes)
    return problems


def _indexed_rounds(history: TableHistory, table_id: str) -> list[dict[str, Any]]:
    rounds: list[dict[str, Any]] = []
    while True:
        page = history.indexed_rounds(table_id, rounds[-1]["round"] if rounds else 0, 1000)
        rounds += page
        if len(page) < 1000:
            return rounds


def _ends_ahead(end: int, snapshot: int | None, indexed: dict[str, Any] | None) -> list[dict[str, Any]]:
    """A snapshot, or the read model's count, past the log's last version: the log was cut short behind them."""
    problems = []
    if snapshot is not None and snapshot > end:
        problems.append(at("chain", end + 1, f"the snapshot at version {snapshot} is ahead of the log, which ends at "
                                             f"{end} ({versions(end + 1, snapshot)} missing)"))
    if indexed is not None and indexed["version"] > max(end, snapshot or 0):
        problems.append(at("chain", end + 1, f"the read model counted the table up to version {indexed['version']}, "
                                             f"but the log ends at {end} ({versions(end + 1, indexed['version'])} "
                                             "missing)"))
    return problems


def _shoe_rows(shoes: ShoeLog) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Each shoe of the log checked: its row of the verify report, and its problems."""
    rows, problems = [], []
    for number in sorted(set(shoes.shoes) | set(shoes.dealt), key=by_number):
        shoe, cards = shoes.shoes.get(number), shoes.dealt.get(number, [])
        ok, found = check_shoe(number, shoe, cards)
        problems += found
        rows.append({
            "shoe": number, "deck": shoe and shoe["deck"], "decks": shoe and shoe["decks"],
            "cut": shoe["cut"] if shoe else 0, "dealt": len(cards), "revealed": bool(shoe and shoe["seed"] is not None),
            "ok": ok, "shuffled_version": shoe and shoe["shuffled_version"],
            "revealed_version": shoe and shoe["revealed_version"],
            "seed_stored": shoe and shoe.get("seed_stored"),
        })
    return rows, problems
