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

Between the processes of a node (the workers of one server), a table's leaders take turns (``Turns``): a lock
file per slot of tables in the data folder, held by a leader while it decides and saves its batch. Without it the
workers' leaders raced for every version of a busy table and all but one decided their batch again at each save
(docs/benchmarks.md, "One busy table"). The file also says which version of which table the last leader saved,
so that a leader whose cached table is older reads the log first instead of losing the race it would start.
Between nodes, the front routes a table's requests to one node (docs/scaling.md). Neither is needed for
correctness: the store's version check is.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from service import groupcommit

# Lock files a node's tables share (a table's is its id's CRC-32 modulo this): few enough file descriptors a process.
SLOTS = 128
MARK = 80  # bytes of a slot file's "table version" mark
TURN_WAIT = 5.0  # seconds a leader waits for its table's turn at most (a batch takes milliseconds)
# The lock files open in this process, by folder: how many services use them, and the files by slot.
_OPEN: dict[Path, list[Any]] = {}
# Reentrant: a service dropped unclosed is closed by the garbage collector (the library's Application.__del__), which
# may run in a thread that holds this lock already, in the middle of ``Turns._file``: a plain lock deadlocked there.
_OPEN_LOCK = threading.RLock()
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


class Turns:
    """A node's tables' turns between its processes: one lock file per slot in ``folder`` (``.turn-NNN``), opened once a
    process (services of one process on one folder share the open files, so they never wait for each other's
    turns: a lock file's lock belongs to its open file). ``turn`` holds the table's slot while a leader decides
    and saves; ``saved`` marks the version it saved, ``stale`` tells a leader whether another process saved a
    later version of its table since."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder).resolve()
        with _OPEN_LOCK:
            self._files = _OPEN.setdefault(self.folder, [0, {}])
            self._files[0] += 1
        self.closed = False

    def _file(self, table_id: Any) -> int:
        slot = zlib.crc32(str(table_id).encode()) % SLOTS
        with _OPEN_LOCK:
            fds: dict[int, int] = self._files[1]
            fd = fds.get(slot)
            if fd is None:
                fd = fds[slot] = os.open(self.folder / f".turn-{slot:03d}", os.O_RDWR | os.O_CREAT, 0o600)
            return fd

    @contextmanager
    def turn(self, table_id: Any) -> Iterator[None]:
        """The table's turn, waited for at most TURN_WAIT seconds: past it the leader goes on without one (turns
        are for speed; whatever holds one that long, nothing waits on it forever)."""
        fd = self._file(table_id)
        held = _take(fd)
        try:
            yield
        finally:
            if held:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def stale(self, table_id: Any, version: int) -> bool:
        """Whether the slot's mark names this table at another version than ``version`` (read while holding it)."""
        mark = os.pread(self._file(table_id), MARK, 0).decode(errors="replace").split()
        return len(mark) == 2 and mark[0] == str(table_id) and mark[1] != str(version)

    def saved(self, table_id: Any, version: int) -> None:
        os.pwrite(self._file(table_id), f"{table_id} {version}".ljust(MARK).encode(), 0)

    def close(self) -> None:
        """The last service of the process on this folder closes its files."""
        with _OPEN_LOCK:
            if self.closed:
                return
            self.closed = True
            self._files[0] -= 1
            if self._files[0] == 0:
                for fd in self._files[1].values():
                    os.close(fd)
                del _OPEN[self.folder]


def _take(fd: int) -> bool:
    """Takes the lock file ``fd``, waiting at most TURN_WAIT seconds (looking again after 0.1 ms, then up to
    every 2 ms: a batch takes a few milliseconds); False if it was not taken."""
    deadline, pause = time.monotonic() + TURN_WAIT, 0.0001
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > deadline:
                return False
            time.sleep(pause)
            pause = min(pause * 2, 0.002)
