"""The read model follows the event log in the background.

The read model follows the event log in the background, so that no query pays for indexing what was
recorded before it.

A follower thread subscribes to the application's recordings with eventsourcing's own subscription, woken
by the in-memory store's notifications, and on SQLite and PostgreSQL every POLL seconds. Once told of new
events the in-memory subscription lets a burst gather for GATHER seconds, unless a query is waiting, and reads
it in one go; a polled one reads at once, its POLL being its gathering (and a waiting query wakes it too). So a
burst of commands costs the read model a few reads and writes, not one of each per command.

PostgreSQL would tell a LISTEN of every commit (the store's save still sends the library's NOTIFY, for any
subscription of the library's own), but a follower that gathers for a quarter of a second has no use for
being told within a millisecond: the LISTEN cost a thread woken at every commit, a database backend woken with
it, and a pooled connection held for good. Measured side by side, polling instead took 7% to 8% off the CPU
of a command with one worker and one client, and 2% to 7% with four workers and eight clients
(docs/benchmarks.md). An event waits at most POLL seconds to be read, where a notified one waited GATHER.

Every server process runs one, but only one at a time indexes: the one whose process holds the indexing lease
(service/readmodel/lease.py) hands its lists to the Indexer, which writes command-complete batches with the
read model's position (service/readmodel/indexer.py). The others read the log only while their process has a
live stream open, to tell it of each list they read; with none open they read nothing and only try for the
lease every IDLE_RETRY seconds (a stream that opens wakes them at once). They try for the lease at each list
they read too, which costs one round trip, and take over when its holder stops or loses its connection: they
first index the log from the read model's position, which covers what was recorded while another held the
lease. Their queries do not wait for them but index what they need themselves. Where two index the same
events all the same (a query, a process that could not reach the lease), the position, which only one of them
can move, settles it and nothing is counted twice.

eventsourcing's ProjectionRunner is not used: it builds an application of its own from the environment,
projects one event per transaction and stops for good at its first error, where the read model writes
batches, records an unreadable event against its table alone, and must outlive a database outage: after
any failure the follower subscribes again, from the read model's position, RETRY seconds later.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from threading import Event, Thread
from typing import TYPE_CHECKING, Any

from eventsourcing.persistence import ApplicationRecorder, ListenNotifySubscription, Notification
from eventsourcing.popo import POPOApplicationRecorder, POPOSubscription

from service.readmodel.lease import Lease

if TYPE_CHECKING:
    from service.readmodel.indexer import Indexer
    from service.streams import Publisher

POLL = 0.25  # SQLite and PostgreSQL: seconds between looks for new events, and so the longest wait for one
RETRY = 1.0  # seconds before a follower that failed (the database down) subscribes again
# Seconds a subscription told of new events waits for more before it reads them, unless a query waits: a
# longer wait costs the commands less (fewer, larger batches) and leaves the read model further behind. A polled
# subscription does not wait again: its POLL is its gathering.
GATHER = 0.25
# Seconds between two tries for the lease of a follower with nothing to read (it does not index, and its
# process has no live stream open): how long the read model may wait for a new indexer when its holder stops.
IDLE_RETRY = 1.0

log = logging.getLogger("zametano.read_model")


class _InLists(ListenNotifySubscription[Any]):
    """A subscription that reads a burst of notifications in one go and hands over what it read in the lists
    it read it in (up to its select limit)."""

    gather = GATHER  # seconds a list waits for more once the subscription is told of new events

    def __init__(self, recorder: ApplicationRecorder, gt: int | None = None, topics: Sequence[str] = ()) -> None:
        self._hurry = Event()  # set before the library's reading thread starts, which waits on it
        super().__init__(recorder, gt, topics)

    def _pull(self) -> None:
        # The library reads as soon as it is told of an event: once per command in a burst. Waiting a little
        # first reads the whole burst at once.
        if self.gather:
            self._hurry.wait(self.gather)
        self._hurry.clear()
        super()._pull()

    def next_list(self) -> tuple[list[Notification], bool]:
        """The next notifications, once there are some, and whether they are ``whole``: shorter than the
        subscription's limit, they end where the log ended when they were read, so no command is cut off."""
        next(self)  # blocks until a list is read; StopIteration once stopped
        notes = list(self._notifications)
        self._notifications_index = len(notes)
        return notes, len(notes) < self._select_limit

    def hurry(self) -> None:
        """Read now what there is."""
        self._hurry.set()
        self._has_been_notified.set()

    def stop(self) -> None:
        super().stop()
        self._hurry.set()


class _MemoryFollowing(_InLists, POPOSubscription):
    pass


class _Polling(_InLists):
    """A subscription woken every POLL seconds, which reads at once what there is: SQLite tells no one of a new
    event, and PostgreSQL is not asked to (see above)."""

    gather = 0.0

    def __init__(self, recorder: ApplicationRecorder, gt: int | None = None, topics: Sequence[str] = ()) -> None:
        self._stop_polling = Event()
        super().__init__(recorder, gt, topics)
        self._poll_thread = Thread(target=self._poll, name="zametano-read-model-poll", daemon=True)
        self._poll_thread.start()

    def _poll(self) -> None:
        while not self._stop_polling.wait(POLL):
            self._has_been_notified.set()

    def stop(self) -> None:
        super().stop()
        self._stop_polling.set()

    def __exit__(self, *args: object, **kwargs: Any) -> None:
        try:
            super().__exit__(*args, **kwargs)
        finally:
            self._poll_thread.join()


def subscribe(recorder: ApplicationRecorder, gt: int) -> _InLists:
    """The subscription that follows this recorder's log after notification ``gt``."""
    if isinstance(recorder, POPOApplicationRecorder):
        return _MemoryFollowing(recorder, gt)
    return _Polling(recorder, gt)


class Follower:
    """The thread that keeps the read model up to date. ``running`` is true while it works (subscribed, or
    waiting with nothing to read), false while it waits to start again after a failure; ``indexing`` while it
    also holds the lease, so that queries know whether to wait for it."""

    def __init__(self, indexer: Indexer, recorder: ApplicationRecorder, publisher: Publisher | None = None,
                 lease: Lease | None = None) -> None:
        self.indexer = indexer
        self.recorder = recorder
        # Told of everything read, before it is indexed: the live streams of this process (service/streams/).
        self.publisher = publisher
        self.lease = lease if lease is not None else Lease()
        self.running = False
        self.indexing = False
        self._warned = False  # of the current failure: one warning, not one a second while the database is away
        self._stopping = Event()
        self._wake = Event()  # a live stream opened in this process, or the follower stops
        if publisher is not None:
            publisher.on_first_stream(self._wake.set)
        self._subscription: _InLists | None = None
        # A daemon: a server process that exits without closing its service is not held up by it.
        self._thread = Thread(target=self._run, name="zametano-read-model", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stops the thread and its subscription and waits for them (their connections are back in the pool)."""
        self._stopping.set()
        self._wake.set()
        subscription = self._subscription
        if subscription is not None:
            subscription.stop()
        if self._thread.is_alive():
            self._thread.join()

    def hurry(self) -> None:
        """A query waits for the read model: read and index at once what there is."""
        subscription = self._subscription
        if subscription is not None:
            subscription.hurry()

    def _run(self) -> None:
        try:
            while not self._stopping.is_set():
                try:
                    if self._wanted():
                        self._follow()
                    else:
                        self.running = True  # up, with nothing to read: woken by a stream, or tries again
                        self._wake.wait(IDLE_RETRY)
                        self._wake.clear()
                    continue
                except Exception as exc:  # noqa: BLE001 - whatever stopped it, it starts again
                    if not self._warned:
                        log.warning("the read model's follower stopped (%s: %s); it starts again every %g s until "
                                    "it can", type(exc).__name__, exc, RETRY)
                    self._warned = True
                self.running = False
                self._stopping.wait(RETRY)
        finally:
            self.running = self.indexing = False
            self.lease.release()

    def _wanted(self) -> bool:
        """Whether there is anything to read the log for: this process holds the lease (tried for now), or a live
        stream of its waits to hear of the log."""
        self.indexing = self.lease.hold()
        return self.indexing or self._streams_open()

    def _streams_open(self) -> bool:
        return self.publisher is not None and self.publisher.wanted()

    def _publish(self, notes: list[Notification]) -> None:
        if self.publisher is None:
            return
        try:
            self.publisher.read(notes)
        except Exception:  # noqa: BLE001 - the streams' trouble never stops the read model
            log.exception("the live streams could not be told of %d events", len(notes))

    def _follow(self) -> None:
        gt = self.indexer.position()
        with subscribe(self.recorder, gt) as subscription:
            self._subscription = subscription
            try:
                if self._stopping.is_set():  # stop() came before the subscription could be stopped
                    return
                # Taken before gt was read (_wanted), the lease needs no catching up: the subscription reads
                # everything after gt.
                self.running = True
                if self.publisher is not None:
                    self.publisher.subscribed(gt)
                held: list[Notification] = []
                while True:
                    notes, whole = subscription.next_list()
                    self._publish(notes)
                    # Only the lease's holder decodes and projects; the others keep nothing back, since
                    # whoever indexes next reads on from the read model's position.
                    held = self.indexer.take(held + notes, whole) if self._leads() else []
                    self._warned = False
                    if not self.indexing and not self._streams_open():
                        return  # nothing left to read for: waits in _run
            except StopIteration:
                return
            finally:
                self._subscription = None
                if self.indexing:
                    # A follower that failed lets another process index while it waits to start again (one
                    # that stops releases the lease as its thread ends).
                    self.lease.release()
                self.indexing = False

    def _leads(self) -> bool:
        """Whether this follower indexes the list it has just read: while it holds the lease. One that has just
        taken it first indexes the log from the read model's position, since the lists it read before were
        left to the lease's holder, which may have stopped before indexing them."""
        led, self.indexing = self.indexing, self.lease.hold()
        if self.indexing and not led:
            log.info("this process now indexes the read model")
            self.indexer.catch_up()
        return self.indexing
