"""Players' tokens with the real server (two gunicorn workers, SQLite and PostgreSQL): a token minted by one
worker is accepted by the other, the key is made once on the first start and kept by the next, and the log
names each request's principal, never a token."""

from __future__ import annotations

import pytest
import requests

from tests.e2e.servers import running_server

pytestmark = pytest.mark.e2e
OPERATOR = {"Authorization": "Bearer op-secret"}


@pytest.fixture(params=["sqlite", "postgres"])
def store_env(request, tmp_path):
    if request.param == "sqlite":
        env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "e2e.sqlite")}
    else:
        env = dict(request.getfixturevalue("postgres_env"))
    return {**env, "ZAMETANO_DATA_DIR": str(tmp_path / "data"), "ZAMETANO_TOKENS": "operator@cage:op-secret"}


def test_a_minted_token_names_its_player_at_every_worker_and_across_a_restart(store_env, tmp_path):
    with running_server(store_env, tmp_path / "first.log") as server:
        minted = requests.post(server + "/players/anna/tokens", json={"ttl_seconds": 600}, headers=OPERATOR, timeout=10)
        assert minted.status_code == 201, minted.text
        token = minted.json()["token"]
        for _ in range(6):  # a new connection each time: either worker may answer
            me = requests.get(server + "/me", headers={"Authorization": f"Bearer {token}"}, timeout=10)
            assert me.json()["player"] == "anna"
        refused = requests.get(server + "/tables", headers={"Authorization": f"Bearer {token}"}, timeout=10)
        assert refused.status_code == 403
    log = (tmp_path / "first.log").read_text()
    assert "players' tokens signed with key" in log
    assert '"principal": "anna"' in log and '"principal": "cage"' in log
    assert token not in log and token.split(".")[2] not in log and "op-secret" not in log
    with running_server(store_env, tmp_path / "second.log") as server:
        me = requests.get(server + "/me", headers={"Authorization": f"Bearer {token}"}, timeout=10)
        assert me.status_code == 200 and me.json()["name"] == "anna"
