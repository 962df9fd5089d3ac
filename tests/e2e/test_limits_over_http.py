"""The body limit on the real server (gunicorn): a huge declared body is refused before it is sent, and a
chunked body without Content-Length is refused once it reaches the limit; the worker stays well."""

from __future__ import annotations

import json
import socket
from urllib.parse import urlsplit

import pytest
import requests

LIMIT = 65536  # the default of ZAMETANO_MAX_BODY_BYTES


def exchange(base: str, head: str, chunks: list[bytes] = ()) -> tuple[int, dict]:  # type: ignore[assignment,type-arg]
    """Sends a request as raw bytes and reads the answer to the end: (status, JSON body)."""
    url = urlsplit(base)
    with socket.create_connection((url.hostname, url.port), timeout=30) as sock:
        sock.sendall(head.encode())
        for chunk in chunks:
            sock.sendall(chunk)
        answer = b""
        while data := sock.recv(65536):
            answer += data
    status_line, _, rest = answer.partition(b"\r\n")
    _, _, body = rest.partition(b"\r\n\r\n")
    return int(status_line.split()[1]), json.loads(body)


@pytest.mark.parametrize("server", ["sqlite"], indirect=True)
def test_a_body_declared_larger_than_the_limit_is_refused_before_it_is_sent(server):
    head = (
        "POST /tables HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {200 * 1024 * 1024}\r\nConnection: close\r\n\r\n"
    )
    status, body = exchange(server, head)  # not one byte of the 200 MB is sent: the answer cannot wait for it
    assert status == 413 and body["code"] == 413 and body["max_bytes"] == LIMIT, body
    assert f"at most {LIMIT} bytes" in body["message"]


@pytest.mark.parametrize("server", ["sqlite"], indirect=True)
def test_a_chunked_body_past_the_limit_is_refused_and_the_server_keeps_answering(server):
    head = (
        "POST /tables HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )
    piece = b" " * 8192
    chunks = [b"%x\r\n%s\r\n" % (len(piece), piece)] * 12 + [b"0\r\n\r\n"]  # 96 KiB, no Content-Length
    status, body = exchange(server, head, chunks)
    assert status == 413 and body["code"] == 413, body
    opened = requests.post(f"{server}/tables", json={"game": "chemin-de-fer", "players": ["anna", "boris"]}, timeout=30)
    assert opened.status_code == 201
    small = json.dumps({"game": "chemin-de-fer", "players": ["anna", "boris"]}).encode()
    status, body = exchange(server, head, [b"%x\r\n%s\r\n" % (len(small), small), b"0\r\n\r\n"])
    assert status == 201 and body["players"] == ["anna", "boris"]
