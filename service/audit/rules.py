"""The rules check: each recorded command run again through the game's rules must give the recorded events.

From the state before the command, exactly: outcome, draws, payments, the bank, the shoe.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from domain.errors import DomainError
from domain.games import GAMES
from domain.sight import Sight
from domain.table import Table, TableEvent
from service import present
from service.audit.problems import at
from service.errors import ServiceError


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

    def __init__(self, before: Table | None, rebuild: Callable[[int], Table], seen: Sight | None = None) -> None:
        self.table = before
        self.seen = seen  # who reads the problems: a hidden card they quote is shown as this reader sees it
        self.rebuild = rebuild
        self.problems: list[dict[str, Any]] = []
        self.commands = 0
        self.stalled = False  # a rebuild failed and was reported; quiet until one succeeds

    def feed(self, group: list[TableEvent]) -> None:
        table = self.table
        end = group[-1].originator_version
        versions = [e.originator_version for e in group]
        if table is None or versions != list(range(table.version + 1, end + 1)):
            self._resume(group)  # the log's own check names the missing or unreadable versions
            return
        if group[0].type in GAMES[table.game].opening_events:
            try:
                self.table = _apply(table, group[1:] if group[0].type == "TableOpened" else group)
            except Exception as exc:  # noqa: BLE001 - a decodable but altered event may not apply
                self._fail(group, f"{group[0].type} cannot be applied: {exc!r}")
            return
        self.commands += 1
        try:
            command, player, args = table.command_of(present.events(group))  # type: ignore[attr-defined]
        except (KeyError, StopIteration):
            self._fail(group, f"no command of {table.game} begins with {group[0].type}")
            return
        try:
            seeds = iter([bytes.fromhex(e.seed) for e in group if e.type == "ShoeShuffled"])  # type: ignore[attr-defined]
        except (TypeError, ValueError):
            self._fail(group, f"a shuffle of this {command} stores a seed that is not hexadecimal")
            return
        # The recorded salts, in the order the command drew them, so the rules record the very digests again (a
        # part recorded without one is the chain check's to name: the rules' events are compared by their data).
        salts = iter([salt for e in group for salt in (e.salts or {}).values()])
        try:
            table.handle(command, player, args, group[0].timestamp, lambda: next(seeds), by=group[0].by,
                         new_salt=lambda: next(salts, _NO_SALT))
        except (DomainError, StopIteration) as exc:
            if isinstance(exc, DomainError) and self.seen is not None:
                exc = table.refusal_seen(exc, command, player, self.seen)  # quoted as this reader may read it
            message = getattr(exc, "message", "a shuffle is missing its seed")
            self._fail(group, f"the rules refuse this {command} by {player}: {message}")
            return
        except Exception as exc:  # noqa: BLE001 - recorded arguments of the wrong kind may fail anywhere in the rules
            self._fail(group, f"this {command} by {player} cannot be run again with its recorded arguments "
                              f"{args!r}: {exc!r}")
            return
        mismatch = _first_difference(table.collect_events(), group, self.seen)
        if mismatch is not None:
            self.problems.append(mismatch)
            self._resume(group)

    def _fail(self, group: list[TableEvent], message: str) -> None:
        """A problem named at the command's first event; the check goes on after the command."""
        self.problems.append(at("rules", group[0].originator_version, message, group[0].type))
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


_NO_SALT = "0" * 32


def check_rules(before: Table | None, events: list[TableEvent], rebuild: Callable[[int], Table],
                seen: Sight | None = None) -> list[dict[str, Any]]:
    check = RulesCheck(before, rebuild, seen)
    for group in commands(events):
        check.feed(group)
    return check.problems


def _apply(table: Table, group: list[TableEvent]) -> Table:
    for e in group:
        e.mutate(table)
    table.collect_events()
    return table


def _first_difference(decided: list[Any], recorded: list[TableEvent], seen: Sight | None) -> dict[str, Any] | None:
    for i, e in enumerate(recorded):
        if i >= len(decided):
            return at("rules", e.originator_version, f"{e.type} {present.event_text(e, None, seen)} was recorded, but the rules "
                                                     "record nothing more here", e.type)
        d = decided[i]
        if (d.type, d.actor, d.data) != (e.type, e.actor, e.data):
            # A seed is shown only where the log reveals it at this very event (then both seeds are public).
            reveal = e.type == d.type == "ShoeRevealed"
            return at("rules", e.originator_version, f"recorded {e.type} {present.event_text(e, reveal, seen)} by {e.actor}; "
                                                     f"the rules give {d.type} {present.event_text(d, reveal, seen)} by "
                                                     f"{d.actor}", e.type)
    if len(decided) > len(recorded):
        d = decided[len(recorded)]
        last = recorded[-1].originator_version
        return at("rules", d.originator_version, f"the rules also record {d.type} {present.event_text(d, False, seen)} at "
                                                 f"version {d.originator_version}, after this command's last recorded "
                                                 f"event at {last}", d.type)
    return None
