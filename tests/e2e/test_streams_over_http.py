"""Live streams on the real server (gunicorn's threaded workers, SQLite and PostgreSQL): a stream resumed with
Last-Event-ID gets the rest of the log, then what another client records, live; sixteen writers on four tables
and the streams on them agree with the log exactly; a worker holds at most ZAMETANO_MAX_STREAMS and answers 503
beyond, while commands go on; with a hundred streams open, other clients' commands all succeed promptly and
reach every stream; a graceful stop ends open streams at once; sync workers refuse streams."""

from __future__ import annotations

import random
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.e2e.servers import Server, api_server, free_port, running_server
from tests.helpers import pick
from tests.sse import SSE, Message, Parser, messages

pytestmark = pytest.mark.e2e

PLAYERS = ["anna", "boris", "vera"]
BEAT = "0.5"  # ZAMETANO_STREAM_HEARTBEAT: a reader told to stop notices within half a second
# A request answers within this, or the test fails: far above any command's time, far below a starved one's.
PROMPT = 15


class LiveStream:
    """A stream read over its own connection by a thread of its own, as a browser reads it."""

    def __init__(self, base: str, path: str, headers: dict[str, str] | None = None) -> None:
        self.response = requests.get(base + path, headers={"Accept": SSE, **(headers or {})}, stream=True,
                                     timeout=(10, 30))
        self.status = self.response.status_code
        self.items: list[Any] = []
        self.ended: str | BaseException | None = None  # "clean" once the server ended it
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        if self.status == 200:
            self._thread.start()
        else:
            _ = self.response.content  # a refusal's short body, kept for the test to read
            self.response.close()

    def _read(self) -> None:
        parser = Parser()
        try:
            for chunk in self.response.iter_content(chunk_size=None):
                self.items += parser.feed(chunk)
                if self._stop.is_set():
                    return
            self.ended = "clean"
        except BaseException as exc:  # noqa: BLE001 - what ended it is the test's to judge
            self.ended = exc
        finally:
            self.response.close()

    def messages(self) -> list[Message]:
        return messages(self.items)

    def data(self) -> list[Any]:
        return [m.json for m in self.messages()]

    def close(self) -> None:
        """The client goes: its connection is closed (at the next heartbeat at the latest)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(30)
            assert not self._thread.is_alive()


@pytest.fixture
def live() -> Iterator[Callable[..., LiveStream]]:
    opened: list[LiveStream] = []

    def open_stream(base: str, path: str, headers: dict[str, str] | None = None) -> LiveStream:
        opened.append(LiveStream(base, path, headers))
        return opened[-1]

    yield open_stream
    for stream in opened:
        stream.close()


def store_env(kind: str, request: Any, tmp_path: Path) -> dict[str, str]:
    if kind == "sqlite":
        env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "streams.sqlite")}
    else:
        env = dict(request.getfixturevalue("postgres_env"))
    return {**env, "ZAMETANO_DATA_DIR": str(tmp_path / "data"), "ZAMETANO_STREAM_HEARTBEAT": BEAT}


def serve(env: dict[str, str], tmp_path: Path, workers: int = 2) -> Any:
    port = free_port()
    return running_server(env, tmp_path / "server.log", port=port, command=api_server(port, workers))


@pytest.fixture(params=["sqlite", "postgres"])
def server(request, tmp_path) -> Iterator[Server]:
    """Threaded workers (the default) on each store; stopped with its workers after the test, whatever happened."""
    with serve(store_env(request.param, request, tmp_path), tmp_path) as running:
        yield running


def eventually(condition: Callable[[], bool], what: str, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.02)


def new_table(base: str) -> str:
    response = requests.post(f"{base}/tables", json={"game": "chemin-de-fer", "players": PLAYERS}, timeout=PROMPT)
    assert response.status_code == 201, response.text
    return response.json()["table_id"]


def command(session: requests.Session, base: str, table_id: str, rng: random.Random) -> requests.Response:
    """One legal command for the table as its state stands now (another client may move it first: 409, 422)."""
    state = session.get(f"{base}/tables/{table_id}", timeout=PROMPT).json()
    name, player, fields = pick(state, rng)
    return session.post(f"{base}/tables/{table_id}/commands", json={"command": name, "player": player, **fields},
                        timeout=PROMPT)


def play(base: str, table_id: str, commands: int, seed: int = 1) -> None:
    rng, session = random.Random(seed), requests.Session()
    for _ in range(commands):
        response = command(session, base, table_id, rng)
        assert response.status_code == 200, response.text


def the_log(base: str, table_id: str) -> list[dict[str, Any]]:
    return requests.get(f"{base}/tables/{table_id}/events?limit=1000", timeout=PROMPT).json()["events"]


def test_a_stream_resumed_from_a_version_gets_the_rest_then_what_another_client_records_live(server, live):
    table_id = new_table(server)
    play(server, table_id, 4)
    resume_at = the_log(server, table_id)[-3]["version"]
    stream = live(server, f"/tables/{table_id}/events", {"Last-Event-ID": str(resume_at)})
    heads = live(server, "/events")
    assert stream.status == heads.status == 200

    eventually(lambda: len(stream.messages()) == 2, "the rest of the log")
    assert stream.data() == the_log(server, table_id)[-2:]
    play(server, table_id, 2, seed=2)  # another client, another connection, maybe another worker

    log = the_log(server, table_id)
    eventually(lambda: len(stream.messages()) == len(log) - resume_at, "the new events, live")
    assert stream.data() == log[resume_at:]
    assert [int(m.id) for m in stream.messages()] == [e["version"] for e in log[resume_at:]]  # type: ignore[arg-type]
    eventually(lambda: heads.data() and heads.data()[-1]["version"] == log[-1]["version"], "the table's new head")
    assert {h["table_id"] for h in heads.data()} == {table_id}


def test_sixteen_writers_on_four_tables_and_the_streams_on_them_get_exactly_the_log(server, live):
    tables = [new_table(server) for _ in range(4)]
    streams = [live(server, f"/tables/{t}/events") for t in tables for _ in range(2)]
    answers: list[int] = []

    def write(seed: int) -> None:
        rng, session = random.Random(seed), requests.Session()
        for _ in range(8):
            answers.append(command(session, server, rng.choice(tables), rng).status_code)

    writers = [threading.Thread(target=write, args=(n,)) for n in range(16)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()

    assert set(answers) <= {200, 409, 422} and answers.count(200) > 16  # races lost are refusals, never failures
    for stream, table_id in zip(streams, [t for t in tables for _ in range(2)]):
        log = the_log(server, table_id)
        eventually(lambda: len(stream.messages()) >= len(log), f"every event of {table_id}")
        assert stream.data() == log


@pytest.mark.parametrize("kind", ["sqlite"])
def test_past_its_streams_a_worker_answers_503_with_retry_after_and_frees_a_place_when_a_client_goes(
        kind, request, tmp_path, live):
    env = {**store_env(kind, request, tmp_path), "ZAMETANO_MAX_STREAMS": "2", "WEB_THREADS": "2"}
    with serve(env, tmp_path, workers=1) as base:
        table_id = new_table(base)
        for path in (f"/tables/{table_id}/events", "/events"):  # a HEAD has no body to follow: it holds no place
            assert requests.head(base + path, headers={"Accept": SSE}, timeout=PROMPT).status_code == 200
        first, second = live(base, f"/tables/{table_id}/events"), live(base, "/events")
        refused = live(base, f"/tables/{table_id}/events")  # a stream if admitted: never read to its end here
        assert (first.status, second.status, refused.status) == (200, 200, 503)
        assert refused.response.headers["Retry-After"] == "5" and refused.response.json()["retry_after"] == 5

        play(base, table_id, 3)  # the worker's WEB_THREADS still serve commands
        metrics = requests.get(f"{base}/metrics", timeout=PROMPT).text
        assert 'zametano_streams_open{kind="table"} 1.0' in metrics and 'zametano_streams_open{kind="heads"} 1.0' in metrics
        assert 'zametano_streams_refused_total{reason="full"} 1.0' in metrics
        first.close()

        def reopened() -> bool:
            stream = live(base, f"/tables/{table_id}/events")
            return stream.status == 200

        eventually(reopened, "a place freed by the client that went", limit=10)


@pytest.mark.parametrize("kind", ["postgres"])
def test_with_a_hundred_streams_open_other_clients_commands_all_succeed_promptly_and_reach_every_stream(
        kind, request, tmp_path, live):
    env = {**store_env(kind, request, tmp_path), "ZAMETANO_MAX_STREAMS": "32"}
    with serve(env, tmp_path, workers=4) as base:
        tables = [new_table(base) for _ in range(4)]
        streams: list[tuple[str, LiveStream]] = []
        deadline = time.monotonic() + 120
        while len(streams) < 100:  # 4 workers x 32: a worker that happens to hold 32 sends the client elsewhere
            assert time.monotonic() < deadline, f"only {len(streams)} streams opened"
            table_id = tables[len(streams) % 4]
            stream = live(base, f"/tables/{table_id}/events", {"Last-Event-ID": "1"})
            if stream.status == 200:
                streams.append((table_id, stream))
            else:
                assert stream.status == 503
        answers: list[int] = []

        def write(table_id: str, seed: int) -> None:
            rng, session = random.Random(seed), requests.Session()
            for _ in range(8):
                answers.append(command(session, base, table_id, rng).status_code)  # within PROMPT seconds, or fails

        writers = [threading.Thread(target=write, args=(t, n)) for n, t in enumerate(tables)]
        for writer in writers:
            writer.start()
        for writer in writers:
            writer.join()

        assert answers == [200] * 32
        for table_id, stream in streams:
            log = the_log(base, table_id)
            eventually(lambda: len(stream.messages()) >= len(log) - 1, "the commands' events")
            assert stream.data() == log[1:]


@pytest.mark.parametrize("kind", ["sqlite"])
def test_a_graceful_stop_ends_open_streams_at_once_instead_of_waiting_out_the_graceful_timeout(
        kind, request, tmp_path, live):
    with serve(store_env(kind, request, tmp_path), tmp_path) as base:
        table_id = new_table(base)
        streams = [live(base, f"/tables/{table_id}/events") for _ in range(3)] + [live(base, "/events")]
        eventually(lambda: all(s.items for s in streams), "the streams are open")

        started = time.monotonic()
        base.process.send_signal(signal.SIGTERM)
        base.process.wait(timeout=60)

        assert time.monotonic() - started < 10  # gunicorn's graceful timeout is 30 s
        for stream in streams:
            eventually(lambda: stream.ended is not None, "the stream ended", limit=5)
            assert stream.ended == "clean"


def test_sync_workers_refuse_streams_saying_threaded_workers_are_needed(request, tmp_path):
    env = {**store_env("sqlite", request, tmp_path), "WEB_THREADS": "1"}
    with serve(env, tmp_path, workers=1) as base:
        table_id = new_table(base)
        for path in (f"/tables/{table_id}/events", "/events"):
            refused = requests.get(base + path, headers={"Accept": SSE}, timeout=PROMPT)
            assert refused.status_code == 503 and "Retry-After" not in refused.headers
            assert "Live streams need threaded workers" in refused.json()["message"]
        assert requests.get(f"{base}/tables/{table_id}/events", timeout=PROMPT).json()["events"]  # the page as ever
