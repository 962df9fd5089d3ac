"""What a worker tells the group committer of its other requests (api/edge.py ``InFlight``): whether a command
may come soon, so that a batch about to be written waits for it (service/groupcommit.py)."""

from __future__ import annotations

import socket
import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest

from api import edge
from api.edge import InFlight


def in_thread(work: Any) -> None:
    thread = threading.Thread(target=work)
    thread.start()
    thread.join()


def conn(sock: Any = None) -> Any:
    return SimpleNamespace(sock=sock)


def test_a_request_taken_is_expected_until_it_turns_out_no_command():
    flight = InFlight()
    flight.taken()  # the worker hands a connection to a thread
    assert flight.expected()

    def a_page() -> None:
        flight.own(conn())
        flight.arrived()  # a GET: no command
        flight.arrived()  # said twice: counted once
    in_thread(a_page)

    assert not flight.expected()


def test_a_command_is_expected_until_handed_over_then_its_connection_for_a_moment(monkeypatch):
    flight = InFlight()
    now = [100.0]
    monkeypatch.setattr(edge.time, "monotonic", lambda: now[0])
    steps: dict[str, threading.Event] = {k: threading.Event() for k in ("handed", "resume", "resumed")}
    flight.taken()

    def a_command() -> None:
        flight.own(conn())
        flight.command()
        flight.arrived()  # handed to the committer: the batch it is in no longer waits for it
        steps["handed"].set()
        steps["resume"].wait(10)
        flight.resumed()  # written: its client will likely send the next command once answered
        steps["resumed"].set()
    thread = threading.Thread(target=a_command)
    thread.start()
    assert steps["handed"].wait(10)
    assert not flight.expected()
    steps["resume"].set()
    assert steps["resumed"].wait(10)
    thread.join()

    assert flight.expected()  # its connection, for RECENT seconds
    now[0] += edge.RECENT * 1.01
    assert not flight.expected()


def test_a_threads_own_connection_never_counts_for_itself(monkeypatch):
    monkeypatch.setattr(edge.time, "monotonic", lambda: 100.0)  # within RECENT throughout, however slow the machine
    flight = InFlight()
    mine = conn()
    seen: list[bool] = []

    def command_after_command() -> None:
        flight.own(mine)
        flight.command()
        flight.answered()  # answered: its connection counts for others
        flight.own(mine)  # the next request on the same connection, taken by this thread again
        flight.arrived()  # handed over: now it leads a batch, and asks
        seen.append(flight.expected())
    flight.taken()
    flight.taken()
    in_thread(command_after_command)
    assert seen == [False]
    assert flight.expected()  # for anyone else it does


def test_an_idle_connection_counts_once_a_request_waits_on_it():
    flight = InFlight()
    ours, client = socket.socketpair()
    try:
        flight.idle = lambda: [conn(ours)]
        assert not flight.expected()
        client.sendall(b"POST /tables/t/commands HTTP/1.1\r\n")
        deadline = time.monotonic() + 10
        while not flight.expected() and time.monotonic() < deadline:
            time.sleep(0.001)
        assert flight.expected()
    finally:
        ours.close()
        client.close()


@pytest.mark.parametrize("method, path, command", [
    ("POST", "/tables/t1/commands", True),
    ("GET", "/tables/t1", False),
    ("POST", "/tables", False),
    ("GET", "/tables/t1/commands", False),
])
def test_the_worker_tells_a_command_from_any_other_request(monkeypatch, method, path, command):
    flight = InFlight()
    monkeypatch.setattr(edge, "IN_FLIGHT", flight)
    monkeypatch.setattr(edge.DEADLINES, "timeout", 10.0)
    app = edge.deadlined(lambda environ, start_response: [b""])
    outcome: list[bool] = []

    def request() -> None:
        flight.own(conn())
        with socket.socket() as sock:
            app({"REQUEST_METHOD": method, "PATH_INFO": path, "gunicorn.socket": sock}, None)
        outcome.append(flight.expected())  # expected still: a command not yet handed over
        flight.answered()
    flight.taken()
    in_thread(request)

    assert outcome == [command]
