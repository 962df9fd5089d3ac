"""The read model's indexer: it reads the notification log from the read model's position and writes the rows.

The read model follows the application's notification log: the follower thread of the process that holds the
indexing lease (service/readmodel/follower.py, service/readmodel/lease.py), or a query that cannot wait for
one, hands the Indexer the notifications after the last one tracked; it turns them into rows
(service/readmodel/projection.py) and writes the rows and the new tracking position in one transaction of the
event store's own database. Two indexing at once (a query and the follower, or two processes) cannot both
write the same position (the tracking row refuses the second), so the loser re-reads and nothing is counted
twice. Queries read these rows; none scans the events.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import psycopg_pool
from eventsourcing.persistence import IntegrityError, Tracking

from service.readmodel.follower import Follower
from service.readmodel.lease import lease_for
from service.readmodel.memory import POPOIndexView
from service.readmodel.postgres import PostgresIndexView
from service.readmodel.projection import Projection, decode
from service.readmodel.rows import POSITION, Sealer
from service.readmodel.sqlite import SQLiteIndexView
from service.readmodel.view import IndexView

log = logging.getLogger("zametano.read_model")

# How long a query waits for the follower to index what was recorded before it, before it does it itself.
FOLLOWER_WAIT = 2.0

VIEW_CLASSES: dict[str, type[IndexView]] = {
    "eventsourcing.sqlite": SQLiteIndexView,
    "eventsourcing.postgres": PostgresIndexView,
    "eventsourcing.popo": POPOIndexView,
}


class Indexer:
    """Keeps the read model up to date from the notification log, one command-complete batch at a time: fed
    by a follower in the background (service/readmodel/follower.py) in the process that holds the indexing
    lease or, where none runs or this process does not hold it, by the query that needs it."""

    BATCH = 500

    def __init__(self, app: Any, marks: dict[str, Any]) -> None:
        self.app = app
        module = app.env.get("PERSISTENCE_MODULE", "eventsourcing.popo")
        view_class = VIEW_CLASSES.get(module)
        if view_class is None or view_class is POPOIndexView:
            self.view: IndexView = POPOIndexView()
        else:
            self.view = app.factory.tracking_recorder(view_class)
        self.view.sealer = Sealer(app.mapper.cipher)
        self.projection = Projection(marks, self.view)
        self.store_checked = False
        self.follower: Follower | None = None
        self.follower_wait = FOLLOWER_WAIT
        self._known = 0  # the highest position seen, by this process's reads and writes
        self._moved = threading.Condition()

    # --- following in the background ------------------------------------------------------------------

    def follow(self, publisher: Any = None) -> None:
        """Starts a thread that follows the log (stopped by close()), telling ``publisher`` (service/streams/) of
        each list it reads, and indexing it while this process holds the indexing lease. Not on a PostgreSQL
        pool of a single connection, which the follower's reads four times a second would take from requests."""
        pool = getattr(getattr(self.app.factory, "datastore", None), "pool", None)
        if isinstance(pool, psycopg_pool.ConnectionPool) and pool.max_size < 2:
            log.warning("the read model is not followed in the background: the connection pool holds one "
                        "connection (POSTGRES_POOL_SIZE + POSTGRES_MAX_OVERFLOW); queries index what they need")
            return
        lease = lease_for(self.app, getattr(self.view, "tracking_table_name", ""))
        self.follower = Follower(self, self.app.recorder, publisher, lease)
        self.follower.start()

    def close(self) -> None:
        if self.follower is not None:
            self.follower.stop()

    # --- positions ------------------------------------------------------------------------------------

    def position(self) -> int:
        """The last notification the read model holds, as its database says now."""
        position = self.view.max_tracking_id(POSITION) or 0
        self._observe(position)
        return position

    def _observe(self, position: int) -> None:
        with self._moved:
            if position > self._known:
                self._known = position
                self._moved.notify_all()

    def wait_for(self, position: int, timeout: float) -> bool:
        """True once this process has seen the read model at ``position`` or past it; False after ``timeout``."""
        with self._moved:
            return self._moved.wait_for(lambda: self._known >= position, timeout)

    def status(self) -> dict[str, Any]:
        """How far the read model is behind the log: ``lag`` in events (notifications), 0 when current; whether
        this process's follower is subscribed (``following``) and indexes what it reads (``indexing``: it
        holds the indexing lease)."""
        head = self.app.recorder.max_notification_id() or 0
        position = self.position()
        follower = self.follower
        following = follower is not None and follower.running
        indexing = following and follower.indexing
        return {"position": position, "head": head, "lag": max(0, head - position), "following": following,
                "indexing": indexing}

    # --- indexing -------------------------------------------------------------------------------------

    def bring_up_to_date(self) -> None:
        """Returns once the read model holds every event recorded before the call. The follower, when it runs
        and indexes, is woken and waited for (at most ``follower_wait`` seconds); without one, or if it does
        not get there in time, the caller indexes what is missing itself. So does the caller at once where the
        follower does not index: the one that does is another process's, which this one cannot wake."""
        head = self.app.recorder.max_notification_id() or 0
        if self.position() >= head:
            return
        follower = self.follower
        if follower is not None and follower.running and follower.indexing:
            follower.hurry()
            if self.wait_for(head, self.follower_wait):
                return
        self.catch_up()

    def catch_up(self) -> None:
        """Indexes everything recorded so far, reading the log from the read model's position."""
        self._check_store()
        while True:
            position = self.position()
            notes = list(self.app.recorder.select_notifications(position, self.BATCH, inclusive_of_start=False))
            if not notes:
                return
            try:
                self._index(notes, position, whole=len(notes) < self.BATCH)
            except IntegrityError:
                continue  # another process (or the follower) wrote this range first: read the position again

    def take(self, notes: list[Any], whole: bool) -> list[Any]:
        """Indexes notifications the follower's subscription read, those past the read model's position, in
        batches of at most BATCH; returns those held back (the start of a command the last list cut off, when
        not ``whole``)."""
        while len(notes) > self.BATCH:
            notes = self._take(notes[: self.BATCH], whole=False) + notes[self.BATCH :]
        return self._take(notes, whole)

    def _take(self, notes: list[Any], whole: bool) -> list[Any]:
        self._check_store()
        while True:
            position = self.position()
            notes = [n for n in notes if n.id > position]
            if not notes:
                return []
            try:
                return self._index(notes, position, whole)
            except IntegrityError:
                continue  # written meanwhile by another process or a query: what is past it is still to do

    def _check_store(self) -> None:
        if not self.store_checked:
            # A wrong key would make every event unreadable, and every table would be recorded as failed
            # for good: refuse to index anything until the configuration reads what is stored.
            self.app.check_store()
            self.store_checked = True

    def _index(self, notes: list[Any], position: int, whole: bool) -> list[Any]:
        """Writes the rows of ``notes`` with the new position, in one transaction; IntegrityError if the
        position moved from ``position`` meanwhile. Unless the notes are ``whole`` (they end where the log
        ended when they were read), the last command may be cut off: it is held back and returned, so that
        a round settled by its last command is indexed whole."""
        decoded = [decode(self.app.mapper, n) for n in notes]
        keep = len(notes) if whole else _commands_end([event for event, _ in decoded])
        if keep == 0:
            if len(notes) < self.BATCH:
                return notes  # one command, perhaps cut off: held back whole until the rest is read
            keep = len(notes)  # a command of more events than a batch can only be indexed in parts
        batch = self.projection.process([(n.id, *d) for n, d in zip(notes[:keep], decoded[:keep])])
        self.view.write(batch, Tracking(POSITION, notes[keep - 1].id), position)
        self._observe(notes[keep - 1].id)
        return notes[keep:]


def _commands_end(events: list[Any]) -> int:
    """How many of ``events`` end at a command boundary: all but the last command's (none, if they are all one
    command's)."""
    last, keep = events[-1], len(events)
    while keep > 0 and _same_command(events[keep - 1], last):
        keep -= 1
    return keep


def _same_command(a: Any, b: Any) -> bool:
    return a.originator_id == b.originator_id and getattr(a, "command", None) == getattr(b, "command", None)
