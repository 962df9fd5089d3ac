"""Slow and stalled clients held against a server, and what another client meanwhile waits for an answer.

Three kinds, in equal numbers: bodies dripped a byte at a time, headers stopped half way, and bodies announced
longer than what is sent. While they are held, ``measure`` times /healthz and a table's commands, each on a
connection of its own, as another client would send them.
"""

from __future__ import annotations

import random
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import requests

from tests.helpers import pick

KINDS = ("dripping body", "stalled headers", "short body")
DRIP_EVERY = 0.5  # seconds between two bytes of a dripping body
OPENING = {"game": "chemin-de-fer", "players": ["anna", "boris"]}


def opening(kind: str, host: str) -> bytes:
    """What a slow client of ``kind`` sends at once (the rest of a dripping body follows a byte at a time)."""
    if kind == "stalled headers":
        return f"POST /tables HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nX-Wait: ".encode()
    return (f"POST /tables HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: 100\r\n\r\n").encode() + (b"{" if kind == "dripping body" else b'{"game": "chemin-de')


@dataclass
class Held:
    """The slow clients' sockets, by kind; and what each was answered once it was let go (``answers``)."""

    sockets: dict[str, list[socket.socket]] = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)

    def answers(self, timeout: float) -> dict[str, list[bytes]]:
        """What each slow client reads back until the server closes its connection (b"" for none)."""
        found: dict[str, list[bytes]] = {}
        for kind, socks in self.sockets.items():
            for sock in socks:
                sock.settimeout(timeout)
                answer = b""
                try:
                    while data := sock.recv(65536):
                        answer += data
                except OSError:
                    pass  # reset once answered, or never answered: the caller looks at what came
                found.setdefault(kind, []).append(answer)
        return found


@contextmanager
def slow_clients(base: str, count: int) -> Iterator[Held]:
    """``count`` slow clients (a third of each kind) connected to ``base``, held until the block ends."""
    url = urlsplit(base)
    host = url.netloc
    held = Held()
    with ExitStack() as stack:
        for n in range(count):
            kind = KINDS[n % len(KINDS)]
            sock = stack.enter_context(socket.create_connection((url.hostname, url.port), timeout=10))
            sock.sendall(opening(kind, host))
            held.sockets.setdefault(kind, []).append(sock)
        dripper = threading.Thread(target=_drip, args=(held,), daemon=True)
        dripper.start()
        try:
            yield held
        finally:
            held.stop.set()
            dripper.join()


def _drip(held: Held) -> None:
    while not held.stop.wait(DRIP_EVERY):
        for sock in held.sockets.get("dripping body", []):
            try:
                sock.send(b" ")
            except OSError:
                pass  # cut by the server: what its deadline is for


@dataclass
class Latencies:
    healthz: list[float] = field(default_factory=list)
    commands: list[float] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)

    def worst(self) -> float:
        return max(self.healthz + self.commands)

    def describe(self) -> str:
        def ms(values: list[float]) -> str:
            ordered = sorted(values)
            return f"median {ordered[len(ordered) // 2] * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms"

        return f"/healthz ({len(self.healthz)}): {ms(self.healthz)}; commands ({len(self.commands)}): {ms(self.commands)}"


def open_table(base: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    answer = requests.post(f"{base}/tables", json=OPENING, headers=headers, timeout=30)
    assert answer.status_code == 201, answer.text
    return answer.json()


def measure(base: str, state: dict[str, Any], rounds: int, headers: dict[str, str] | None = None) -> Latencies:
    """``rounds`` times: /healthz, then one legal command on the table of ``state``, each on a new connection."""
    rng = random.Random(7)
    found = Latencies()
    table = state["table_id"]
    for _ in range(rounds):
        started = time.monotonic()
        health = requests.get(f"{base}/healthz", headers=headers, timeout=30)
        found.healthz.append(time.monotonic() - started)
        found.statuses.append(health.status_code)
        command, player, args = pick(state, rng)
        started = time.monotonic()
        answer = requests.post(f"{base}/tables/{table}/commands", headers=headers, timeout=30,
                               json={"command": command, "player": player, **args})
        found.commands.append(time.monotonic() - started)
        found.statuses.append(answer.status_code)
        if answer.status_code == 200:
            state = answer.json()["state"]
    return found
