"""Start the real server process (gunicorn, two workers) on SQLite and on PostgreSQL: threaded workers with
group commit, as the service runs by default, and on PostgreSQL also gunicorn's sync workers (WEB_THREADS=1),
so every end-to-end test holds on both worker models."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.servers import ROOT, Server, free_port, running_server

__all__ = ["KINDS", "ROOT", "Server", "free_port", "server", "server_env"]


KINDS = ["sqlite", "postgres", "postgres-sync-workers"]


def server_env(request: pytest.FixtureRequest, tmp_path: Path, **extra: str) -> dict[str, str]:
    """The settings of a server of the kind ``request.param`` names (one of KINDS), its store (SQLite) and
    keys in ``tmp_path``, with ``extra`` settings."""
    if request.param == "sqlite":
        env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "e2e.sqlite")}
    else:
        env = dict(request.getfixturevalue("postgres_env"))
    if request.param == "postgres-sync-workers":
        env["WEB_THREADS"] = "1"
    env["ZAMETANO_DATA_DIR"] = str(tmp_path / "data")  # the signing key and keyring
    return {**env, **extra}


@pytest.fixture(params=KINDS)
def server(request, tmp_path):
    """Stopped with its workers after the test, whatever happened (servers.running_server)."""
    with running_server(server_env(request, tmp_path), tmp_path / "server.log") as running:
        yield running
