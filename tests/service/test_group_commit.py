"""Group commit (service/groupcommit.py): commands of different tables decided at once by several threads are
saved in one transaction, each answered only after it; two commands of one table never share one; a batch
that loses a race is saved again command by command; an outage fails every member and records nothing.

To make batches certain rather than likely, a first command's batch is held (in the committer's ``on_batch``
hook, before it is written) until the other commands are handed over: they then go together in the next."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from eventsourcing.persistence import IntegrityError, OperationalError

from domain.errors import DomainError, NotAllowedNow
from service.application import utc_now
from service.errors import ConcurrentWrite, StoreUnavailable, VersionMismatch
from service import groupcommit, replay
from service.groupcommit import GroupCommitter
from tests.helpers import pick, queued

PLAYERS = ["anna", "boris", "vera"]
HANDED_TIMEOUT = 60.0  # only a broken committer waits this long


@pytest.fixture
def group_commit() -> bool:
    return True


class Held:
    """Watches a service's batches; holds the first until ``waiting`` more commands are queued, and runs
    ``before[n]`` just before batch n (from 0) is written."""

    def __init__(self, service: Any, waiting: int, before: dict[int, Callable[[], None]] | None = None) -> None:
        self.committer = service.committer
        self.waiting = waiting
        self.before = before or {}
        self.batches: list[list[str]] = []
        self.first_writing = threading.Event()
        self.committer.on_batch = self

    def __call__(self, table_ids: list[Any]) -> None:
        self.batches.append([str(t) for t in table_ids])
        n = len(self.batches) - 1
        if n == 0:
            self.first_writing.set()
            deadline = time.monotonic() + HANDED_TIMEOUT
            while queued(self.committer) < self.waiting:
                if time.monotonic() > deadline:
                    raise AssertionError(f"only {queued(self.committer)} of {self.waiting} commands were handed")
                time.sleep(0.002)
        if n in self.before:
            self.before[n]()


def outcome(call: Callable[[], Any]) -> Callable[[list[Any], int], None]:
    def run(into: list[Any], i: int) -> None:
        try:
            into[i] = call()
        except BaseException as exc:  # noqa: BLE001 - every outcome is checked by the test
            into[i] = exc

    return run


def together(held: Held, first: Callable[[], Any], rest: list[Callable[[], Any]]) -> list[Any]:
    """``first`` in a thread of its own; once its batch is being written, ``rest`` each in a thread: they queue
    behind it and go in the next batch. Returns every call's result or exception, ``first``'s first."""
    results: list[Any] = [None] * (1 + len(rest))
    threads = [threading.Thread(target=outcome(first), args=(results, 0))]
    threads[0].start()
    try:
        assert held.first_writing.wait(HANDED_TIMEOUT), "the first command never reached the committer"
        for i, call in enumerate(rest, 1):
            threads.append(threading.Thread(target=outcome(call), args=(results, i)))
            threads[-1].start()
    finally:
        for t in threads:
            t.join()
    return results


def open_tables(service: Any, n: int) -> list[str]:
    return [service.open_table("chemin-de-fer", PLAYERS, {})["table_id"] for _ in range(n)]


def draw(service: Any, table_id: str, **kwargs: Any) -> Callable[[], Any]:
    return lambda: service.execute(table_id, "draw_seats", "anna", {}, **kwargs)


def events(service: Any, table_id: str) -> list[dict[str, Any]]:
    return service.events_page(table_id, limit=1000)["events"]


def counting_inserts(service: Any, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of events of every transaction the service writes to its event log."""
    calls: list[int] = []
    insert = service.recorder.insert_events

    def counted(stored: Any, **kwargs: Any) -> Any:
        calls.append(len(stored))
        return insert(stored, **kwargs)

    monkeypatch.setattr(service.recorder, "insert_events", counted)
    return calls


def test_commands_of_different_tables_handed_at_once_are_written_in_one_transaction(make_service, monkeypatch):
    service = make_service()
    tables = open_tables(service, 8)
    held = Held(service, waiting=7)
    inserts = counting_inserts(service, monkeypatch)

    results = together(held, draw(service, tables[0]), [draw(service, t) for t in tables[1:]])

    assert [sorted(b) for b in held.batches] == [[tables[0]], sorted(tables[1:])]
    assert len(inserts) == 2  # one transaction per batch, not one per command
    for table_id, result in zip(tables, results):
        assert not isinstance(result, BaseException), repr(result)
        log = events(service, table_id)
        assert result["events"] == log[1:] and result["version"] == log[-1]["version"]
        assert result["digest"] == service.current_state(table_id)["digest"]


def test_two_commands_of_one_table_never_share_a_batch_and_the_later_is_decided_again(make_service):
    service = make_service()
    first, shared, other = open_tables(service, 3)
    # One of the two commands of ``shared`` waits for the table's lock (service/replay.py HeadLease), not for the
    # committer: two are queued behind the first batch.
    held = Held(service, waiting=2)

    results = together(held, draw(service, first), [draw(service, shared), draw(service, shared), draw(service, other)])

    assert not isinstance(results[0], BaseException), repr(results[0])
    assert all(len(set(b)) == len(b) for b in held.batches), held.batches
    recorded, refused = sorted(results[1:3], key=lambda r: isinstance(r, BaseException))
    # The later one decided on the version the earlier took: decided again on the table after it, where
    # the seats are drawn, it is refused as it would be one after the other.
    assert isinstance(refused, NotAllowedNow), repr(refused)
    assert recorded["events"] == events(service, shared)[1:]
    assert sum(e["type"] == "SeatsDrawn" for e in events(service, shared)) == 1
    assert not isinstance(results[3], BaseException) and results[3]["events"] == events(service, other)[1:]


def test_the_committer_never_puts_two_commands_of_one_table_in_a_batch_and_tells_the_stale_one_at_once():
    # Decided without the table's lock (a command decided again on the table read from the log), two commands
    # of one table can reach the committer together: the later waits for the next batch, and if the earlier
    # took its version it is refused there, without a write.
    saved: list[list[str]] = []
    release = threading.Event()

    def save(*aggregates: Any) -> None:
        saved.append([a.id for a in aggregates])
        if len(saved) == 1:
            assert release.wait(HANDED_TIMEOUT)
        for aggregate in aggregates:
            aggregate.version = aggregate.pending_events[-1].originator_version

    def decided(table_id: str, version: int) -> Any:
        event = SimpleNamespace(originator_version=version)
        return SimpleNamespace(id=table_id, version=version - 1, pending_events=[event])

    committer = GroupCommitter(save)
    outcomes: dict[str, BaseException | None] = {}

    def commit(name: str, table: Any) -> None:
        try:
            committer.commit(table)
            outcomes[name] = None
        except BaseException as exc:  # noqa: BLE001 - checked below
            outcomes[name] = exc

    threads = [threading.Thread(target=commit, args=("first", decided("t0", 2)))]
    threads[0].start()
    deadline = time.monotonic() + HANDED_TIMEOUT
    while not saved and time.monotonic() < deadline:
        time.sleep(0.002)
    threads += [threading.Thread(target=commit, args=(name, table)) for name, table in
                (("earlier", decided("t1", 2)), ("stale", decided("t1", 2)), ("other", decided("t2", 2)))]
    for t in threads[1:]:
        t.start()
    while queued(committer) < 3 and time.monotonic() < deadline:
        time.sleep(0.002)
    release.set()
    for t in threads:
        t.join()

    assert [sorted(batch) for batch in saved] == [["t0"], ["t1", "t2"]]  # the stale one was never written
    assert outcomes["first"] is None and outcomes["other"] is None
    # Whichever of the two was queued first is recorded; the other decided on the version it took.
    recorded, stale = sorted((outcomes["earlier"], outcomes["stale"]), key=lambda o: o is not None)
    assert recorded is None and isinstance(stale, IntegrityError), repr(stale)


@pytest.mark.parametrize("how", ["expected_version", "idempotency_key"])
def test_a_batch_that_loses_a_race_is_saved_again_command_by_command(make_service, shared_store, how):
    """Another process records a command on one table of the batch just before the batch is written: the
    batch writes nothing; saved again alone, the others are recorded and the loser is answered as without
    group commit (409 with an expected version; the first answer for a key the other recorded)."""
    service = make_service(clock=utc_now)
    elsewhere = make_service(clock=utc_now, group_commit=False)
    first, lost, kept = open_tables(service, 3)
    kwargs = {"expected_version": 1} if how == "expected_version" else {"idempotency_key": "k"}
    theirs: list[Any] = []
    held = Held(service, waiting=2, before={1: lambda: theirs.append(draw(elsewhere, lost, **kwargs)())})

    # ``kept`` expects its version too: had the batch's lost race been its own, it would be refused.
    results = together(held, draw(service, first), [draw(service, lost, **kwargs), draw(service, kept, expected_version=1)])

    assert sorted(held.batches[1]) == sorted([lost, kept])
    if how == "expected_version":
        assert isinstance(results[1], ConcurrentWrite), repr(results[1])
    else:
        assert results[1] == theirs[0]
    assert theirs[0]["events"] == events(service, lost)[1:]
    assert not isinstance(results[2], BaseException), repr(results[2])
    assert results[2]["events"] == events(service, kept)[1:]


def test_an_outage_while_a_batch_is_written_fails_every_member_and_records_nothing(make_service, monkeypatch):
    service = make_service()
    first, *rest = open_tables(service, 4)
    insert = service.recorder.insert_events

    def down(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError("server closed the connection unexpectedly")

    held = Held(service, waiting=3, before={1: lambda: monkeypatch.setattr(service.recorder, "insert_events", down)})

    results = together(held, draw(service, first), [draw(service, t) for t in rest])

    assert not isinstance(results[0], BaseException)
    assert all(isinstance(r, (OperationalError, StoreUnavailable)) for r in results[1:]), results[1:]
    assert [len(events(service, t)) for t in rest] == [1, 1, 1]
    # Nothing of the failed batch lingers in the cache: the same commands are recorded once it is back.
    monkeypatch.setattr(service.recorder, "insert_events", insert)
    for table_id in rest:
        result = draw(service, table_id)()
        assert result["events"] == events(service, table_id)[1:]
        assert result["events"][0]["version"] == 2


def test_many_threads_on_shared_tables_have_every_acknowledged_command_recorded_once_in_order(make_service):
    """16 threads play 4 tables (4 threads each), every command with the version it decided on; whatever a
    thread was told was recorded is in the log once, at its version, and the log holds nothing else."""
    service = make_service(clock=utc_now)
    tables = open_tables(service, 4)
    sizes: list[int] = []
    service.committer.on_batch = lambda ids: sizes.append(len(ids))
    acknowledged: dict[str, list[dict[str, Any]]] = {t: [] for t in tables}
    failures: list[BaseException] = []

    def player(i: int) -> None:
        table_id, rng = tables[i % len(tables)], random.Random(i)
        try:
            for _ in range(5):
                state = service.current_state(table_id)
                command, player, args = pick(state, rng)
                try:
                    result = service.execute(table_id, command, player, args, expected_version=state["version"])
                except (VersionMismatch, ConcurrentWrite):
                    continue  # another thread was first: read again and decide anew
                acknowledged[table_id].append(result)
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=player, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert not failures, repr(failures[0])
    assert not any(isinstance(f, DomainError) for f in failures)
    for table_id, results in acknowledged.items():
        assert results, "no command of this table was recorded"
        log = events(service, table_id)
        told = [e for r in sorted(results, key=lambda r: r["version"]) for e in r["events"]]
        assert told == log[1:]
        assert service.verify(table_id)["ok"] is True
    assert sum(sizes) >= sum(len(r) for r in acknowledged.values())


# --- waiting for company (the server tells the committer whether another command may come soon) -------------


class Expecting:
    """A server's company: it expects the commands of the threads named in ``coming`` until each is handed
    over (or, with ``always``, forever); ``fails`` makes every look fail."""

    def __init__(self, coming: set[str] = frozenset(), *, always: bool = False, fails: bool = False) -> None:
        self.coming = set(coming)
        self.always = always
        self.fails = fails
        self.looks = 0
        self.resumed_by: list[str] = []

    def expected(self) -> bool:
        self.looks += 1
        if self.fails:
            raise RuntimeError("the server's count is broken")
        return self.always or bool(self.coming)

    def arrived(self) -> None:
        self.coming.discard(threading.current_thread().name)

    def resumed(self) -> None:
        self.resumed_by.append(threading.current_thread().name)


def decided_table(table_id: str, version: int = 1) -> Any:
    return SimpleNamespace(id=table_id, version=version - 1, pending_events=[SimpleNamespace(originator_version=version)])


def committing(committer: GroupCommitter, name: str, table: Any, outcomes: dict[str, Any]) -> threading.Thread:
    def run() -> None:
        try:
            committer.commit(table)
            outcomes[name] = None
        except BaseException as exc:  # noqa: BLE001 - checked by the test
            outcomes[name] = exc

    thread = threading.Thread(target=run, name=name)
    thread.start()
    return thread


def saving_into(saved: list[list[str]]) -> Callable[..., None]:
    def save(*aggregates: Any) -> None:
        saved.append(sorted(a.id for a in aggregates))
    return save


@pytest.fixture
def company(monkeypatch: pytest.MonkeyPatch) -> Callable[[Expecting], Expecting]:
    def install(expecting: Expecting) -> Expecting:
        monkeypatch.setattr(groupcommit, "company", expecting)
        return expecting
    return install


def test_a_leader_waits_for_a_command_its_server_expects_and_writes_both_in_one_transaction(company):
    expecting = company(Expecting({"second"}))
    saved: list[list[str]] = []
    committer = GroupCommitter(saving_into(saved))
    committer.wait_for_company = HANDED_TIMEOUT  # only a leader that stopped waiting early writes alone
    outcomes: dict[str, Any] = {}

    first = committing(committer, "first", decided_table("t1"), outcomes)
    deadline = time.monotonic() + HANDED_TIMEOUT
    while expecting.looks == 0 and time.monotonic() < deadline:
        time.sleep(0.001)  # the leader is waiting now
    second = committing(committer, "second", decided_table("t2"), outcomes)
    first.join()
    second.join()

    assert saved == [["t1", "t2"]]
    assert outcomes == {"first": None, "second": None}
    assert sorted(expecting.resumed_by) == ["first", "second"]  # both may send their next command now


def test_a_leader_whose_server_expects_nothing_writes_at_once(company):
    company(Expecting())
    saved: list[list[str]] = []
    committer = GroupCommitter(saving_into(saved))
    committer.wait_for_company = 3600.0  # a leader that waited anyway would not finish within the join's limit
    outcomes: dict[str, Any] = {}

    thread = committing(committer, "alone", decided_table("t1"), outcomes)
    thread.join(HANDED_TIMEOUT)

    assert not thread.is_alive(), "the leader waited although nothing was expected"
    assert saved == [["t1"]] and outcomes == {"alone": None}


def test_a_leader_waits_for_company_no_longer_than_its_limit(company):
    company(Expecting(always=True))  # expected, and never comes
    saved: list[list[str]] = []
    committer = GroupCommitter(saving_into(saved))
    committer.wait_for_company = 0.05
    outcomes: dict[str, Any] = {}

    thread = committing(committer, "alone", decided_table("t1"), outcomes)
    thread.join(HANDED_TIMEOUT)

    assert not thread.is_alive() and saved == [["t1"]] and outcomes == {"alone": None}


def test_a_company_that_fails_to_answer_never_fails_the_batch(company, caplog):
    company(Expecting(fails=True))
    saved: list[list[str]] = []
    committer = GroupCommitter(saving_into(saved))
    outcomes: dict[str, Any] = {}

    committing(committer, "alone", decided_table("t1"), outcomes).join(HANDED_TIMEOUT)

    assert saved == [["t1"]] and outcomes == {"alone": None}
    assert "could not look for company" in caplog.text


def test_a_command_waiting_for_its_tables_lock_is_no_longer_expected(make_service, company):
    # Its table's command in hand holds the lock until answered, so it could not join that command's batch:
    # a leader waiting for it would wait its whole limit for nothing.
    service = make_service()
    if service.repository.cache is None:
        pytest.skip("without a cache a command holds no lock of its table")
    table_id = open_tables(service, 1)[0]
    draw(service, table_id)()  # a command's table is the one cached
    expecting = company(Expecting({"blocked"}))
    holding = replay.HeadLease(service, table_id)
    assert holding.table is not None, "the table was not lent from the cache"
    try:
        blocked = threading.Thread(target=lambda: replay.HeadLease(service, table_id).release(), name="blocked")
        blocked.start()
        deadline = time.monotonic() + HANDED_TIMEOUT
        while expecting.coming and time.monotonic() < deadline:
            time.sleep(0.001)
        assert not expecting.coming, "the blocked command stayed expected"
    finally:
        holding.release()
    blocked.join()
