"""Starting and stopping real server processes for the end-to-end tests.

Every server runs in a process group of its own (its gunicorn master and workers), and `running_server`
kills that whole group whatever happens: a failed start, a failing test, a master that already died.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parents[2]
# Generous: a loaded shared machine may take long to import and fork; a server that dies fails at once.
READY_TIMEOUT = 60.0


class ServerNotReady(Exception):
    def __init__(self, message: str, pid: int) -> None:
        super().__init__(message)
        self.pid = pid  # also its process group's id


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server(str):
    """The base URL, with the store's settings, the server's log and its process beside it."""

    env: dict[str, str]
    log: Path
    process: subprocess.Popen[bytes]
    port: int

    def __new__(cls, base: str, env: dict[str, str], log: Path, process: Any = None, port: int = 0) -> Server:
        obj = super().__new__(cls, base)
        obj.env, obj.log, obj.process, obj.port = env, log, process, port
        return obj


def server_env(env: dict[str, str]) -> dict[str, str]:
    """This process's environment without any store settings, tokens or metrics folder, plus ``env``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("POSTGRES_", "SQLITE_", "PERSISTENCE_"))}
    clean.pop("ZAMETANO_TOKENS", None)
    clean.pop("ZAMETANO_SIGNING_KEY_FILE", None)
    for name in ("ZAMETANO_PLAYER_KEY_FILE", "ZAMETANO_PLAYER_AUDIENCE", "ZAMETANO_PLAYER_ISSUER", "ZAMETANO_PLAYER_JWKS_FILE"):
        clean.pop(name, None)
    clean.pop("PROMETHEUS_MULTIPROC_DIR", None)  # each server its own metrics folder: a shared one is emptied at start
    return {**clean, **env}


def api_server(port: int, workers: int = 2) -> list[str]:
    return [sys.executable, "-m", "api.server", "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)]


def wait_ready(
    base: str,
    process: subprocess.Popen[bytes],
    log: Path,
    timeout: float = READY_TIMEOUT,
    get: Callable[..., Any] = requests.get,
) -> None:
    """Until /readyz answers 200. Any failure to ask (refused, reset, timed out) only means not yet."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if get(base + "/readyz", timeout=2).status_code == 200:
                return
        except (requests.RequestException, OSError):
            pass
        if process.poll() is not None:
            raise ServerNotReady(f"the server exited with {process.returncode}:\n{_read(log)}", process.pid)
        if time.monotonic() > deadline:
            raise ServerNotReady(f"the server was not ready within {timeout:g} s:\n{_read(log)}", process.pid)
        time.sleep(0.1)


def stop(process: subprocess.Popen[bytes], grace: float = 15) -> None:
    """Stops the process and every process of its group (its workers, even when the master is gone):
    SIGTERM, then SIGKILL for whatever is left after ``grace`` seconds."""
    signal_group(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        signal_group(process.pid, signal.SIGKILL)
        process.wait()
    if not wait_group_gone(process.pid, grace):
        signal_group(process.pid, signal.SIGKILL)
        wait_group_gone(process.pid, grace)


def signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass  # nobody left in the group


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_group_gone(pgid: int, timeout: float) -> bool:
    """True once no process of the group is left (within ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while group_alive(pgid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _read(log: Path) -> str:
    try:
        return log.read_text(errors="replace")
    except OSError:
        return ""


@contextmanager
def running_server(
    env: dict[str, str],
    log: Path,
    *,
    port: int | None = None,
    command: list[str] | None = None,
    ready_timeout: float = READY_TIMEOUT,
) -> Iterator[Server]:
    """A server process (by default api.server with two workers) on ``env``'s store, ready, and stopped
    with its whole process group when the block ends, however it ends."""
    port = port or free_port()
    base = f"http://127.0.0.1:{port}"
    # The metrics folder beside the log: a server killed outright (SIGKILL) cannot remove a temporary one.
    env = {"PROMETHEUS_MULTIPROC_DIR": str(log.parent / f"{log.stem}.metrics"), **env}
    with open(log, "ab") as out:
        process = subprocess.Popen(
            command or api_server(port), cwd=ROOT, env=server_env(env), stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            wait_ready(base, process, log, ready_timeout)
            yield Server(base, env, log, process, port)
        finally:
            stop(process)
