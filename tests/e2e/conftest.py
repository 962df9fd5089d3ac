"""Start the real server process (gunicorn, two workers) on SQLite and on PostgreSQL: threaded workers with
group commit, as the service runs by default, and on PostgreSQL also gunicorn's sync workers (WEB_THREADS=1),
so every end-to-end test holds on both worker models."""

from __future__ import annotations

import pytest

from tests.e2e.servers import ROOT, Server, free_port, running_server

__all__ = ["ROOT", "Server", "free_port", "server"]


@pytest.fixture(params=["sqlite", "postgres", "postgres-sync-workers"])
def server(request, tmp_path):
    """Stopped with its workers after the test, whatever happened (servers.running_server)."""
    if request.param == "sqlite":
        env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "e2e.sqlite")}
    else:
        env = dict(request.getfixturevalue("postgres_env"))
    if request.param == "postgres-sync-workers":
        env["WEB_THREADS"] = "1"
    env["ZAMETANO_DATA_DIR"] = str(tmp_path / "data")  # the signing key and keyring
    with running_server(env, tmp_path / "server.log") as running:
        yield running
