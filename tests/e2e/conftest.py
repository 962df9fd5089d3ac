"""Start the real server process (gunicorn, two workers) on SQLite and on PostgreSQL."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server(str):
    """The base URL, with the store's settings and the server's log beside it."""

    def __new__(cls, base: str, env: dict[str, str], log: Path) -> "Server":
        obj = super().__new__(cls, base)
        obj.env, obj.log = env, log
        return obj


@pytest.fixture(params=["sqlite", "postgres"])
def server(request, tmp_path):
    if request.param == "sqlite":
        env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "e2e.sqlite")}
    else:
        env = dict(request.getfixturevalue("postgres_env"))
    env["ZAMETANO_DATA_DIR"] = str(tmp_path / "data")  # the signing key and keyring
    port = free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("POSTGRES_", "SQLITE_", "PERSISTENCE_"))}
    clean.pop("ZAMETANO_TOKENS", None)
    clean.pop("ZAMETANO_SIGNING_KEY_FILE", None)
    log = open(tmp_path / "server.log", "w")
    process = subprocess.Popen(
        [sys.executable, "-m", "api.server", "--host", "127.0.0.1", "--port", str(port), "--workers", "2"],
        cwd=ROOT, env={**clean, **env}, stdout=log, stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if requests.get(base + "/readyz", timeout=1).status_code == 200:
                break
        except (requests.ConnectionError, requests.Timeout):  # not listening yet, or a worker still booting
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            log.close()
            pytest.fail("server did not start:\n" + (tmp_path / "server.log").read_text())
        time.sleep(0.1)
    yield Server(base, env, tmp_path / "server.log")
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
    log.close()
