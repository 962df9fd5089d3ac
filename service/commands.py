"""Running commands: open a table, or decide one command on the table's head and save it exactly once.

Each use is its own transaction. A command that expects no particular version is decided again on the
fresh table when another write won the race: the rules are checked again, so a retry can never record what
the rules forbid. Every command is saved with a record of its identity (service/idempotency.py): a save
that failed but may have committed is looked up by it before anything is decided again.
"""

from __future__ import annotations

import logging
import contextlib
import itertools
import time
from typing import Any

from eventsourcing.persistence import IntegrityError

from domain import corrections
from domain.acting import check_acting
from domain.chain import format_timestamp
from domain.errors import BadArgument, DomainError, NotYourSeat
from domain.purse import MoneyRefused
from domain.games import GAMES
from domain.sight import EVERYTHING, Viewer
from domain.table import Table
from service import idempotency, metrics, present, replay, store
from service.combining import Combiner, Job
from service.embedded import NotWritten
from service.errors import ConcurrentWrite, VersionMismatch

RETRIES = 5  # saves that failed for an outage a command tries, each settled by its record first
# Seconds a command that expects no particular version keeps being decided again after races it lost (each lost
# race is another command recorded on the table, so the table moves on): past it, a 409.
RACING = 30.0
# The states whose expects a process remembers for the next command (one a table in play is enough).
SHOWN_EXPECTS = 4096
log = logging.getLogger("zametano.commands")


class Commands:
    """The command side of TablesService (service/application.py), which gives it the store, the clock,
    the seed source, the signer, the group committer and ``shown_expects``: the expects of the states the
    last commands answered with, by table, version and head digest (a state's expects depend on nothing
    else), so that the next command on a state checks its legality without building them again."""

    def open_table(self, game: str, players: Any, rules: Any, *, by: str | None = None, **fields: Any) -> dict[str, Any]:
        """Opens a table; ``fields``: the game's roles and ``players_act``; ``by``: the credential opening it."""
        if game not in GAMES:
            raise BadArgument("game", f"Unknown game '{game}'; the games are: {', '.join(sorted(GAMES))}.")
        table = GAMES[game].open(players, rules if rules is not None else {}, self.clock(), by=by, **fields)
        self.save(table)
        return {**present.state(table), "receipt": self.receipt(table)}

    def execute(self, table_id: str, command: str, player: str, args: dict[str, Any], *,
                expected_version: int | None = None, idempotency_key: str | None = None, by: str | None = None,
                as_player: str | None = None, as_supervisor: str | None = None, viewer: Viewer = EVERYTHING) -> dict[str, Any]:
        """Runs one command and returns the receipt: new head version and digest, the appended events,
        the state. Nothing is appended unless every event of the command is. With ``expected_version`` the
        command is refused unless the table is still at that version; a repeated ``idempotency_key`` with the
        same command returns the first answer and appends nothing. ``by`` names the credential that issued it
        (recorded in its events); ``as_player`` is the player a player's credential speaks for (None: the
        house's credential), checked against who may act at the table (domain/acting.py); the answer is as
        ``viewer`` sees it (domain/sight.py). ``as_supervisor``: the supervisor a supervisor's token names, the
        only credential that issues corrections where the service has tokens (``check_supervisor``). Commands of
        one table that arrive together are decided one after another and saved together (service/combining.py)."""
        check_supervisor(command, player, by, as_player, as_supervisor)  # nothing is looked up for a refused one
        key, body_sha, made = _identity(command, player, args, idempotency_key, by)
        if not made and (earlier := self._repeat(table_id, command, player, key, body_sha, as_player, viewer)):
            return earlier
        job = Job(command, player, args, expected_version, as_player, by, key, body_sha, viewer, made)
        combiner = self.combiner if self.repository.cache is not None else None
        if combiner is None:
            return self._run(table_id, job, unsure=not made)
        if not combiner.lead_or_wait(table_id, job):
            return self._followed(table_id, job)
        try:
            with self.turns.turn(table_id) if self.turns is not None else contextlib.nullcontext():
                return self._run(table_id, job, unsure=not made, lead=combiner)
        finally:
            combiner.hand_over(table_id)

    def _followed(self, table_id: str, job: Job) -> dict[str, Any]:
        """A command a leader decided in its batch: its answer once committed; decided again alone where the
        batch refused it or lost a race; settled by its record where the batch's save failed otherwise."""
        if job.answer is not None:
            return job.answer
        if job.failure is not None:
            earlier = self._settle(job.failure, table_id, job.command, job.key, job.body_sha, job.viewer, last=False)
            if earlier is not None:
                return earlier
        return self._run(table_id, job, unsure=True)

    def _run(self, table_id: str, job: Job, *, unsure: bool, lead: Combiner | None = None) -> dict[str, Any]:
        """Decides the command on the table's head and saves it (with the batch it leads, if ``lead``), again on
        the table read from the log after a lost race, until it is recorded or refused. A command that expects
        no particular version is never answered 409 for a race another command won: it is decided again, for
        as long as RACING allows."""
        racing_until = time.monotonic() + RACING
        for attempt in itertools.count():
            # The first attempt decides on the cached table itself, uncopied, unread where the store allows
            # (replay.HeadLease); ``cached``: that table, if it was not read from the log.
            stale = self.turns.stale if lead and self.turns is not None else None
            with replay.HeadLease(self, table_id, stale) if attempt == 0 else replay.NO_LEASE as lease:
                cached = lease.table if lease.unread else None
                table = lease.table or self.table(table_id)
                try:
                    first, purses = self._decide_paid(table, job)
                except (DomainError, VersionMismatch) as refused:
                    lease.drop()
                    if cached is not None and not isinstance(refused, MoneyRefused):
                        continue  # perhaps refused only because the cached table was stale: decided again on the log's
                    return self._refused(refused, table, job.command, job.player, job.key, job.body_sha, job.viewer,
                                         made=job.made, unsure=unsure)
                appended = list(table.pending_events)
                records = idempotency.records(table_id, job.key, job.body_sha, first, table.version)
                answer = self.result(table, appended, job.viewer)  # before the batch's next commands change the table
                # With money a command goes alone: a follower refused for its purse would leave its events behind.
                batch = self._gather(table, table_id, lead) if lease.table is not None and lead and not self.money.on \
                    else []
                try:
                    self._save_batch(table, [*records, *purses], batch)
                except IntegrityError:
                    lease.drop()
                    _quietly(self.money.abandon, purses, "the command lost a race and was not recorded")
                    # This very command committed by a save tried again, a lost race, or (decided on the cached
                    # table) a stale cache or a cut log: the record tells the first; the others are decided again.
                    final = cached is None and (job.expected_version is not None or time.monotonic() > racing_until)
                    if (earlier := self._lost_race(table_id, job.command, job.key, job.body_sha, job.viewer,
                                                   made=job.made, final=final)) is not None:
                        return earlier
                    if cached is None:
                        _retried(table_id, job.command, attempt + 1)
                    continue
                except Exception as exc:
                    lease.drop()
                    unsure = True  # not recorded if None: decided again, under the same identity
                    earlier = self._settle_paid(exc, table_id, job, purses, last=attempt >= RETRIES - 1)
                    if earlier is not None:
                        return earlier
                    continue
                self._saved(table, batch, lead)
                self.money.saved(purses)
                if lease.table is None:
                    replay.remember(self, table)
                return answer
        raise AssertionError("unreachable")  # pragma: no cover

    def _decide_paid(self, table: Table, job: Job) -> tuple[int, list[Any]]:
        """Decides the command (``_decide``) and pays the money it moves before anything is saved (service/money.py):
        the first new version, and the purses to save with the table. A purse or wallet refusal records nothing."""
        before = self.money.before(table)
        first = self._decide(table, job.command, job.player, job.args, job.expected_version, job.as_player, job.by)
        return first, self.money.settle(table, before, first)

    def _settle_paid(self, failure: Exception, table_id: str, job: Job, purses: list[Any], *,
                     last: bool) -> dict[str, Any] | None:
        """``_settle`` after a failed save; then the debits this attempt asked and did not count are rolled back (if
        its save committed after all they are counted, and a rollback of them is never recorded: Money.abandon)."""
        try:
            return self._settle(failure, table_id, job.command, job.key, job.body_sha, job.viewer, last=last)
        finally:
            _quietly(self.money.abandon, purses, "the command's save failed")

    def _save_batch(self, table: Table, records: list[Any], batch: list[Job]) -> None:
        """Saves a command and its batch's followers in one transaction; if it fails, each follower is told how
        (whatever failed: no follower waits for an answer that will not come), and the failure raised."""
        try:
            self._commit(table, *records, *(r for j in batch for r in j.records))
        except IntegrityError:
            _settle_batch(batch, alone=True)
            raise
        except BaseException as exc:
            _settle_batch(batch, failure=exc)
            raise

    def _saved(self, table: Table, batch: list[Job], lead: Combiner | None) -> None:
        """A save committed: the batch's followers answered, and the turns told which version the leader saved."""
        _settle_batch(batch)
        if lead and self.turns is not None:
            self.turns.saved(table.id, table.version)

    def _gather(self, table: Table, table_id: str, combiner: Combiner) -> list[Job]:
        """The table's followers waiting now, each decided on ``table`` after the ones before it, with its answer
        and record ready for the batch's save; those the rules refuse here are told to go alone (nothing of
        theirs was recorded: a refusal records nothing, domain/table.py ``handle``)."""
        batch = []
        for job in combiner.take(table_id):
            try:
                first = self._decide(table, job.command, job.player, job.args, job.expected_version,
                                     job.as_player, job.by)
            except (DomainError, VersionMismatch):
                job.settle(alone=True)
                continue
            except BaseException as exc:  # noqa: BLE001 - whatever it is, its own thread decides again
                log.exception("a command of a batch failed to be decided; it is decided again alone: %r", exc)
                job.settle(alone=True)
                continue
            appended = list(table.pending_events[-(table.version - first + 1):])
            job.records = idempotency.records(table_id, job.key, job.body_sha, first, table.version)
            job.answer = self.result(table, appended, job.viewer)
            batch.append(job)
        return batch

    def _repeat(self, table_id: str, command: str, player: str, key: idempotency.Key, body_sha: str,
                as_player: str | None, viewer: Viewer) -> dict[str, Any] | None:
        """The first answer to a client's key, if it was recorded. Who may act is checked first: a key is looked
        up only for a command its credential may issue, and finds only that credential's own (idempotency.Key)."""
        if command not in corrections.COMMANDS:
            check_acting(*self.acting(table_id), player, as_player)
        return idempotency.repeated(self, table_id, command, key, body_sha, viewer)

    def _decide(self, table: Table, command: str, player: str, args: dict[str, Any], expected_version: int | None,
                as_player: str | None, by: str | None) -> int:
        """Decides the command on ``table`` (its events pending) or refuses it; returns the first new version.
        A command is first decided on this process's cached table without reading the log (service/replay.py
        HeadLease): if that table was stale, the save is refused and the command decided again on the table
        read from the log, and a refusal is only ever given on the table read from the log."""
        first = table.version + 1
        if command not in corrections.COMMANDS:  # a supervisor's, checked by check_supervisor
            table.check_acting(player, as_player)
        if expected_version is not None and expected_version != table.version:
            raise VersionMismatch(expected_version, table.version)
        shown = self.shown_expects.get((table.id, table.version, table.head))
        table.handle(command, player, args, self.clock(), self.new_seed, shown, by=by, new_salt=self.new_salt)
        return first

    def _refused(self, refused: DomainError | VersionMismatch, table: Table, command: str, player: str,
                 key: idempotency.Key, body_sha: str, viewer: Viewer, *, made: bool, unsure: bool) -> dict[str, Any]:
        """A refusal on the table read from the log, unless the command was recorded since it was looked up (a
        repeat of a command in flight, or this request's failed save that committed after all): then its
        response, not a refusal."""
        earlier = (idempotency.repeated(self, str(table.id), command, key, body_sha, viewer, made=made)
                   if unsure else None)
        if earlier is not None:
            return earlier
        raise _refusal(refused, table, command, player, viewer) from None

    def _lost_race(self, table_id: str, command: str, key: idempotency.Key, body_sha: str, viewer: Viewer, *,
                   made: bool, final: bool) -> dict[str, Any] | None:
        """After a save refused for a version or a key taken first: a lost race, or this very command committed
        by a save the library tried again after a lost connection; its record tells which. The command's
        response, or None to decide it again; ConcurrentWrite if it may not be decided again (``final``)."""
        earlier = idempotency.repeated(self, table_id, command, key, body_sha, viewer, made=made)
        if earlier is None and final:
            metrics.conflict("concurrent_write")
            raise ConcurrentWrite() from None
        return earlier

    def _settle(self, failure: Exception, table_id: str, command: str, key: idempotency.Key, body_sha: str,
                viewer: Viewer, *, last: bool) -> dict[str, Any] | None:
        """After a failed save: the command's response if the save committed after all; None if it did not
        and the command may be decided again; the failure again if it is no outage (nothing was written) or
        if this was the last attempt."""
        if store.as_outage(failure) is None or isinstance(failure, NotWritten):
            raise failure  # no outage, or a write refused before it began: nothing to look up, nor to retry
        earlier = idempotency.settle(self, table_id, command, key, body_sha, viewer, failure)
        if earlier is None and last:
            raise failure
        return earlier

    def _commit(self, table: Table, *saved_with: Any) -> None:
        """One command's save: its own transaction, or a share of a group commit's."""
        if self.committer is None:
            self.save(table, *saved_with)
        else:
            self.committer.commit(table, *saved_with)

    def save_together(self, *aggregates: Any) -> None:
        """What a group commit writes: one save, so one transaction."""
        # Looked up at each call, not bound once: what save does is what a group commit does.
        self.save(*aggregates)

    def acting(self, table_id: str) -> tuple[str, frozenset[str]]:
        """Who acts for the players at a table and the house's seats (domain/acting.py): settled at its opening,
        so read once a process and kept (a table's few bytes; the whole is cleared past SHOWN_EXPECTS tables)."""
        found = self.acting_of.get(table_id)
        if found is None:
            table = self.table(table_id)
            if len(self.acting_of) >= SHOWN_EXPECTS:
                self.acting_of.clear()
            found = self.acting_of[table_id] = (table.players_act, table.house_seats())
        return found

    def earlier_response(self, table_id: str, key: idempotency.Key, body_sha: str,
                         viewer: Viewer = EVERYTHING) -> dict[str, Any] | None:
        """The answer a keyed command gave, if it was recorded (service/idempotency.py), as ``viewer`` sees it."""
        return idempotency.earlier_response(self, table_id, key, body_sha, viewer)

    def result(self, table: Table, appended: list[Any], viewer: Viewer = EVERYTHING) -> dict[str, Any]:
        """A command's answer as ``viewer`` sees it (the expects remembered whole)."""
        expects = self.shown(table, table.expects())
        return present.command_result(table, appended, self.receipt(table), viewer, expects)

    def shown(self, table: Table, expects: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Remembers the expects of a table's head (all of them, whoever the state is shown to): the next
        command on it checks its legality against them, so a state's expects are built once."""
        if len(self.shown_expects) >= SHOWN_EXPECTS:
            self.shown_expects.clear()  # atomic, unlike evicting one by one among threads; each table rebuilds once
        self.shown_expects[(table.id, table.version, table.head)] = expects
        return expects

    def receipt(self, table: Table) -> dict[str, Any]:
        # The head event's own timestamp, not the signing time: re-signing a head gives the same receipt.
        return self.signer.sign_receipt(str(table.id), table.version, table.head, format_timestamp(table.modified_on))


def _identity(command: str, player: str, args: dict[str, Any], idempotency_key: str | None,
              by: str | None) -> tuple[idempotency.Key, str, bool]:
    """A command's identity (service/idempotency.py): its key (the client's, or one made now), the digest of its
    body, and whether the key was made here."""
    made = idempotency_key is None
    key = idempotency.Key(idempotency.made_key() if made else idempotency_key, by)
    return key, idempotency.body_digest(command, player, args), made


def check_supervisor(command: str, player: str, by: str | None, as_player: str | None,
                     as_supervisor: str | None) -> None:
    """Corrections are a supervisor's, in his own name, and he issues nothing else (NotYourSeat: a 403). A service
    without tokens (``by`` None: on loopback only) takes the name given, as it takes every actor."""
    if command in corrections.COMMANDS:
        if by is not None and as_supervisor is None:
            who = f"{as_player}'s player token" if as_player else f"the operator token {by}"
            raise NotYourSeat(f"'{command}' needs a supervisor's token; {who} may not correct a table.", player)
        if as_supervisor is not None and player != as_supervisor:
            raise NotYourSeat(f"A supervisor's token acts in its own name only: this one is {as_supervisor}'s, the "
                              f"command {player}'s.", player)
    elif as_supervisor is not None:
        raise NotYourSeat(f"A supervisor's token issues corrections only ({', '.join(corrections.COMMANDS)}); "
                          f"'{command}' needs an operator's or the player's own.", player)


def _refusal(refused: DomainError | VersionMismatch, table: Table, command: str, player: str,
             viewer: Viewer) -> Exception:
    """A refusal as its issuer gets it: a version mismatch counted; a rule's refusal telling him nothing his own
    view does not show (domain/table.py ``Table.refusal_seen``)."""
    if isinstance(refused, VersionMismatch):
        metrics.conflict("version_mismatch")
        return refused
    return table.refusal_seen(refused, command, player, table.sight(viewer))


def _settle_batch(batch: list[Job], *, alone: bool = False, failure: BaseException | None = None) -> None:
    """The batch's followers told how its save went: committed (each answered with its own answer), lost a race
    (each decided again alone), or failed otherwise (each settled by its record)."""
    for job in batch:
        if alone or failure is not None:
            job.settle(alone=alone, failure=failure)
        else:
            job.settle(answer=job.answer)


def _quietly(step: Any, *args: Any) -> None:
    """A step after a failure that must not hide it (the store may be away for the step as well)."""
    try:
        step(*args)
    except Exception as exc:  # noqa: BLE001 - the failure being handled is the one to report
        log.warning("after a failed save, %s failed too: %r", getattr(step, "__name__", step), exc)


def _retried(table_id: str, command: str, attempt: int) -> None:
    label = metrics.command_label(command)
    metrics.RETRIES.labels(label).inc()
    log.info("%s on table %s decided again (retry %d): another write to the table came first", label, table_id,
             attempt, extra={"table_id": table_id, "command": label})
