"""scripts/bench-streams reads its streams' messages as the bytes come, split anywhere, chunked framing and all,
and notes each version's first arrival once."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.helpers import load_script

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


@pytest.fixture
def bench(monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.syspath_prepend(str(SCRIPTS))  # it imports _bench and bench_http beside it
    return load_script("bench_streams.py", "zametano_bench_streams")


def test_each_message_id_is_noted_once_when_its_line_is_whole_however_the_bytes_are_split(bench):
    body = (b"d\r\n: heartbeat\n\n\r\n"
            b"40\r\nid: 21\nevent: table-event\ndata: {\"version\":21,\"type\":\"x\",\"note\":\"id: 99\"}\n\n\r\n"
            b"40\r\nid: 22\nevent: table-event\ndata: {}\n\n\r\n"
            b"40\r\nid: 22\nevent: table-event\ndata: {}\n\n\r\n")
    with socket.socket() as sock:
        stream = bench.Stream("t", sock)
        for start in range(0, len(body), 7):  # pieces of 7 bytes: lines cut anywhere
            bench.Streams._lines(stream, body[start:start + 7])
    assert sorted(stream.arrivals) == [21, 22]
    assert stream.arrivals[21] <= stream.arrivals[22]


def test_medians_are_taken_per_figure_over_the_rounds_that_measured_it(bench):
    runs = {"0 streams": [{"rate": 10.0, "p50": 1.0, "p95": 2.0, "delivery p50": None, "delivery p95": None,
                           "refused": 0.0},
                          {"rate": 30.0, "p50": 3.0, "p95": 4.0, "delivery p50": None, "delivery p95": None,
                           "refused": 0.0}]}
    assert bench.medians(runs)["0 streams"] == {"rate": 20.0, "p50": 2.0, "p95": 3.0, "delivery p50": None,
                                                "delivery p95": None, "refused": 0.0}


def test_a_stream_is_asked_for_under_a_host_the_service_answers_without_tokens(bench):
    """Without tokens the service answers only requests naming a loopback Host (api/loopback.py, a 421 else)."""
    import threading

    from api.loopback import host_name
    from api.server import is_loopback

    heard: list[bytes] = []
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]

        def answer() -> None:
            conn, _ = server.accept()
            with conn:
                request = b""
                while b"\r\n\r\n" not in request:
                    request += conn.recv(4096)
                heard.append(request)
                conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")

        thread = threading.Thread(target=answer)
        thread.start()
        assert bench.open_stream(port, "t") is None  # a full worker: the benchmark connects again elsewhere
        thread.join()
    host = next(line for line in heard[0].decode().split("\r\n") if line.startswith("Host: "))[len("Host: "):]
    assert host == f"127.0.0.1:{port}" and is_loopback(host_name(host))
