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

import hashlib
from collections.abc import Callable, Iterator
from typing import Any
from uuid import UUID

from domain.chain import digest
from domain.errors import DomainError
from domain.shuffle import ALGORITHM, shoe_order
from domain.table import Table, TableEvent
from service.errors import IndexIncomplete, NotFoundInHistory

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
    """Runs each recorded command again, from the state before it, through the game's own rules, and compares
    what the rules record with what was recorded. Given the recorded time, an honest command is recorded again
    to the byte (same timestamps, same digests), so the table simply moves on; after a difference it is rebuilt
    from the store at the end of the recorded command, so one bad command does not hide the next one's problems."""

    def __init__(self, before: Table, rebuild: Callable[[int], Table]) -> None:
        self.table = before
        self.rebuild = rebuild
        self.problems: list[dict[str, Any]] = []
        self.commands = 0

    def feed(self, group: list[TableEvent]) -> None:
        table = self.table
        public = [e.public() for e in group]
        if group[0].type in ("TableOpened", "RolesAssigned"):
            self.table = _apply(table, group[1:] if group[0].type == "TableOpened" else group)
            return
        self.commands += 1
        end = group[-1].originator_version
        try:
            command, player, args = table.command_of(public)  # type: ignore[attr-defined]
        except (KeyError, StopIteration):
            self.problems.append(problem("rules", public[0], f"no command of {table.game} begins with {group[0].type}"))
            self.table = self.rebuild(end)
            return
        seeds = iter([bytes.fromhex(e.seed) for e in group if e.type == "ShoeShuffled"])  # type: ignore[attr-defined]
        try:
            table.handle(command, player, args, group[0].timestamp, lambda: next(seeds))
        except (DomainError, StopIteration) as exc:
            message = getattr(exc, "message", "a shuffle is missing its seed")
            self.problems.append(problem("rules", public[0], f"the rules refuse this {command} by {player}: {message}"))
            self.table = self.rebuild(end)
            return
        mismatch = _first_difference(table.collect_events(), group)
        if mismatch is not None:
            self.problems.append(mismatch)
            self.table = self.rebuild(end)


def check_rules(before: Table, events: list[TableEvent], rebuild: Callable[[int], Table]) -> list[dict[str, Any]]:
    check = RulesCheck(before, rebuild)
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


# --- the two audits the service offers ------------------------------------------------------------


def read_events(service: Any, uuid: UUID, after: int, upto: int | None, limit: int | None = None) -> tuple[list[TableEvent], int | None]:
    """Stored events after a version; with the version of the first one that cannot be read at all (its
    stored form was damaged), if any. The events before it are returned."""
    try:
        events = list(service.events.get(uuid, gt=after, lte=upto, limit=limit))
        for e in events:
            e.public()
        return events, None
    except Exception:  # noqa: BLE001 - any failure to decode a stored event is what an auditor must hear of
        pass
    found: list[TableEvent] = []
    version = after + 1
    while upto is None or version <= upto:
        try:
            page = list(service.events.get(uuid, gt=version - 1, lte=version))
            for e in page:
                e.public()  # a field missing from the stored form shows here
        except Exception:  # noqa: BLE001
            return found, version
        if not page:
            return found, None
        found += page
        version += 1
    return found, None


def _unreadable_round(row: dict[str, Any], events: list[TableEvent], version: int) -> dict[str, Any]:
    message = f"the stored event at version {version} cannot be read: it was altered or damaged"
    return {
        **{k: v for k, v in row.items() if k != "table_id"},
        "events": [e.public() for e in events],
        "state_before": None,
        "state_after": None,
        "cards": [],
        "decisions": [],
        "payments": [],
        "checks": {"chain": False, "cards": None, "rules": False, "money": False},
        "problems": [{"check": "chain", "version": version, "type": None, "message": message}],
    }


def round_audit(service: Any, table_id: str, number: int) -> dict[str, Any]:
    """One finished round: its events, the state before and after, cards, decisions, payments, and the
    checks (DESIGN.md "Replay and audit"). Reads only the round's events and two snapshot-based states."""
    uuid = service._uuid(table_id)
    service._known(table_id)
    service.index.catch_up()
    in_range = 1 <= number <= 2**62  # a larger number cannot exist, and would overflow a database integer
    rows = service.index.view.list_rounds(str(uuid), number - 1, 1) if in_range else []
    if not in_range or not rows or rows[0]["round"] != number:
        index_error = service.index_error(table_id)
        if index_error is not None:
            raise IndexIncomplete(table_id, index_error, f"Round {number}")
        finished = service.index.view.get_tables([str(uuid)])[str(uuid)]["rounds"]
        raise NotFoundInHistory(
            f"Table '{table_id}' has no finished round {number}; its finished rounds are "
            + (f"1 to {finished}." if finished else "none yet.")
        )
    row = rows[0]
    first, last = row["first_version"], row["last_version"]
    events, unreadable = read_events(service, uuid, first - 1, last)
    if unreadable is not None:
        return _unreadable_round(row, events, unreadable)
    prev = service._event(table_id, first - 1).digest if first > 1 else ""
    state_before = service._historic_state(table_id, first - 1) if first > 1 else None
    state_after = service._historic_state(table_id, last)
    numbers = sorted({e.shoe for e in events if e.type == "CardDealt"})  # type: ignore[attr-defined]
    shoes = {s["shoe"]: s for s in service.index.view.get_shoes(str(uuid), numbers)}
    chain_problems = check_chain(prev, events)
    cards_ok, card_problems = check_cards(events, shoes)
    # The rules re-run whole commands: a round may start or end inside one (the card lottery's stage 2
    # begins in the command that reveals the last stage-1 round).
    whole = _whole_commands(service, uuid, events)
    start = whole[0].originator_version
    rule_problems = check_rules(
        service._get(table_id, version=start - 1), whole, lambda v: service._get(table_id, version=v)
    )
    money_problems = check_money(state_before, state_after, events)
    index_problems = _index_problems(service, table_id)
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
        "problems": chain_problems + card_problems + rule_problems + money_problems + index_problems,
    }


def _whole_commands(service: Any, uuid: UUID, events: list[TableEvent]) -> list[TableEvent]:
    """The events widened to the whole commands they belong to, read a few at a time: most rounds start
    and end at a command's edge, so one small read each way shows it."""
    head: list[TableEvent] = []
    while True:
        edge = (head[-1] if head else events[0]).originator_version
        page = list(service.events.get(uuid, lte=edge - 1, desc=True, limit=8))
        same = [e for e in page if e.command == events[0].command]  # type: ignore[attr-defined]
        head += same
        if len(same) < len(page) or len(page) < 8:
            break
    tail: list[TableEvent] = []
    while True:
        edge = (tail[-1] if tail else events[-1]).originator_version
        page = list(service.events.get(uuid, gt=edge, limit=8))
        same = [e for e in page if e.command == events[-1].command]  # type: ignore[attr-defined]
        tail += same
        if len(same) < len(page) or len(page) < 8:
            break
    return list(reversed(head)) + events + tail


def verify(service: Any, table_id: str) -> dict[str, Any]:
    """The whole table: the chain from its first event, every shoe against its revealed seed, every
    command run again through the rules, and the money."""
    uuid = service._uuid(table_id)
    service._known(table_id)
    service.index.catch_up()
    problems: list[dict[str, Any]] = []
    prev, count, chain_broken = "", 0, None
    dealt: dict[int, list[TableEvent]] = {}
    rules: RulesCheck | None = None
    pending: list[TableEvent] = []
    payments: list[TableEvent] = []
    after = 0
    while True:
        batch, unreadable = read_events(service, uuid, after, None, limit=1000)
        if unreadable is not None:
            problems.append({"check": "chain", "version": unreadable, "type": None,
                             "message": f"the stored event at version {unreadable} cannot be read: it was altered or damaged"})
            chain_broken = chain_broken or unreadable
        for e in batch:
            count += 1
            if chain_broken is None:
                found = check_chain(prev, [e])
                if found:
                    chain_broken = e.originator_version
                    problems += found
            prev = e.digest
            if e.type == "CardDealt":
                dealt.setdefault(e.shoe, []).append(e)  # type: ignore[attr-defined]
            elif e.type == "PaymentMade":
                payments.append(e)
            if pending and e.command != pending[-1].command:
                rules = _rules_feed(service, table_id, rules, pending)
                pending = []
            pending.append(e)
        if unreadable is not None or len(batch) < 1000:
            break
        after = batch[-1].originator_version
    if pending and unreadable is None:  # after an unreadable event the last command is not whole
        rules = _rules_feed(service, table_id, rules, pending)
    shoes = []
    for shoe in service.index.view.get_shoes(str(uuid)):
        cards = dealt.get(shoe["shoe"], [])
        ok, found = check_cards(cards, {shoe["shoe"]: shoe})
        problems += found
        shoes.append({
            "shoe": shoe["shoe"], "deck": shoe["deck"], "decks": shoe["decks"], "cut": shoe["cut"],
            "dealt": len(cards), "revealed": shoe["seed"] is not None, "ok": ok,
        })
    if rules is not None:
        problems += rules.problems
    if unreadable is None:  # the state at the head is rebuilt from the very events that could not be read
        problems += check_money(None, service.current_state(table_id), payments)
    problems += _index_problems(service, table_id)
    row = service.index.view.get_tables([str(uuid)]).get(str(uuid))
    rounds = row["rounds"] if row else 0
    return {
        "ok": not problems,
        "chain": {"events": count, "ok": chain_broken is None, "first_broken_version": chain_broken},
        "shoes": shoes,
        "commands_checked": rules.commands if rules else 0,
        "rounds_checked": rounds,
        "problems": problems,
    }


def _index_problems(service: Any, table_id: str) -> list[dict[str, Any]]:
    """The read model gives the audits the table's shoes (seeds, cuts) and its rounds: where it could not
    index the table, what came after is not checked, and the audit must not look complete."""
    index_error = service.index_error(table_id)
    if index_error is None:
        return []
    return [problem("index", {"version": index_error["version"], "type": None},
                    f"the read model could not index this table from here on ({index_error['message']}): "
                    "shoes and rounds after it are not checked")]


def _rules_feed(service: Any, table_id: str, rules: RulesCheck | None, group: list[TableEvent]) -> RulesCheck:
    if rules is None:  # the opening: start from the table as it was opened
        rules = RulesCheck(
            service._get(table_id, version=group[-1].originator_version),
            lambda v: service._get(table_id, version=v),
        )
        return rules
    rules.feed(group)
    return rules
