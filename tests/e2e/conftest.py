"""Start the real server process (gunicorn, two workers) on SQLite and on PostgreSQL."""

from __future__ import annotations

import pytest

from tests.e2e.servers import ROOT, Server, free_port, running_server

__all__ = ["ROOT", "Server", "free_port", "server"]


@pytest.fixture(params=["sqlite", "postgres"])
def server(request, tmp_path):
    """Stopped with its workers after the test, whatever happened (servers.running_server)."""
    if request.param == "sqlite":
        env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "e2e.sqlite")}
    else:
        env = dict(request.getfixturevalue("postgres_env"))
    env["ZAMETANO_DATA_DIR"] = str(tmp_path / "data")  # the signing key and keyring
    with running_server(env, tmp_path / "server.log") as running:
        yield running
