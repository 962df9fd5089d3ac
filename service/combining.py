"""Commands of one table that arrive together, decided one after another and saved together.

A busy table (a studio's punto banco table with hundreds of bettors) gets commands faster than one command's
save takes. Each used to take the table's lock in this process, decide, save, and only then let the next one
decide: one transaction a command, the others waiting behind it. Here the first command of a table to arrive
leads: it decides, then decides every command of the table that came meanwhile, in the order they came, each on
the table as the ones before it left it (the events of all of them pending on the one cached table), builds each
one's answer, and saves them all in one transaction (several versions at once, each command with its own record
of identity, service/idempotency.py). Each follower is answered once that transaction is committed.

What stays as it was:
- Every command is decided by the rules on the table as it stands: a command that comes after another in a batch
  is decided after it, exactly as it would be had it been saved first.
- A command the rules refuse in a batch records nothing and leaves the table as it was; it is then decided
  again alone, on the table read from the log, so a refusal is only ever given as before.
- The batch is one save: all of it is written or none of it. A batch that loses a race (another process wrote
  the table first) wrote nothing: each of its commands is decided again alone. A save that failed in a way that
  may have committed is settled by each command's record, as a single command's is (docs/scaling.md).
- Across processes and nodes the store's version check stays the guard: two batches never both take one version.
- The group commit across tables (service/groupcommit.py) takes a batch as one table's command.

A follower that finds no leader leads; one that arrives while a batch is being saved waits, and the first of them
leads the next batch when the leader is done.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from service import groupcommit

# Commands one batch decides at most: a bound on how long a batch holds its leader (each is a millisecond or so).
MOST = 256


@dataclass
class Job:
    """One command waiting to be decided by its table's leader, with what its answer needs."""

    command: str
    player: str
    args: dict[str, Any]
    expected_version: int | None
    as_player: str | None
    by: str | None
    key: Any
    body_sha: str
    viewer: Any
    made: bool
    done: threading.Event = field(default_factory=threading.Event)
    lead: bool = False  # woken to lead the next batch
    answer: dict[str, Any] | None = None  # decided and committed
    failure: BaseException | None = None  # the batch's save failed so (perhaps committed: settle by the record)
    alone: bool = False  # refused in the batch, or the batch lost a race: decided again alone
    records: tuple[Any, ...] = ()  # the record of identity saved with it

    def settle(self, *, answer: dict[str, Any] | None = None, failure: BaseException | None = None,
               alone: bool = False) -> None:
        self.answer, self.failure, self.alone = answer, failure, alone
        self.done.set()


class Combiner:
    """Per process: which tables have a leader now, and the commands waiting for each."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[Any, list[Job]] = {}  # a table with a leader -> its followers, in the order they came

    def lead_or_wait(self, table_id: Any, job: Job) -> bool:
        """True: the caller leads the table's next batch (and must call ``hand_over`` when done). False: the job was
        settled by a leader (its answer, failure or ``alone``)."""
        with self._lock:
            queue = self._waiting.get(table_id)
            if queue is None:
                self._waiting[table_id] = []
                return True
            queue.append(job)
        groupcommit.stepping_aside()  # waits for its table's leader: no batch across tables waits for it
        job.done.wait()
        return job.lead

    def take(self, table_id: Any) -> list[Job]:
        """The followers waiting now, taken by their leader (at most MOST)."""
        with self._lock:
            queue = self._waiting.get(table_id, [])
            taken, queue[:] = queue[:MOST], queue[MOST:]
            return taken

    def hand_over(self, table_id: Any) -> None:
        """The leader is done: the first follower still waiting leads next; none, and the table has no leader."""
        with self._lock:
            queue = self._waiting.get(table_id)
            if not queue:
                self._waiting.pop(table_id, None)
                return
            following = queue.pop(0)
        following.lead = True
        following.done.set()
