from __future__ import annotations

import pytest

from api.app import create_app
from service.application import TablesService
from service.config import load
from tests.helpers import Seeds, StepClock


@pytest.fixture
def settings(tmp_path):
    return load({
        "PERSISTENCE_MODULE": "eventsourcing.sqlite",
        "SQLITE_DBNAME": str(tmp_path / "api.sqlite"),
        "ZAMETANO_DATA_DIR": str(tmp_path),
    })


@pytest.fixture
def app(settings):
    service = TablesService(settings, clock=StepClock(), new_seed=Seeds())
    app = create_app(settings, service=service)
    yield app
    service.close()


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def make_client(tmp_path):
    """Clients of apps built with this test's settings (``make(**env)``), all on one SQLite store of the test;
    every service made is closed after it."""
    made = []

    def make(**env):
        settings = load({
            "PERSISTENCE_MODULE": "eventsourcing.sqlite",
            "SQLITE_DBNAME": str(tmp_path / "made.sqlite"),
            "ZAMETANO_DATA_DIR": str(tmp_path),
            **env,
        })
        service = TablesService(settings, clock=StepClock(), new_seed=Seeds())
        made.append(service)
        return create_app(settings, service=service).test_client()

    yield make
    for service in made:
        service.close()


@pytest.fixture
def table(client):
    response = client.post("/tables", json={"game": "chemin-de-fer", "players": ["anna", "boris", "vera"]})
    assert response.status_code == 201
    return response.json


class Play:
    """Drives a table over the test client; returns responses."""

    def __init__(self, client, table_id):
        self.client, self.table_id = client, table_id

    def state(self):
        return self.client.get(f"/tables/{self.table_id}").json

    def command(self, command, player, headers=None, **fields):
        return self.client.post(
            f"/tables/{self.table_id}/commands", json={"command": command, "player": player, **fields}, headers=headers or {}
        )

    def to_stakes(self, bank=100):
        self.command("draw_seats", "anna")
        s = self.state()
        self.command("shuffle", s["banker"])
        s = self.state()
        self.command("cut", s["expects"][0]["player"], position=40)
        return self.command("post_bank", s["banker"], amount=bank).json["state"]


@pytest.fixture
def play(client, table):
    return Play(client, table["table_id"])
