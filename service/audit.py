"""Audit: a round's record with its checks, and a whole table verified (DESIGN.md "Replay and audit").

Checks, each naming the offending event when it fails:
- chain: every digest recomputed from the one before (an altered stored event breaks it from there on);
- cards: every dealt card equal to the revealed shoe, recomputed from its seed and cut (null until revealed);
- rules: every command of the round run again through the game's own rules, from the state before it,
  must give exactly the recorded events (outcome, draws, payments, the bank, the shoe);
- money: every payment positive and between two different parties, balances moved by exactly the payments,
  and all balances and accounts together summing to zero.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterator
from typing import Any

from domain.chain import digest
from domain.errors import DomainError
from domain.shuffle import ALGORITHM, shoe_order
from domain.table import Table, TableEvent

ACCOUNTS = ("house", "pot", "kitty")


def problem(check: str, event: dict[str, Any] | None, message: str) -> dict[str, Any]:
    return {
        "check": check,
        "version": event["version"] if event else None,
        "type": event["type"] if event else None,
        "message": message,
    }


def check_chain(prev: str, events: list[TableEvent]) -> list[dict[str, Any]]:
    """Recomputes each digest from the previous one; reports the first event whose digest does not follow."""
    for e in events:
        public = e.public()
        expected = digest(prev, public["version"], public["type"], public["timestamp"], public["actor"], e.data)
        if expected != e.digest:
            return [problem("chain", public, f"digest {e.digest[:12]}... recorded, {expected[:12]}... recomputed: "
                                             "this event or the one before it was altered")]
        prev = e.digest
    return []


def check_cards(events: list[TableEvent], shoes: dict[int, dict[str, Any]]) -> tuple[bool | None, list[dict[str, Any]]]:
    """Each CardDealt against its shoe recomputed from the revealed seed; None while a shoe is unrevealed."""
    dealt = [e for e in events if e.type == "CardDealt"]
    if not dealt:
        return True, []
    orders: dict[int, list[str]] = {}
    for number in sorted({e.shoe for e in dealt}):  # type: ignore[attr-defined]
        shoe = shoes.get(number)
        if shoe is None or shoe["seed"] is None:
            return None, []
        seed = bytes.fromhex(shoe["seed"])
        if hashlib.sha256(seed).hexdigest() != shoe["commitment"] or shoe["algorithm"] != ALGORITHM:
            return False, [problem("cards", None, f"shoe {number}: the revealed seed does not match its commitment")]
        orders[number] = shoe_order(seed, shoe["decks"], shoe["cut"])
    for e in dealt:
        order = orders[e.shoe]  # type: ignore[attr-defined]
        if e.position >= len(order) or order[e.position] != e.card:  # type: ignore[attr-defined]
            truth = order[e.position] if e.position < len(order) else "nothing"  # type: ignore[attr-defined]
            return False, [problem("cards", e.public(), f"{e.card} recorded at position {e.position} of shoe "  # type: ignore[attr-defined]
                                                        f"{e.shoe}; the revealed shoe has {truth} there")]  # type: ignore[attr-defined]
    return True, []


def commands(events: list[TableEvent]) -> Iterator[list[TableEvent]]:
    """The recorded events grouped by the command that appended them."""
    group: list[TableEvent] = []
    for e in events:
        if group and e.command != group[-1].command:
            yield group
            group = []
        group.append(e)
    if group:
        yield group


class RulesCheck:
    """Runs each recorded command again from the state before it and compares what the rules record with
    what was recorded. The table then moves on by the recorded events, so one bad command does not hide the
    next one's problems."""

    def __init__(self, before: Table) -> None:
        self.table = before
        self.problems: list[dict[str, Any]] = []
        self.commands = 0

    def feed(self, group: list[TableEvent]) -> None:
        table = self.table
        public = [e.public() for e in group]
        if group[0].type in ("TableOpened", "RolesAssigned"):
            self.table = _apply(table, group[1:] if group[0].type == "TableOpened" else group)
            return
        self.commands += 1
        try:
            command, player, args = table.command_of(public)  # type: ignore[attr-defined]
        except (KeyError, StopIteration):
            self.problems.append(problem("rules", public[0], f"no command of {table.game} begins with {group[0].type}"))
            self.table = _apply(table, group)
            return
        seeds = iter([bytes.fromhex(e.seed) for e in group if e.type == "ShoeShuffled"])  # type: ignore[attr-defined]
        trial = copy.deepcopy(table)
        try:
            trial.handle(command, player, args, group[0].timestamp, lambda: next(seeds))
        except (DomainError, StopIteration) as exc:
            message = getattr(exc, "message", "a shuffle is missing its seed")
            self.problems.append(problem("rules", public[0], f"the rules refuse this {command} by {player}: {message}"))
        else:
            mismatch = _first_difference(trial.collect_events(), group)
            if mismatch is not None:
                self.problems.append(mismatch)
        self.table = _apply(table, group)


def check_rules(before: Table, events: list[TableEvent]) -> list[dict[str, Any]]:
    check = RulesCheck(before)
    for group in commands(events):
        check.feed(group)
    return check.problems


def _apply(table: Table, group: list[TableEvent]) -> Table:
    for e in group:
        e.mutate(table)
    table.collect_events()
    return table


def _first_difference(decided: list[Any], recorded: list[TableEvent]) -> dict[str, Any] | None:
    for i, e in enumerate(recorded):
        if i >= len(decided):
            return problem("rules", e.public(), f"{e.type} was recorded, but the rules record nothing more here")
        d = decided[i]
        if (d.type, d.actor, d.data) != (e.type, e.actor, e.data):
            return problem("rules", e.public(), f"recorded {e.type} {_show(e)} by {e.actor}; the rules give "
                                                f"{d.type} {_show(d)} by {d.actor}")
    if len(decided) > len(recorded):
        d = decided[len(recorded)]
        return problem("rules", recorded[-1].public(), f"the rules also record {d.type} {_show(d)} after this event")
    return None


def _show(e: Any) -> str:
    data = {k: v for k, v in e.data.items() if k != "seed"}
    return str(data)


def check_money(before: dict[str, Any] | None, after: dict[str, Any], events: list[TableEvent]) -> list[dict[str, Any]]:
    moved: dict[str, int] = {}
    for e in events:
        if e.type != "PaymentMade":
            continue
        amount = e.amount  # type: ignore[attr-defined]
        if not isinstance(amount, int) or isinstance(amount, bool) or amount <= 0 or e.payer == e.payee:  # type: ignore[attr-defined]
            return [problem("money", e.public(), f"a payment of {amount!r} from {e.payer} to {e.payee} is not a valid movement")]  # type: ignore[attr-defined]
        moved[e.payer] = moved.get(e.payer, 0) - amount  # type: ignore[attr-defined]
        moved[e.payee] = moved.get(e.payee, 0) + amount  # type: ignore[attr-defined]
    totals_before, totals_after = _totals(before), _totals(after)
    for name in set(totals_before) | set(totals_after) | set(moved):
        if totals_after.get(name, 0) - totals_before.get(name, 0) != moved.get(name, 0):
            return [problem("money", None, f"{name}'s balance moved by {totals_after.get(name, 0) - totals_before.get(name, 0)}"
                                           f" while the payments move it by {moved.get(name, 0)}")]
    if sum(totals_after.values()) != 0:
        return [problem("money", None, f"balances and accounts sum to {sum(totals_after.values())}, not 0")]
    return []


def _totals(state: dict[str, Any] | None) -> dict[str, int]:
    if state is None:
        return {}
    totals = dict(state["balances"])
    for account in ACCOUNTS:
        if account in state:
            totals[account] = state[account]
    return totals
