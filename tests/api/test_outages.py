"""A store that is down, locked or busy is a 503 with Retry-After and the one JSON error body; a store that
is broken (a missing table) stays a 500. Never an HTML page, never a hang."""

from __future__ import annotations

import sqlite3
import uuid

from api.app import create_app
from service.application import TablesService
from service.config import load
from tests.e2e.servers import free_port
from tests.helpers import Seeds, StepClock


def assert_unavailable(response):
    assert response.status_code == 503, response.get_data(as_text=True)
    assert response.json["code"] == 503 and response.json["status"] == "Service Unavailable"
    assert int(response.headers["Retry-After"]) >= 1
    assert response.json["retry_after"] == int(response.headers["Retry-After"])


def test_a_command_on_a_locked_sqlite_store_is_a_503_with_retry_after_and_appends_nothing(tmp_path):
    path = tmp_path / "locked.sqlite"
    settings = load({"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(path), "SQLITE_LOCK_TIMEOUT": "1"})
    service = TablesService(settings, clock=StepClock(), new_seed=Seeds())
    client = create_app(settings, service=service).test_client()
    try:
        table_id = client.post("/tables", json={"game": "chemin-de-fer", "players": ["anna", "boris"]}).json["table_id"]
        other = sqlite3.connect(path, isolation_level=None)
        try:
            other.execute("BEGIN EXCLUSIVE")  # another process writing, and taking its time
            assert_unavailable(client.post(f"/tables/{table_id}/commands", json={"command": "draw_seats", "player": "anna"}))
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert client.get(f"/tables/{table_id}").json["version"] == 1
        assert client.post(f"/tables/{table_id}/commands", json={"command": "draw_seats", "player": "anna"}).status_code == 200
    finally:
        service.close()


def test_a_worker_that_starts_while_postgresql_is_down_boots_serves_health_and_answers_503():
    # nothing listens on this port: the database is down when the app is built, as when gunicorn
    # replaces a worker during an outage (it used to fail to boot, which stops the whole server)
    env = {"PERSISTENCE_MODULE": "eventsourcing.postgres", "POSTGRES_HOST": "127.0.0.1", "POSTGRES_PORT": str(free_port()),
           "POSTGRES_USER": "postgres", "POSTGRES_DBNAME": "nowhere"}
    app = create_app(load(env))
    client = app.test_client()
    try:
        assert client.get("/healthz").json == {"status": "ok"}
        ready = client.get("/readyz")
        assert_unavailable(ready)
        assert "not reachable" in ready.json["message"]
        assert_unavailable(client.get(f"/tables/{uuid.uuid4()}"))
        assert_unavailable(client.post("/tables", json={"game": "chemin-de-fer", "players": ["anna", "boris"]}))
    finally:
        app.extensions["zametano"].close()


def test_a_broken_store_is_a_500_in_the_json_error_body_not_a_503(tmp_path):
    path = tmp_path / "broken.sqlite"
    settings = load({"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(path), "AGGREGATE_CACHE_MAXSIZE": ""})
    service = TablesService(settings, clock=StepClock(), new_seed=Seeds())
    client = create_app(settings, service=service).test_client()
    try:
        table_id = client.post("/tables", json={"game": "chemin-de-fer", "players": ["anna", "boris"]}).json["table_id"]
        with sqlite3.connect(path) as db:
            db.execute("DROP TABLE stored_events")
        response = client.get(f"/tables/{table_id}")
        assert response.status_code == 500 and response.json["code"] == 500
        assert "Retry-After" not in response.headers
    finally:
        service.close()
