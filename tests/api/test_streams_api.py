"""Live streams over HTTP, through the test client: GET /tables/{id}/events with Accept: text/event-stream
(the log after Last-Event-ID or `after`, then live, each message exactly the JSON page's item), GET /events
(every table's head), heartbeats, the refusals (400, 404, 406, 503 with Retry-After beyond
ZAMETANO_MAX_STREAMS or a credential's share of them, 503 under sync workers), and one log line per stream, written when it ends."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from prometheus_client import REGISTRY

from api.app import create_app
from service.application import TablesService
from service.config import load
from service.errors import StoreUnavailable
from tests.feeds import held_streams
from tests.helpers import Seeds, StepClock, pick
from tests.sse import SSE, Comment, Message, Parser, heartbeats, messages

PLAYERS = ["anna", "boris", "vera"]
OP, AU, AU2 = "op-token-for-streams", "au-token-for-streams", "au2-token-for-streams"
BEAT = 0.1  # ZAMETANO_STREAM_HEARTBEAT in these tests: a waiting read never waits long


class Stream:
    """A stream opened through the test client, read a piece at a time as the server sends them."""

    def __init__(self, client: Any, path: str, headers: dict[str, str] | None = None, **kwargs: Any) -> None:
        self.response = client.get(path, headers={"Accept": SSE, **(headers or {})}, buffered=False, **kwargs)
        self._chunks: Iterator[bytes] = iter(self.response.response)
        self._parser = Parser()
        self.items: list[Message | Comment] = []
        self.raw: list[bytes] = []

    def read(self) -> list[Message | Comment]:
        chunk = next(self._chunks)
        self.raw.append(chunk)
        parsed = self._parser.feed(chunk)
        self.items += parsed
        return parsed

    def until(self, condition: Callable[[list[Message]], bool], limit: float = 30.0) -> list[Message]:
        deadline = time.monotonic() + limit
        while not condition(messages(self.items)):
            assert time.monotonic() < deadline, f"never came; got {messages(self.items)}"
            self.read()
        return messages(self.items)

    def close(self) -> None:
        self.response.close()


@pytest.fixture
def make_client(tmp_path):
    """A client of an app on its own SQLite store, with this test's settings; every stream and service it
    opened is closed after the test."""
    made: list[Any] = []

    def make(follow: bool = False, **env: str) -> Any:
        settings = load({"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / f"{len(made)}.sqlite"),
                         "ZAMETANO_DATA_DIR": str(tmp_path), "ZAMETANO_STREAM_HEARTBEAT": str(BEAT), **env})
        service = TablesService(settings, clock=StepClock(), new_seed=Seeds(), follow=follow)
        made.append(service)
        client = create_app(settings, service=service).test_client()
        client.service = service
        return client

    yield make
    for service in made:
        service.close()


@pytest.fixture
def opened(make_client):
    streams: list[Stream] = []

    def open_stream(client: Any, path: str, headers: dict[str, str] | None = None, **kwargs: Any) -> Stream:
        streams.append(Stream(client, path, headers, **kwargs))
        return streams[-1]

    yield open_stream
    for stream in streams:
        stream.close()


def new_table(client: Any, commands: int = 0, headers: dict[str, str] | None = None) -> str:
    table_id = client.post("/tables", json={"game": "chemin-de-fer", "players": PLAYERS}, headers=headers).json["table_id"]
    play(client, table_id, commands, headers)
    return table_id


def play(client: Any, table_id: str, commands: int, headers: dict[str, str] | None = None, seed: int = 1) -> None:
    rng = random.Random(seed)
    for _ in range(commands):
        command, player, fields = pick(client.get(f"/tables/{table_id}", headers=headers).json, rng)
        response = client.post(f"/tables/{table_id}/commands", json={"command": command, "player": player, **fields},
                               headers=headers)
        assert response.status_code == 200, response.json


def the_log(client: Any, table_id: str) -> list[dict[str, Any]]:
    return client.get(f"/tables/{table_id}/events?limit=1000").json["events"]


def versions(found: list[Message]) -> list[int]:
    return [int(m.id) for m in found]  # type: ignore[arg-type]


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


# --- a table's events --------------------------------------------------------------------------------------


def test_a_table_stream_sends_each_event_as_the_json_page_shows_it_then_each_new_one_live(make_client, opened):
    client = make_client()
    table_id = new_table(client, commands=3)
    stream = opened(client, f"/tables/{table_id}/events")

    assert stream.response.status_code == 200
    assert stream.response.headers["Content-Type"] == "text/event-stream; charset=utf-8"
    assert stream.response.headers["Cache-Control"] == "no-cache"
    assert stream.response.headers["X-Accel-Buffering"] == "no"
    assert stream.read() == [Comment("heartbeat")]  # at once: the client has its headers without waiting
    log = the_log(client, table_id)
    found = stream.until(lambda m: len(m) >= len(log))
    # id, event and data, the data exactly one item of the JSON page in compact JSON; what one read brought
    # goes in one write, so the bytes are compared whole
    expected = "".join(f"id: {e['version']}\nevent: table-event\ndata: {json.dumps(e, separators=(',', ':'), ensure_ascii=False)}\n\n"
                       for e in log)
    assert b"".join(stream.raw[1:]).decode() == expected
    assert [message.json for message in found] == log
    assert len(stream.raw[1:]) < len(log)  # the backlog in pieces, not a write an event

    play(client, table_id, 2, seed=2)

    log = the_log(client, table_id)
    found = stream.until(lambda m: len(m) >= len(log))
    assert versions(found) == [e["version"] for e in log] and [m.json for m in found] == log


def test_last_event_id_resumes_after_that_version_and_wins_over_after(make_client, opened):
    client = make_client()
    table_id = new_table(client, commands=4)
    head = the_log(client, table_id)[-1]["version"]
    resumed = opened(client, f"/tables/{table_id}/events?after=1", headers={"Last-Event-ID": str(head - 2)})
    from_after = opened(client, f"/tables/{table_id}/events?after={head - 1}", headers={"Last-Event-ID": ""})

    assert versions(resumed.until(lambda m: len(m) >= 2)) == [head - 1, head]
    assert versions(from_after.until(lambda m: len(m) >= 1)) == [head]


def test_a_quiet_stream_sends_a_heartbeat_after_each_silence(make_client, opened):
    client = make_client()
    stream = opened(client, f"/tables/{new_table(client)}/events")
    stream.until(lambda m: len(m) == 1)
    started = time.monotonic()
    while heartbeats(stream.items) < 3:
        stream.read()
    assert time.monotonic() - started >= 2 * BEAT * 0.9  # the opening one, then one after each silence


@pytest.mark.parametrize(("header", "field"), [("x", "Last-Event-ID"), ("-1", "Last-Event-ID"),
                                               ("99999999999999999999", "Last-Event-ID")])
def test_a_last_event_id_that_is_no_version_is_a_400_saying_what_it_must_be(make_client, header, field):
    client = make_client()
    response = client.get(f"/tables/{new_table(client)}/events", headers={"Accept": SSE, "Last-Event-ID": header})
    assert response.status_code == 400 and response.mimetype == "application/json"
    assert response.json["errors"] == {field: ["Last-Event-ID is the id of the last message received (a version): "
                                                "a whole number."]}
    assert held_streams(client.service.hub) == 0


def test_an_unknown_table_is_a_404_before_any_stream(make_client):
    client = make_client()
    response = client.get("/tables/00000000-0000-4000-8000-000000000000/events", headers={"Accept": SSE})
    assert response.status_code == 404 and response.mimetype == "application/json"
    assert held_streams(client.service.hub) == 0


def test_without_text_event_stream_in_accept_the_events_are_a_page_as_before(make_client):
    client = make_client()
    table_id = new_table(client)
    for accept in ("*/*", "text/*", "application/json"):
        response = client.get(f"/tables/{table_id}/events", headers={"Accept": accept})
        assert response.mimetype == "application/json" and response.json["events"][0]["version"] == 1


def test_a_read_that_fails_ends_the_stream_cleanly_and_the_log_says_why(make_client, opened, monkeypatch, capsys):
    client = make_client()
    table_id = new_table(client)
    stream = opened(client, f"/tables/{table_id}/events", headers={"X-Request-Id": "failing-stream"})
    stream.until(lambda m: len(m) == 1)

    def down(*args: Any, **kwargs: Any) -> Any:
        raise StoreUnavailable("the database is down")

    monkeypatch.setattr(client.service, "read_events", down)
    # events the hub keeps as recorded are sent without a read: these it does not keep, so the stream reads
    monkeypatch.setattr(client.service.hub, "kept", lambda *args: None)
    play(client, table_id, 1)
    with pytest.raises(StopIteration):
        while True:
            stream.read()

    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if "failing-stream" in line]
    assert [line["message"] for line in lines if line["logger"] == "zametano.streams"] == [
        "a live stream ended early: the event store is not reachable (the database is down)"]
    assert held_streams(client.service.hub) == 0


# --- limits ---------------------------------------------------------------------------------------------


def test_beyond_max_streams_a_worker_answers_503_with_retry_after_and_commands_go_on(make_client, opened):
    client = make_client(ZAMETANO_MAX_STREAMS="1")
    table_id = new_table(client)
    first = opened(client, f"/tables/{table_id}/events")
    first.read()
    refused_before = sample("zametano_streams_refused_total", reason="full")

    refused = client.get(f"/tables/{table_id}/events", headers={"Accept": SSE})
    heads = client.get("/events", headers={"Accept": SSE})
    play(client, table_id, 1)  # a command is served while the worker holds all its streams

    for response in (refused, heads):
        assert response.status_code == 503 and response.headers["Retry-After"] == "5"
        assert response.json["retry_after"] == 5
        assert response.json["message"] == ("This server process holds as many live streams as it may (1, "
                                            "ZAMETANO_MAX_STREAMS); try again in 5 seconds.")
    assert sample("zametano_streams_refused_total", reason="full") == refused_before + 2
    assert "zametano_streams_open" in client.get("/metrics").get_data(as_text=True)
    first.close()
    again = opened(client, f"/tables/{table_id}/events")
    assert again.response.status_code == 200


@pytest.mark.parametrize("path", ["/tables/{table_id}/events", "/events"])
def test_a_head_on_a_stream_is_answered_as_its_get_and_holds_no_place_even_before_its_answer_is_closed(
        make_client, opened, path):
    client = make_client(ZAMETANO_MAX_STREAMS="1")
    table_id = new_table(client)
    hub = client.service.hub
    answer = client.head(path.format(table_id=table_id), headers={"Accept": SSE}, buffered=False)
    # gunicorn closes an answer after its last byte has left: a client may already open its stream by then.
    assert (answer.status_code, answer.mimetype, held_streams(hub)) == (200, SSE, 0)
    assert "Content-Length" not in answer.headers  # a stream's headers, as its GET's: no promise of an empty body
    first = opened(client, f"/tables/{table_id}/events")
    first.read()
    refused = client.head(path.format(table_id=table_id), headers={"Accept": SSE}, buffered=False)
    assert (refused.status_code, refused.headers["Retry-After"], held_streams(hub)) == (503, "5", 1)
    answer.close()
    refused.close()
    assert held_streams(hub) == 1


def test_under_gunicorns_sync_workers_a_stream_is_refused_saying_threaded_workers_are_needed(make_client, opened):
    client = make_client()
    table_id = new_table(client)
    sync_worker = {"gunicorn.socket": object(), "wsgi.multithread": False}

    for path in (f"/tables/{table_id}/events", "/events"):
        response = client.get(path, headers={"Accept": SSE}, environ_overrides=sync_worker)
        assert response.status_code == 503 and "Retry-After" not in response.headers
        assert "Live streams need threaded workers" in response.json["message"]
        assert "WEB_THREADS of 2 or more" in response.json["message"]
    threaded = opened(client, f"/tables/{table_id}/events", environ_overrides={**sync_worker, "wsgi.multithread": True})
    assert threaded.response.status_code == 200


def test_with_no_streams_allowed_every_stream_is_a_503_without_retry_after(make_client):
    client = make_client(ZAMETANO_MAX_STREAMS="0")
    response = client.get(f"/tables/{new_table(client)}/events", headers={"Accept": SSE})
    assert response.status_code == 503 and "Retry-After" not in response.headers
    assert response.json["message"] == "This server opens no live streams (ZAMETANO_MAX_STREAMS=0)."


# --- every table's head ------------------------------------------------------------------------------------


@pytest.mark.parametrize("accept", [None, "*/*", "application/json", "text/*"])
def test_the_heads_stream_answers_only_a_client_that_asks_for_text_event_stream(make_client, accept):
    client = make_client()
    response = client.get("/events", headers={"Accept": accept} if accept else {})
    assert response.status_code == 406
    assert response.json["message"] == "GET /events is a live stream of every table's head: send Accept: text/event-stream."


def test_the_heads_stream_resumes_from_a_position_then_follows_each_table_live(make_client, opened):
    client = make_client(follow=True)
    first, second = new_table(client, commands=2), new_table(client)
    stream = opened(client, "/events", headers={"Last-Event-ID": "0"})

    found = stream.until(lambda m: {h.json["table_id"] for h in m} == {first, second})
    assert all(m.event == "head" for m in found)
    head = client.get(f"/tables/{first}/head").json
    assert found[0].json == {"table_id": first, "game": "chemin-de-fer", "version": head["version"],
                             "digest": head["digest"], "timestamp": head["timestamp"],
                             "opened_at": the_log(client, first)[0]["timestamp"], "players": PLAYERS}

    third = new_table(client)

    found = stream.until(lambda m: m[-1].json["table_id"] == third)
    assert found[-1].json["version"] == 1
    positions = [int(m.id) for m in found]  # type: ignore[arg-type]
    assert positions == sorted(set(positions))


# --- auth and logs ---------------------------------------------------------------------------------------------


def test_an_auditor_may_open_streams_and_a_client_without_a_token_may_not(make_client, opened):
    client = make_client(ZAMETANO_TOKENS=f"operator:{OP},auditor:{AU}")
    table_id = new_table(client, headers={"Authorization": f"Bearer {OP}"})
    for path in (f"/tables/{table_id}/events", "/events"):
        assert client.get(path, headers={"Accept": SSE}).status_code == 401
        assert opened(client, path, headers={"Authorization": f"Bearer {AU}"}).response.status_code == 200


def test_one_credential_holds_at_most_a_quarter_of_a_workers_streams_and_others_still_open_theirs(make_client, opened):
    client = make_client(ZAMETANO_TOKENS=f"operator:{OP},auditor:{AU},auditor@second:{AU2}", ZAMETANO_MAX_STREAMS="8")
    table_id = new_table(client, headers={"Authorization": f"Bearer {OP}"})
    auditor = {"Authorization": f"Bearer {AU}"}
    held = [opened(client, f"/tables/{table_id}/events", headers=auditor) for _ in range(2)]
    refused_before = sample("zametano_streams_refused_total", reason="credential")

    for path in (f"/tables/{table_id}/events", "/events"):
        refused = client.get(path, headers={"Accept": SSE, **auditor})
        assert refused.status_code == 503 and refused.headers["Retry-After"] == "5", refused.json
        assert "as many live streams as one credential may in this server process (2" in refused.json["message"]
    assert sample("zametano_streams_refused_total", reason="credential") == refused_before + 2
    for token in (AU2, OP):  # another credential, of the same role or another, still has its share
        assert opened(client, "/events", headers={"Authorization": f"Bearer {token}"}).response.status_code == 200
    held[0].close()  # a stream closed gives its place back
    assert opened(client, "/events", headers=auditor).response.status_code == 200


def test_a_stream_is_one_request_logged_when_it_ends_with_nothing_of_its_events(make_client, opened, capsys):
    client = make_client()
    table_id = new_table(client, commands=3)
    capsys.readouterr()
    stream = opened(client, f"/tables/{table_id}/events", headers={"X-Request-Id": "the-stream"})
    stream.until(lambda m: len(m) >= 3)
    time.sleep(0.2)
    assert "the-stream" not in capsys.readouterr().err  # open: no line yet

    stream.close()

    err = capsys.readouterr().err
    lines = [json.loads(line) for line in err.splitlines() if "the-stream" in line]
    assert len(lines) == 1
    assert lines[0]["message"].startswith("GET /tables/{table_id}/events 200 ")
    assert lines[0]["duration_ms"] >= 200 and lines[0]["table_id"] == table_id
    for event in the_log(client, table_id):
        assert event["digest"] not in err
