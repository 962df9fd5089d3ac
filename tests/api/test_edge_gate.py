"""The worker's gate (api/edge.py): a request takes one of the worker's places once it is read and gives it
back however it ends; /healthz never waits for one."""

from __future__ import annotations

import threading

import pytest

from api.app import create_app
from api.edge import DEADLINES
from service.application import TablesService
from service.config import load


@pytest.fixture
def gated(tmp_path, monkeypatch):
    places = threading.BoundedSemaphore(1)
    monkeypatch.setattr(DEADLINES, "slots", places)
    settings = load({"PERSISTENCE_MODULE": "eventsourcing.popo", "ZAMETANO_DATA_DIR": str(tmp_path)})
    service = TablesService(settings)
    yield create_app(settings, service=service).test_client(), places
    service.close()


def test_healthz_is_answered_while_every_place_is_taken(gated):
    client, places = gated
    places.acquire()  # every place held (by requests waiting on the event store, say)
    try:
        assert client.get("/healthz").status_code == 200  # a gated /healthz would wait here for ever
    finally:
        places.release()


def test_every_request_gives_its_place_back_answered_or_refused(gated):
    client, places = gated
    assert client.post("/tables", json={"game": "chemin-de-fer", "players": ["anna", "boris"]}).status_code == 201
    assert client.post("/tables", json={"game": "no-such-game"}).status_code == 422
    assert client.get("/tables/nope").status_code == 404
    assert places.acquire(blocking=False)  # the one place is free again
    places.release()
