"""Group commit: the decided commands of several threads of one process saved in one transaction.

A thread hands its decided table (and the aggregates saved with it) to ``GroupCommitter.commit`` and is
answered only once they are committed, or once it is certain they will not be. The first thread to arrive
while no batch is being written becomes the leader; threads that arrive while it writes queue up and go
together in the next batch.

Waiting for company: before it writes, the leader waits while the server says another request of this
process may bring a command soon (``company``: under gunicorn, api/edge.py's count of the requests a worker
has taken and not yet seen through to a command's hand-over, its idle connections with a request waiting,
and those whose command was written or answered in the last WAIT_FOR_COMPANY seconds, whose client will
likely send the next one at once), at most WAIT_FOR_COMPANY seconds. A batch costs the store about what
one command costs (one round trip, one commit), and on a busy worker the commands of two clients took turns
on the interpreter without ever meeting: one thread runs until it waits for the database, so another
command was never decided while a batch formed (1.01 commands a transaction with two clients on one worker;
1.85 to 1.9 with the wait, and 11 to 13% less CPU a command: docs/benchmarks.md). A command with no other
request in its process is written at once: a lone client waits for nothing. The wait a command adds is at
most one other batch's write and one WAIT_FOR_COMPANY, and only when its process has other requests to
serve.

What a batch promises:
- Two commands of the same table never go in one batch: each decided on the table as it was, so the later
  one waits for the next batch. If the earlier was committed first, the later one decided on a version that
  is gone; it is told so at once (IntegrityError, as a lost race), without asking the store.
- A batch is one ``Application.save`` call: one transaction, all of it written or none of it.
- If the batch loses a race (IntegrityError: a version or an idempotency key some other process took
  first), nothing of it was written, and each member is saved again ALONE, so that only the command that
  really lost the race hears of it, exactly as without group commit.
- Any other failure (the store down) fails every member with that exception: nothing is acknowledged that
  was not committed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from eventsourcing.persistence import IntegrityError

Save = Callable[..., Any]
log = logging.getLogger("zametano.group_commit")

# Seconds a leader waits at most for company: a command takes a millisecond or two of the interpreter from
# its request's first byte to its hand-over.
WAIT_FOR_COMPANY = 0.002
# Seconds between two looks at the company while waiting (an arrival wakes the leader at once).
COMPANY_POLL = 0.0002


class Company(Protocol):
    """What the server knows of this process's other requests (api/edge.py)."""

    def expected(self) -> bool:
        """Another request of this process, not yet handed over, may bring a command soon."""

    def arrived(self) -> None:
        """The calling thread's request is no longer one to wait for: it is handed over, or must wait for a
        batch itself."""

    def resumed(self) -> None:
        """The calling thread's command is written (or failed): its client may send another soon."""


# Set by the server that serves this process's requests (api/edge.py); None: no leader ever waits.
company: Company | None = None


def stepping_aside() -> None:
    """The calling thread's command waits for another command of its table (its lock in this process), so it
    cannot join the batch being formed: no leader waits for it."""
    if company is not None:
        company.arrived()


class _Handed:
    """One thread's command: its table first, then what is saved with it."""

    __slots__ = ("aggregates", "outcome", "done", "alone")

    def __init__(self, aggregates: Sequence[Any]) -> None:
        self.aggregates = aggregates
        self.outcome: BaseException | None = None
        self.done = False
        self.alone = False  # the batch lost a race: save again alone

    @property
    def table_id(self) -> Any:
        return self.aggregates[0].id

    @property
    def first_version(self) -> int | None:
        pending = self.aggregates[0].pending_events
        return pending[0].originator_version if pending else None


class GroupCommitter:
    """Per process (per service). ``on_batch``, if set, is told each batch's table ids before it is written
    (the service counts batch sizes with it, service/metrics.py; tests watch batches with it)."""

    def __init__(self, save: Save) -> None:
        self._save = save
        self.on_batch: Callable[[list[Any]], None] | None = None
        lock = threading.Lock()
        self._changed = threading.Condition(lock)  # a batch written: its members are done
        self._arrived = threading.Condition(lock)  # a command handed over: the leader may have company
        self._queue: list[_Handed] = []
        self._writing = False
        self.wait_for_company = WAIT_FOR_COMPANY

    def commit(self, table: Any, *saved_with: Any) -> None:
        """Returns once ``table`` and ``saved_with`` are committed; raises IntegrityError if the table's
        version (or an idempotency key) was taken first, or whatever else made the save fail."""
        handed = _Handed((table, *saved_with))
        with self._changed:
            self._queue.append(handed)
            if company is not None:
                company.arrived()
                self._arrived.notify()
            while not handed.done:
                if self._writing:
                    self._changed.wait()
                    continue
                self._writing = True
                self._wait_for_company()
                batch = self._take_batch()
                self._changed.release()
                try:
                    self._write(batch)
                finally:
                    self._changed.acquire()
                    self._writing = False
                    self._changed.notify_all()
        if company is not None:
            company.resumed()
        if handed.alone:
            self._save(*handed.aggregates)  # an IntegrityError now is this command's own lost race
        elif handed.outcome is not None:
            # One exception for the whole batch, raised in each member's thread: the API answers by its type.
            raise handed.outcome

    def _wait_for_company(self) -> None:
        """The leader, before it takes its batch: while another command may come soon, at most
        ``wait_for_company`` seconds (called holding the lock, which the wait lets go)."""
        present = company
        try:
            if present is None or self.wait_for_company <= 0 or not present.expected():
                return
            deadline = time.monotonic() + self.wait_for_company
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._arrived.wait(min(left, COMPANY_POLL))
                if not present.expected():
                    return
        except Exception:  # noqa: BLE001 - the wait is an optimisation: whatever fails in it, the batch is written
            log.exception("group commit could not look for company; the batch is written now")

    def _take_batch(self) -> list[_Handed]:
        """The queue's first command of each table, in the order they came (called holding the lock)."""
        batch: list[_Handed] = []
        seen: set[Any] = set()
        rest: list[_Handed] = []
        for handed in self._queue:
            if handed.table_id in seen:
                rest.append(handed)
            else:
                seen.add(handed.table_id)
                batch.append(handed)
        self._queue = rest
        return batch

    def _write(self, batch: list[_Handed]) -> None:
        """Saves the batch in one transaction and settles every member (called without the lock)."""
        # A failed save has collected the events from their aggregates: kept here, so that a member saved
        # again alone saves exactly what it decided (and a table's timestamps still increase with versions).
        pending = [(aggregate, list(aggregate.pending_events)) for h in batch for aggregate in h.aggregates]
        outcome: BaseException | None = None
        try:
            if self.on_batch is not None:
                self.on_batch([h.table_id for h in batch])
            self._save(*(aggregate for h in batch for aggregate in h.aggregates))
        except IntegrityError as exc:
            outcome = exc
        except BaseException as exc:  # noqa: BLE001 - whatever it is, every member hears of it
            outcome = exc
        with self._changed:
            if isinstance(outcome, IntegrityError) and len(batch) > 1:
                for aggregate, events in pending:
                    aggregate.pending_events[:] = events  # nothing was written: the decision stands as it was
                for handed in batch:
                    handed.alone = True
            else:
                for handed in batch:
                    handed.outcome = outcome
            if outcome is None:
                self._refuse_stale({h.table_id: h.aggregates[0].version for h in batch})
            for handed in batch:
                handed.done = True

    def _refuse_stale(self, committed: dict[Any, int]) -> None:
        """Commands still queued that decided on a version of a table this batch has just moved past lost
        their race: they are told at once (called holding the lock)."""
        still: list[_Handed] = []
        for handed in self._queue:
            head = committed.get(handed.table_id)
            first = handed.first_version
            if head is not None and first is not None and first <= head:
                handed.outcome = IntegrityError(f"version {first} of the table was just taken")
                handed.done = True
            else:
                still.append(handed)
        self._queue = still
