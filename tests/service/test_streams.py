"""Live streams in the service (service/streams/): a table's events after a version, then each new one as
it is recorded, each once and in order, whoever records it and however many write at once; every table's head
as it changes, from now or resumed from a position; at most ZAMETANO_MAX_STREAMS at once in a process; and a
process learns of new events once for all its streams."""

from __future__ import annotations

import json
import random
import threading
import time
from types import SimpleNamespace
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from prometheus_client import REGISTRY

from domain import sight
from domain.errors import DomainError
from domain.sight import AUDITOR, EVERYTHING, OPERATOR, PLAYER, Viewer
from service import present
from service.application import TablesService
from service.errors import ServiceError, StreamRefused, TableNotFound
from service.streams import hub
from tests import feeds
from tests.helpers import pick

PLAYERS = ["anna", "boris", "vera"]
QUIET = 0.05  # seconds of silence before a feed gives a heartbeat: short, so that a reader notices its stop


def eventually(condition: Callable[[], bool], what: str, limit: float = 60.0) -> None:
    """Waits for what another thread does; the limit only keeps a broken stream from hanging the suite."""
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.01)


class Reading:
    """A feed read in a thread of its own, as a server's thread reads it, until stopped."""

    def __init__(self, feed: Any) -> None:
        self.feed = feed
        self.items: list[Any] = []
        self.heartbeats = 0
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            for item in feeds.items(self.feed):
                if item is None:
                    self.heartbeats += 1
                else:
                    self.items.append(item)
                if self._stop.is_set():
                    return
        finally:
            self.feed.close()

    def versions(self) -> list[int]:
        return [e["version"] for e in self.items]

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(30)
        assert not self.thread.is_alive()


@pytest.fixture
def reading() -> Iterator[Callable[[Any], Reading]]:
    """Starts readers; every one is stopped after the test, whatever happened."""
    started: list[Reading] = []

    def start(feed: Any) -> Reading:
        started.append(Reading(feed))
        return started[-1]

    yield start
    for each in started:
        each.stop()


def play(service: TablesService, table_id: str, commands: int, rng: random.Random) -> None:
    for _ in range(commands):
        service.execute(table_id, *pick(service.current_state(table_id), rng))


def the_log(service: TablesService, table_id: str) -> list[dict[str, Any]]:
    return list(service.iter_events(table_id))


def head_of(service: TablesService, table_id: str) -> int:
    return service.head(table_id)["version"]


def open_table(service: TablesService) -> str:
    return service.open_table("chemin-de-fer", PLAYERS, {})["table_id"]


def open_streams(kind: str) -> float:
    return REGISTRY.get_sample_value("zametano_streams_open", {"kind": kind}) or 0.0


# --- one table's events ------------------------------------------------------------------------------------


def test_a_table_feed_sends_the_log_after_a_version_then_each_new_event_once_in_order(make_service, reading):
    service = make_service(follow=True)
    table_id = open_table(service)
    rng = random.Random(1)
    play(service, table_id, 6, rng)
    after = head_of(service, table_id) - 3
    reader = reading(service.table_feed(table_id, after, QUIET))
    play(service, table_id, 8, rng)

    head = head_of(service, table_id)
    eventually(lambda: reader.versions()[-1:] == [head], "the stream reached the head")
    assert reader.versions() == list(range(after + 1, head + 1))
    # exactly the items of the JSON page: no seed before its reveal, nothing the page does not show
    assert reader.items == service.events_page(table_id, after=after, limit=1000)["events"]
    assert all("seed" not in e["data"] for e in reader.items if e["type"] == "ShoeShuffled")


def test_writers_in_two_processes_at_once_reach_every_stream_of_both_exactly(make_service, shared_store, reading):
    processes = [make_service(follow=True), make_service(follow=True)]
    tables = [open_table(processes[0]) for _ in range(4)]
    readers = [reading(p.table_feed(t, 0, QUIET)) for p in processes for t in tables for _ in range(2)]

    def write(service: TablesService, seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(12):
            table_id = rng.choice(tables)
            try:
                service.execute(table_id, *pick(service.current_state(table_id), rng))
            except (DomainError, ServiceError):
                pass  # another writer moved the table between the read and the command

    writers = [threading.Thread(target=write, args=(processes[n % 2], n)) for n in range(8)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()

    logs = {t: the_log(processes[0], t) for t in tables}
    assert sum(len(log) for log in logs.values()) > 4 * 10  # the writers did write
    for reader in readers:
        log = logs[reader.feed.table_id]
        eventually(lambda: len(reader.items) >= len(log), "the stream has every event")
        assert reader.items == log


def test_an_event_recorded_right_after_the_backlog_was_read_is_not_missed(make_service, reading, monkeypatch):
    service = make_service()  # no follower: only the hub's own subscription can wake the stream
    table_id = open_table(service)
    backlog = service.iter_events

    def read_then_record(table_id: str, after: int = 0, batch: int = 500) -> Iterator[dict[str, Any]]:
        yield from backlog(table_id, after, batch)
        service.execute(table_id, "draw_seats", "anna", {})  # after the read, before the stream waits

    monkeypatch.setattr(service, "iter_events", read_then_record)
    reader = reading(service.table_feed(table_id, 0, 60.0))  # no heartbeat comes to wake it

    try:
        eventually(lambda: reader.versions()[-1:] == [head_of(service, table_id)], "the stream has the new events",
                   limit=10)
        assert reader.versions() == list(range(1, head_of(service, table_id) + 1))
    finally:
        service.hub.close()  # the reader waits for no heartbeat


def test_a_quiet_feed_gives_a_heartbeat_after_its_silence(service):
    table_id = open_table(service)
    feed = service.table_feed(table_id, 0, QUIET)
    try:
        items = feeds.items(feed)
        assert next(items)["version"] == 1
        started = time.monotonic()
        assert next(items) is None
        assert time.monotonic() - started >= QUIET * 0.9
    finally:
        feed.close()


def counted_reads(service: TablesService, monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, Any]]:
    """Every read of a table's events the service makes from now on, as (after, upto)."""
    reads: list[tuple[int, Any]] = []
    read_events = service.read_events

    def counted(table_id: str, **kwargs: Any) -> Any:
        reads.append((kwargs.get("after", 0), kwargs.get("upto")))
        return read_events(table_id, **kwargs)

    monkeypatch.setattr(service, "read_events", counted)
    return reads


class Renders:
    """A render that counts what it makes: one function for every stream, as the server's is."""

    def __init__(self) -> None:
        self.made = 0

    def __call__(self, event: dict[str, Any]) -> dict[str, Any]:
        self.made += 1
        return event


def test_the_streams_of_one_table_send_their_own_process_s_command_with_no_read_each_event_made_once_for_all(
        service, reading, monkeypatch):
    table_id = open_table(service)
    render = Renders()
    readers = [reading(service.table_feed(table_id, 0, QUIET, render=render)) for _ in range(25)]
    eventually(lambda: all(r.versions() == [1] for r in readers), "every stream sent the opening")
    reads = counted_reads(service, monkeypatch)
    made_before = render.made

    service.execute(table_id, "draw_seats", "anna", {})

    head = head_of(service, table_id)
    eventually(lambda: all(r.versions()[-1] == head for r in readers), "every stream has the command's events")
    assert reads == []  # the events as the command recorded them
    for reader in readers:
        assert reader.items == the_log(service, table_id)
    # 25 streams each making each new event would make 25 of each; one makes it and the others take it (two
    # making the same one at the same moment is allowed, and rare)
    assert render.made - made_before < 5 * (head - 1)


def test_streams_send_the_commands_of_another_process_as_its_follower_decoded_them_with_no_read(
        make_service, shared_store, reading, monkeypatch):
    streaming, writer = make_service(follow=True), make_service()
    # The follower's first subscription makes every stream open then read the log again (what came before it
    # is in no memory): on a busy machine it can come after the streams below opened, so they open after it.
    eventually(lambda: streaming.hub.hearing, "the follower subscribed")
    table_id = open_table(writer)
    readers = [reading(streaming.table_feed(table_id, 0, QUIET)) for _ in range(3)]
    eventually(lambda: all(r.versions() == [1] for r in readers), "every stream sent the opening")
    reads = counted_reads(streaming, monkeypatch)

    play(writer, table_id, 6, random.Random(6))

    head = head_of(writer, table_id)
    eventually(lambda: all(r.versions()[-1:] == [head] for r in readers), "every stream has the writer's events")
    assert reads == []
    for reader in readers:
        assert reader.items == the_log(writer, table_id)


def test_events_the_hub_does_not_keep_are_read_from_the_log_once_for_every_stream_of_the_table(
        service, reading, monkeypatch):
    table_id = open_table(service)
    readers = [reading(service.table_feed(table_id, 0, QUIET)) for _ in range(25)]
    eventually(lambda: all(r.versions() == [1] for r in readers), "every stream sent the opening")
    reads = counted_reads(service, monkeypatch)
    # as a follower that could not decode them says: the tables moved, and nothing more
    monkeypatch.setattr(service.hub, "recorded", lambda events: service.hub.moved(
        {str(e.originator_id): e.originator_version for e in events}))

    service.execute(table_id, "draw_seats", "anna", {})

    head = head_of(service, table_id)
    eventually(lambda: all(r.versions()[-1] == head for r in readers), "every stream has the command's events")
    assert reads == [(1, head)]
    for reader in readers:
        assert reader.items == the_log(service, table_id)


def test_streams_of_different_viewers_in_one_process_each_send_only_what_their_viewer_sees(
        service, reading, monkeypatch):
    table_id = open_table(service)
    viewers = [Viewer(PLAYER, "anna"), Viewer(PLAYER, "boris"), Viewer(OPERATOR), Viewer(AUDITOR), EVERYTHING]
    readers = {v: [reading(service.table_feed(table_id, 0, QUIET, v, render=dict)) for _ in range(3)] for v in viewers}
    eventually(lambda: all(r.versions() == [1] for rs in readers.values() for r in rs), "the openings were sent")
    reads = counted_reads(service, monkeypatch)

    play(service, table_id, 40, random.Random(7))

    head = head_of(service, table_id)
    eventually(lambda: all(r.versions()[-1] == head for rs in readers.values() for r in rs), "every event was sent")
    assert reads == []
    log = the_log(service, table_id)
    for viewer, each in readers.items():
        wanted = log if viewer == EVERYTHING else [present.sight(viewer, None).shown_event(e) for e in log]
        for reader in each:
            assert reader.items == wanted
    annas, boriss = readers[viewers[0]][0].items, readers[viewers[1]][0].items
    # the test means something: a card anna was dealt face down, which boris's stream hides
    assert any(a != b and sight.HIDDEN in json.dumps(b) and sight.HIDDEN not in json.dumps(a)
               for a, b in zip(annas, boriss) if a["type"] == "CardDealt")


def test_a_hub_keeps_the_latest_events_of_the_tables_it_follows_and_gives_a_range_only_when_it_has_all_of_it(
        monkeypatch):
    monkeypatch.setattr(hub, "RECENT", 4)
    kept = hub.Hub()
    kept.watch("followed")

    def recorded(table_id: str, *versions: int) -> None:
        kept.recorded([SimpleNamespace(originator_id=table_id, originator_version=v) for v in versions])

    def versions(after: int, upto: int) -> list[int] | None:
        found = kept.kept("followed", after, upto)
        return None if found is None else [r.event.originator_version for r in found]

    recorded("followed", *range(1, 11))
    recorded("other", 1)
    assert versions(8, 10) == [9, 10]
    assert versions(0, 10) is None  # the oldest are forgotten: such a stream reads the log
    assert kept.kept("other", 0, 1) is None  # no stream follows it
    recorded("followed", 12)
    assert versions(10, 12) is None  # 11 is missing (another process's, not heard yet)
    recorded("followed", 11)
    assert versions(10, 12) == [11, 12]
    assert kept.unkept([("followed", 12), ("followed", 13), ("other", 2)]) == {("followed", 13)}
    kept.unwatch("followed")
    assert kept.kept("followed", 10, 12) is None


def test_an_unknown_table_is_refused_before_any_stream_opens(service):
    with pytest.raises(TableNotFound):
        service.table_feed("00000000-0000-4000-8000-000000000000", 0, QUIET)
    assert feeds.held_streams(service.hub) == 0


def test_a_follower_that_subscribes_again_past_what_the_hub_heard_makes_every_stream_read_again(
        make_service, shared_store, reading):
    reader_process, writer = make_service(), make_service()  # no follower: nothing tells the reader's hub
    table_id = open_table(writer)
    reader = reading(reader_process.table_feed(table_id, 0, QUIET))
    play(writer, table_id, 3, random.Random(2))
    time.sleep(0.2)
    assert reader.versions() == [1]  # nothing heard of the writer's events

    reader_process.hub.subscribed(reader_process.log_position())  # as a follower starting after them does

    eventually(lambda: reader.versions()[-1:] == [head_of(writer, table_id)], "the stream read again")
    assert reader.items == the_log(writer, table_id)


# --- limits and stopping -----------------------------------------------------------------------------------


def test_a_process_holds_at_most_max_streams_and_a_closed_feed_frees_its_place(make_service, persistence_env):
    persistence_env["ZAMETANO_MAX_STREAMS"] = "2"
    service = make_service()
    table_id = open_table(service)
    before = open_streams("table")
    first, second = service.table_feed(table_id, 0, QUIET), service.table_feed(table_id, 0, QUIET)
    assert open_streams("table") == before + 2
    try:
        with pytest.raises(StreamRefused) as refused:
            service.heads_feed(None, QUIET)
        assert refused.value.retry_after == hub.RETRY_FULL and "(2, ZAMETANO_MAX_STREAMS)" in refused.value.message
        first.close()
        first.close()  # twice frees it once
        third = service.heads_feed(None, QUIET)
        assert feeds.held_streams(service.hub) == 2
        third.close()
    finally:
        first.close()
        second.close()
    assert feeds.held_streams(service.hub) == 0 and open_streams("table") == before


def test_stopping_ends_every_stream_at_once_and_refuses_new_ones(service, reading):
    table_id = open_table(service)
    table_reader = reading(service.table_feed(table_id, 0, 3600.0))
    heads_reader = reading(service.heads_feed(None, 3600.0))
    eventually(lambda: table_reader.versions() == [1], "the stream sent the opening")

    hub.stop_all()  # what a worker does when gunicorn tells it to stop

    table_reader.thread.join(5)
    heads_reader.thread.join(5)
    assert not table_reader.thread.is_alive() and not heads_reader.thread.is_alive()
    assert feeds.held_streams(service.hub) == 0
    with pytest.raises(StreamRefused) as refused:
        service.table_feed(table_id, 0, QUIET)
    assert refused.value.retry_after == hub.RETRY_STOPPING and "stopping" in refused.value.message


# --- every table's head ------------------------------------------------------------------------------------


def shown_head(service: TablesService, table_id: str) -> dict[str, Any]:
    head, state = service.head(table_id), service.current_state(table_id)
    opening = service.events_page(table_id, limit=1)["events"][0]
    return {"table_id": table_id, "game": state["game"], "version": head["version"], "digest": head["digest"],
            "timestamp": head["timestamp"], "opened_at": opening["timestamp"], "players": PLAYERS}


def latest(reader: Reading) -> dict[str, dict[str, Any]]:
    return {head["table_id"]: head for _, head in reader.items}


def test_the_heads_feed_from_now_sends_each_tables_new_heads_with_rising_positions(make_service, reading):
    service = make_service(follow=True)
    quiet, moving = open_table(service), open_table(service)
    eventually(lambda: service.hub.heads_after(service.log_position()) is not None, "the hub heard the log")
    reader = reading(service.heads_feed(None, QUIET))
    rng = random.Random(3)
    play(service, moving, 5, rng)
    fresh = open_table(service)

    eventually(lambda: latest(reader).get(fresh) == shown_head(service, fresh)
               and latest(reader).get(moving) == shown_head(service, moving), "the stream sent the heads")
    positions = [position for position, _ in reader.items]
    assert positions == sorted(set(positions))
    assert quiet not in latest(reader)  # nothing before the stream opened


@pytest.mark.parametrize("history", [hub.HISTORY, 2], ids=["kept by the hub", "read from the log"])
def test_resuming_heads_sends_the_latest_head_of_every_table_changed_since_the_position(
        make_service, reading, monkeypatch, history):
    monkeypatch.setattr(hub, "HISTORY", history)
    service = make_service(follow=True)
    moved, still = open_table(service), open_table(service)
    rng = random.Random(4)
    play(service, moved, 2, rng)
    position = service.log_position()
    opened = open_table(service)
    play(service, moved, 3, rng)
    opened_late = open_table(service)
    play(service, opened, 2, rng)
    eventually(lambda: (service.hub.heads_after(service.log_position()) or ([], 0))[1] >= service.log_position(),
               "the hub heard the log")
    from_the_log = []
    head_changes = service.head_changes
    monkeypatch.setattr(service, "head_changes", lambda *a: from_the_log.append(a) or head_changes(*a))

    reader = reading(service.heads_feed(position, QUIET))

    wanted = {t: shown_head(service, t) for t in (moved, opened, opened_late)}
    eventually(lambda: latest(reader) == wanted, "every table changed since the position, at its head")
    assert all(p > position for p, _ in reader.items)
    assert still not in latest(reader)
    assert bool(from_the_log) == (history == 2)


def test_a_position_past_the_end_of_the_log_resumes_from_the_end(make_service, reading):
    service = make_service(follow=True)
    table_id = open_table(service)
    reader = reading(service.heads_feed(10**12, QUIET))
    play(service, table_id, 1, random.Random(5))
    eventually(lambda: latest(reader).get(table_id) == shown_head(service, table_id), "the change was sent")
