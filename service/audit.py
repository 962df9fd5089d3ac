"""Audit: a round's record with its checks, and a whole table verified (docs/design.md "Replay and audit").

Checks, each naming the offending event when it fails:
- chain: the stored log whole and in order (no version missing, none unreadable, timestamps rising, nothing
  cut off behind a snapshot or the read model) and every digest recomputed from the one before;
- cards: every revealed seed against the commitment recorded at its shuffle, and every dealt card equal to
  the shoe recomputed from that seed and cut (null until revealed), all read from the log itself;
- rules: every command of the round run again through the game's own rules, from the state before it,
  must give exactly the recorded events (outcome, draws, payments, the bank, the shoe);
- money: every payment positive and between two different parties, balances moved by exactly the payments,
  and all balances and accounts together summing to zero.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from typing import Any

from domain.chain import digest, format_timestamp
from domain.errors import DomainError
from domain.games import GAMES
from domain.shuffle import ALGORITHM, shoe_order
from domain.table import Table, TableEvent
from service.errors import DamagedLog, IndexIncomplete, NotFoundInHistory, ServiceError
from service.history import TableHistory


def problem(check: str, event: dict[str, Any] | None, message: str) -> dict[str, Any]:
    return {
        "check": check,
        "version": event["version"] if event else None,
        "type": event["type"] if event else None,
        "message": message,
    }


def at(check: str, version: int | None, message: str, type_: str | None = None) -> dict[str, Any]:
    return {"check": check, "version": version, "type": type_, "message": message}


def _versions(first: int, last: int) -> str:
    return f"version {first} is" if first == last else f"versions {first} to {last} are"


def missing_message(first: int, last: int, found: int | None) -> str:
    """"version 17 is missing: the log goes from 16 to 18"; ``found`` None when the log ends before."""
    what = f"{_versions(first, last)} missing"
    if found is None:
        return f"{what}: the log ends at {first - 1}"
    if first == 1:
        return f"{what}: the log starts at {found}"
    return f"{what}: the log goes from {first - 1} to {found}"


def unreadable_message(version: int) -> str:
    return f"the stored event at version {version} cannot be read: it was altered or damaged"


class LogCheck:
    """Follows a stretch of the stored log row by row and names every break at its version: a version
    missing, a row that cannot be read, a timestamp not after the one before (rows exchanged, or a time
    altered), a digest that does not follow from the one before (docs/design.md "The event envelope and the hash
    chain"). It goes on after a break, so that one problem does not hide the next."""

    def __init__(self, expected: int = 1, prev: str | None = "", moment: Any = None) -> None:
        self.expected = expected  # the version the next row must have
        self.prev = prev  # the digest of the event before it; None when that event is missing or unreadable
        self.moment = moment  # the timestamp of the last readable event
        self.last: int | None = None  # the last version read, readable or not
        self.rows = 0
        self.problems: list[dict[str, Any]] = []

    def _arrive(self, version: int) -> None:
        self.rows += 1
        if version > self.expected:
            self.problems.append(at("chain", self.expected, missing_message(self.expected, version - 1, version)))
            self.prev = None
        elif version < self.expected:  # the stores refuse it, but a log served by anything else may do it
            self.problems.append(at("chain", version, f"version {version} comes after version {self.expected - 1}: "
                                                      "the log is out of order"))
        self.expected = max(self.expected, version + 1)
        self.last = version

    def feed(self, e: TableEvent) -> None:
        version = e.originator_version
        self._arrive(version)
        public = e.public()
        found = []
        if self.moment is not None and e.timestamp <= self.moment:
            found.append(f"its timestamp {public['timestamp']} is not after {format_timestamp(self.moment)}, the one "
                         "before it: versions out of order (rows exchanged) or a timestamp altered")
        if self.prev is not None:
            expected = digest(self.prev, version, public["type"], public["timestamp"], public["actor"], e.data)
            if expected != e.digest:
                found.append(f"digest {e.digest} recorded, {expected} recomputed from the event before it: "
                             "this event or the one before it was altered")
        if found:
            self.problems.append(problem("chain", public, "; ".join(found)))
        self.prev, self.moment = e.digest, e.timestamp

    def unreadable(self, version: int) -> None:
        self._arrive(version)
        self.problems.append(at("chain", version, unreadable_message(version)))
        self.prev = None

    def end(self, upto: int) -> None:
        """The stretch should reach ``upto``: the versions after the last row read are missing."""
        if self.expected <= upto:
            self.problems.append(at("chain", self.expected, missing_message(self.expected, upto, None)))


# --- the shoes, read from the log --------------------------------------------------------------------


def shoe_record(e: TableEvent) -> dict[str, Any]:
    """What a ShoeShuffled in the log says of its shoe, with room for its cut and reveal."""
    return {
        "shoe": e.shoe, "deck": e.deck, "decks": e.decks, "algorithm": e.algorithm,  # type: ignore[attr-defined]
        "commitment": e.commitment, "cut": 0, "seed": None,  # type: ignore[attr-defined]
        "shuffled_version": e.originator_version, "cut_version": None, "revealed_version": None,
    }


class ShoeLog:
    """Every shoe as the log records it: its ShoeShuffled (commitment, decks, algorithm, deck), its ShoeCut
    (position) and its ShoeRevealed (seed), with their versions; and the cards dealt from it."""

    def __init__(self) -> None:
        self.shoes: dict[int, dict[str, Any]] = {}
        self.dealt: dict[int, list[TableEvent]] = {}
        self.problems: list[dict[str, Any]] = []

    def feed(self, e: TableEvent) -> None:
        kind = e.type
        if kind not in ("ShoeShuffled", "ShoeCut", "ShoeRevealed", "CardDealt"):
            return
        number = e.shoe  # type: ignore[attr-defined]
        if kind == "CardDealt":
            self.dealt.setdefault(number, []).append(e)
            return
        if kind == "ShoeShuffled":
            if number in self.shoes and self.shoes[number]["shuffled_version"] is not None:
                first = self.shoes[number]["shuffled_version"]
                self.problems.append(problem("cards", e.public(), f"shoe {number} is shuffled again, "
                                                                  f"after its shuffle at version {first}"))
                return
            self.shoes[number] = {**shoe_record(e), **{k: v for k, v in self.shoes.get(number, {}).items()
                                                       if k in ("cut", "cut_version", "seed", "revealed_version")}}
            return
        shoe = self.shoes.setdefault(number, {"shoe": number, "deck": None, "decks": None, "algorithm": None,
                                              "commitment": None, "cut": 0, "seed": None, "shuffled_version": None,
                                              "cut_version": None, "revealed_version": None})
        if kind == "ShoeCut":
            shoe["cut"], shoe["cut_version"] = e.position, e.originator_version  # type: ignore[attr-defined]
        else:
            shoe["seed"], shoe["revealed_version"] = e.seed, e.originator_version  # type: ignore[attr-defined]


def check_shoe(number: int, shoe: dict[str, Any] | None, dealt: list[TableEvent]) -> tuple[bool | None, list[dict[str, Any]]]:
    """One shoe as recorded in the log: its revealed seed against the commitment recorded at its shuffle, and
    every card dealt from it against the shoe recomputed from that seed and the cut. None while unrevealed."""
    if shoe is None or shoe["shuffled_version"] is None:
        uses = [(e.originator_version, e.type) for e in dealt[:1]]
        if shoe is not None:
            uses += [(shoe[k], t) for k, t in (("cut_version", "ShoeCut"), ("revealed_version", "ShoeRevealed")) if shoe[k]]
        version, kind = min(uses)
        return False, [at("cards", version, f"shoe {number} is used at version {version} ({kind}), but the log "
                                            "never shuffled it", kind)]
    if shoe["seed"] is None:
        return None, []
    revealed, shuffled = shoe["revealed_version"], shoe["shuffled_version"]
    try:
        seed = bytes.fromhex(shoe["seed"])
    except (TypeError, ValueError):
        return False, [at("cards", revealed, f"shoe {number}: the seed revealed at version {revealed}, "
                                             f"{shoe['seed']!r}, is not hexadecimal", "ShoeRevealed")]
    hashed = hashlib.sha256(seed).hexdigest()
    if hashed != shoe["commitment"]:
        return False, [at("cards", revealed, f"shoe {number}: the seed revealed at version {revealed} hashes to "
                                             f"{hashed}, the commitment recorded at version {shuffled} is "
                                             f"{shoe['commitment']}", "ShoeRevealed")]
    if shoe["algorithm"] != ALGORITHM:
        return False, [at("cards", shuffled, f"shoe {number} names the algorithm {shoe['algorithm']!r}; "
                                             f"the only one is {ALGORITHM}", "ShoeShuffled")]
    try:
        order = shoe_order(seed, shoe["decks"], shoe["cut"])
    except (TypeError, ValueError) as exc:
        return False, [at("cards", shuffled, f"shoe {number} cannot be recomputed from its seed, its decks "
                                             f"({shoe['decks']!r}) and its cut ({shoe['cut']!r}): {exc}", "ShoeShuffled")]
    for e in dealt:
        position = e.position  # type: ignore[attr-defined]
        truth = order[position] if isinstance(position, int) and 0 <= position < len(order) else "nothing"
        if truth != e.card:  # type: ignore[attr-defined]
            cut = f"cut at version {shoe['cut_version']}" if shoe["cut_version"] else "not cut"
            return False, [problem("cards", e.public(), f"{e.card} recorded at position {position} of shoe {number};"  # type: ignore[attr-defined]
                                                        f" the shoe recomputed from the seed revealed at version "
                                                        f"{revealed} ({cut}) has {truth} there")]
    return True, []


def _by_number(number: Any) -> tuple[bool, str, Any]:
    """Shoe numbers in order; an altered one of another kind sorts last instead of failing the sort."""
    whole = isinstance(number, int)
    return (not whole, "" if whole else repr(number), number if whole else 0)


def check_cards(events: list[TableEvent], shoes: dict[int, dict[str, Any]]) -> tuple[bool | None, list[dict[str, Any]]]:
    """Each CardDealt against its shoe recomputed from the revealed seed; None while a shoe is unrevealed.
    ``shoes`` are records read from the log (ShoeLog, or the round audit's reads)."""
    dealt: dict[int, list[TableEvent]] = {}
    for e in events:
        if e.type == "CardDealt":
            dealt.setdefault(e.shoe, []).append(e)  # type: ignore[attr-defined]
    results, problems = [], []
    for number in sorted(dealt, key=_by_number):
        ok, found = check_shoe(number, shoes.get(number), dealt[number])
        results.append(ok)
        problems += found
    if False in results:
        return False, problems
    return (None if None in results else True), problems


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
    from the store at the end of the recorded command, so one bad command does not hide the next one's problems.

    Where the log is not whole (a version missing or unreadable) there is no state to run a command from: the
    check says so once, and resumes at the end of the first command from which the table can be rebuilt again
    (the next snapshot past the damage)."""

    def __init__(self, before: Table | None, rebuild: Callable[[int], Table]) -> None:
        self.table = before
        self.rebuild = rebuild
        self.problems: list[dict[str, Any]] = []
        self.commands = 0
        self.stalled = False  # a rebuild failed and was reported; quiet until one succeeds

    def feed(self, group: list[TableEvent]) -> None:
        table = self.table
        public = [e.public() for e in group]
        end = group[-1].originator_version
        versions = [e.originator_version for e in group]
        if table is None or versions != list(range(table.version + 1, end + 1)):
            self._resume(group)  # the log's own check names the missing or unreadable versions
            return
        if group[0].type in GAMES[table.game].opening_events:
            try:
                self.table = _apply(table, group[1:] if group[0].type == "TableOpened" else group)
            except Exception as exc:  # noqa: BLE001 - a decodable but altered event may not apply
                self.problems.append(problem("rules", public[0], f"{group[0].type} cannot be applied: {exc!r}"))
                self._resume(group)
            return
        self.commands += 1
        try:
            command, player, args = table.command_of(public)  # type: ignore[attr-defined]
        except (KeyError, StopIteration):
            self.problems.append(problem("rules", public[0], f"no command of {table.game} begins with {group[0].type}"))
            self._resume(group)
            return
        try:
            seeds = iter([bytes.fromhex(e.seed) for e in group if e.type == "ShoeShuffled"])  # type: ignore[attr-defined]
        except (TypeError, ValueError):
            self.problems.append(problem("rules", public[0], f"a shuffle of this {command} stores a seed that is not "
                                                             "hexadecimal"))
            self._resume(group)
            return
        try:
            table.handle(command, player, args, group[0].timestamp, lambda: next(seeds))
        except (DomainError, StopIteration) as exc:
            message = getattr(exc, "message", "a shuffle is missing its seed")
            self.problems.append(problem("rules", public[0], f"the rules refuse this {command} by {player}: {message}"))
            self._resume(group)
            return
        except Exception as exc:  # noqa: BLE001 - recorded arguments of the wrong kind may fail anywhere in the rules
            self.problems.append(problem("rules", public[0], f"this {command} by {player} cannot be run again "
                                                             f"with its recorded arguments {args!r}: {exc!r}"))
            self._resume(group)
            return
        mismatch = _first_difference(table.collect_events(), group)
        if mismatch is not None:
            self.problems.append(mismatch)
            self._resume(group)

    def _resume(self, group: list[TableEvent]) -> None:
        """The table as stored at the end of this command, to check the next one from."""
        end = group[-1].originator_version
        try:
            self.table = self.rebuild(end)
        except ServiceError as exc:
            self.table = None
            if not self.stalled:
                detail = getattr(exc, "detail", exc.message)
                self.problems.append(at("rules", end, f"the table cannot be rebuilt at version {end} to check the "
                                                      f"commands after it ({detail}); the check resumes where a "
                                                      "snapshot past the damage allows", group[-1].type))
            self.stalled = True
        else:
            self.stalled = False


def check_rules(before: Table | None, events: list[TableEvent], rebuild: Callable[[int], Table]) -> list[dict[str, Any]]:
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
            return problem("rules", e.public(), f"{e.type} {_show(e)} was recorded, but the rules record nothing "
                                                "more here")
        d = decided[i]
        if (d.type, d.actor, d.data) != (e.type, e.actor, e.data):
            # A seed is shown only where the log reveals it at this very event (then both seeds are public).
            reveal = e.type == d.type == "ShoeRevealed"
            return problem("rules", e.public(), f"recorded {e.type} {_show(e, reveal)} by {e.actor}; the rules give "
                                                f"{d.type} {_show(d, reveal)} by {d.actor}")
    if len(decided) > len(recorded):
        d = decided[len(recorded)]
        last = recorded[-1].originator_version
        return at("rules", d.originator_version, f"the rules also record {d.type} {_show(d, False)} at version "
                                                 f"{d.originator_version}, after this command's last recorded event at "
                                                 f"{last}", d.type)
    return None


def _show(e: Any, reveal: bool | None = None) -> str:
    """The event's data as a message shows it: a revealed seed is public, any other seed is not."""
    if reveal is None:
        reveal = e.type == "ShoeRevealed"
    data = {k: v for k, v in e.data.items() if k != "seed" or reveal}
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
    for account in GAMES[state["game"]].accounts:
        if account in state:
            totals[account] = state[account]
    return totals


# --- the two audits the service offers ------------------------------------------------------------


def _catch_up(history: TableHistory) -> DamagedLog | None:
    """The read model caught up; a row it cannot read stops it where it is, which the audits, reading the log
    itself, then name at its version. Returns that damage, if any."""
    try:
        history.index_caught_up()
    except DamagedLog as exc:
        return exc
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
             else f"{event.type} {_show(event, False)}")
    problems.append(at("cards", version, f"shoe {shoe} has its {kind} at version {version}, but the log now has "
                                         f"{there} there", event.type if event else None))
    return None


def _find_cut(history: TableHistory, table_id: str, shuffled: int, first_card: int, shoe: int) -> TableEvent | None:
    """The shoe's ShoeCut: between its shuffle and its first card (right after the shuffle in practice, so the
    first small read finds it); None for a deck dealt uncut."""
    after = shuffled
    while after < first_card:
        try:
            page = history.read_events(table_id, after=after, upto=first_card, limit=8)
        except DamagedLog:
            return None  # the rows in between are named by the log's own check
        for e in page:
            if getattr(e, "shoe", None) == shoe and e.type in ("ShoeCut", "CardDealt", "ShoeShuffled"):
                return e if e.type == "ShoeCut" else None
        if len(page) < 8:
            return None
        after = page[-1].originator_version
    return None


def _damaged_state(history: TableHistory, table_id: str, version: int, problems: list[dict[str, Any]], quiet: bool) -> dict[str, Any] | None:
    """The state at ``version``, or None where the log cannot give it (named, unless already named)."""
    try:
        return history.state_at(table_id, version)
    except DamagedLog as exc:
        if not quiet:
            problems.append(at("chain", exc.version, f"the state at version {version} cannot be rebuilt: {exc.detail}"))
        return None


def round_audit(history: TableHistory, table_id: str, number: int) -> dict[str, Any]:
    """One finished round: its events, the state before and after, cards, decisions, payments, and the
    checks (docs/design.md "Replay and audit"). Reads only the round's events and two snapshot-based states.
    A round whose stored events are not whole is audited as far as they allow, every break named."""
    row = _finished_round(history, table_id, number)
    first, last = row["first_version"], row["last_version"]
    log, events = _round_log(history, table_id, first, last)
    problems = list(log.problems)
    state_before = _damaged_state(history, table_id, first - 1, problems, bool(problems)) if first > 1 else None
    state_after = _damaged_state(history, table_id, last, problems, bool(problems))
    shoes, shoe_problems = _log_shoes(history, table_id, events)
    cards_ok, card_problems = check_cards(events, shoes)
    if shoe_problems:
        cards_ok, card_problems = False, shoe_problems + card_problems
    rule_problems = _round_rules(history, table_id, first, events)
    if state_after is None or (first > 1 and state_before is None):
        money_problems = [at("money", None, "the states around the round cannot be rebuilt: the money is not checked")]
    else:
        money_problems = check_money(state_before, state_after, events)
    public = [e.public() for e in events]
    return {
        **{k: v for k, v in row.items() if k != "table_id"},
        "events": public,
        "state_before": state_before,
        "state_after": state_after,
        **_round_record(public),
        "checks": {
            "chain": not [p for p in problems if p["check"] == "chain"],
            "cards": cards_ok,
            "rules": not rule_problems,
            "money": not money_problems,
        },
        "problems": problems + card_problems + rule_problems + money_problems + _index_problems(history, table_id),
    }


def _finished_round(history: TableHistory, table_id: str, number: int) -> dict[str, Any]:
    """The read model's row of the round: where it starts and ends in the log."""
    history.require_table(table_id)
    stuck = _catch_up(history)
    row = history.indexed_round(table_id, number)
    if row is not None:
        return row
    index_error = history.index_error(table_id)
    if index_error is not None:
        raise IndexIncomplete(table_id, index_error, f"Round {number}")
    if stuck is not None and 1 <= number <= 2**62:  # a larger number cannot exist
        raise stuck  # the round may lie past a row the read model could not read: a 409 that says so
    indexed = history.indexed_table(table_id)
    finished = indexed["rounds"] if indexed is not None else 0
    raise NotFoundInHistory(
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


def _round_rules(history: TableHistory, table_id: str, first: int, events: list[TableEvent]) -> list[dict[str, Any]]:
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
    return problems + check_rules(table_before, whole, rebuild)


def _round_record(public: list[dict[str, Any]]) -> dict[str, Any]:
    """The round's cards, decisions (with their actors) and payments, as its audit lists them."""
    return {
        "cards": [{"version": e["version"], **e["data"]} for e in public if e["type"] == "CardDealt"],
        "decisions": [
            {"version": e["version"], "type": e["type"], "actor": e["actor"], "data": e["data"]}
            for e in public
            if e["type"] not in ("PaymentMade", "CardDealt") or (e["type"] == "CardDealt" and e["data"]["face_up"])
        ],
        "payments": [{"version": e["version"], **e["data"]} for e in public if e["type"] == "PaymentMade"],
    }


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
                page = history.read_events(table_id, upto=at_version - 1, newest_first=True, limit=8)
            else:
                page = history.read_events(table_id, after=at_version, limit=8)
            same = [e for e in page if e.command == edge.command]  # type: ignore[attr-defined]
            found += same
            if len(same) < len(page) or len(page) < 8:
                return found
    except DamagedLog:
        return found


class _WholeLog:
    """Everything verify() learns in one pass over the stored log."""

    def __init__(self, history: TableHistory, table_id: str) -> None:
        self.log, self.shoes = LogCheck(), ShoeLog()
        self.rules = RulesCheck(None, lambda v: history.table(table_id, version=v))
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

    def _feed(self, version: int, e: TableEvent | None) -> None:
        if e is None:
            self.log.unreadable(version)
            self._pending = []  # the command around an unreadable row cannot be run again
            return
        self.log.feed(e)
        self.shoes.feed(e)
        if e.type == "PaymentMade":
            self.payments.append(e)
        if self._pending and e.command != self._pending[-1].command:
            self.rules.feed(self._pending)
            self._pending = []
        self._pending.append(e)


def verify(history: TableHistory, table_id: str) -> dict[str, Any]:
    """The whole table: the log whole and in order, the chain from its first event, every shoe against the
    seed and commitment the log records, every command run again through the rules, and the money."""
    history.require_table(table_id)
    _catch_up(history)
    # Read before the log, which only grows: in an honest store neither can be ahead of what is read next.
    indexed = history.indexed_table(table_id)
    snapshot = history.snapshot_version(table_id)
    whole = _WholeLog(history, table_id)
    whole.read(history, table_id)
    end = whole.log.last or 0
    problems = list(whole.log.problems) + _ends_ahead(end, snapshot, indexed)
    chain_problems = [p for p in problems if p["check"] == "chain"]
    shoe_rows, shoe_problems = _shoe_rows(whole.shoes)
    problems += shoe_problems + whole.shoes.problems + whole.rules.problems
    try:
        head = history.current_state(table_id)
    except DamagedLog as exc:
        if not chain_problems:
            problems.append(at("chain", exc.version, f"the table's state cannot be rebuilt: {exc.detail}"))
    else:
        # Payments missing from a damaged log cannot add up to the balances: that is named at its version.
        problems += check_money(None, head, whole.payments)
    problems += _index_problems(history, table_id)
    first_broken = min((p["version"] for p in chain_problems), default=None)
    return {
        "ok": not problems,
        "chain": {"events": whole.log.rows, "last_version": end, "ok": not chain_problems,
                  "first_broken_version": first_broken},
        "shoes": shoe_rows,
        "commands_checked": whole.rules.commands,
        "rounds_checked": indexed["rounds"] if indexed else 0,
        "problems": problems,
    }


def _ends_ahead(end: int, snapshot: int | None, indexed: dict[str, Any] | None) -> list[dict[str, Any]]:
    """A snapshot, or the read model's count, past the log's last version: the log was cut short behind them."""
    problems = []
    if snapshot is not None and snapshot > end:
        problems.append(at("chain", end + 1, f"the snapshot at version {snapshot} is ahead of the log, which ends at "
                                             f"{end} ({_versions(end + 1, snapshot)} missing)"))
    if indexed is not None and indexed["version"] > max(end, snapshot or 0):
        problems.append(at("chain", end + 1, f"the read model counted the table up to version {indexed['version']}, "
                                             f"but the log ends at {end} ({_versions(end + 1, indexed['version'])} "
                                             "missing)"))
    return problems


def _shoe_rows(shoes: ShoeLog) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Each shoe of the log checked: its row of the verify report, and its problems."""
    rows, problems = [], []
    for number in sorted(set(shoes.shoes) | set(shoes.dealt), key=_by_number):
        shoe, cards = shoes.shoes.get(number), shoes.dealt.get(number, [])
        ok, found = check_shoe(number, shoe, cards)
        problems += found
        rows.append({
            "shoe": number, "deck": shoe and shoe["deck"], "decks": shoe and shoe["decks"],
            "cut": shoe["cut"] if shoe else 0, "dealt": len(cards), "revealed": bool(shoe and shoe["seed"] is not None),
            "ok": ok, "shuffled_version": shoe and shoe["shuffled_version"],
            "revealed_version": shoe and shoe["revealed_version"],
        })
    return rows, problems


def _index_problems(history: TableHistory, table_id: str) -> list[dict[str, Any]]:
    """The read model gives the audits the table's shoes (seeds, cuts) and its rounds: where it could not
    index the table, what came after is not checked, and the audit must not look complete."""
    index_error = history.index_error(table_id)
    if index_error is None:
        return []
    return [problem("index", {"version": index_error["version"], "type": None},
                    f"the read model could not index this table from here on ({index_error['message']}): "
                    "shoes and rounds after it are not checked")]
