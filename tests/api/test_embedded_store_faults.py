"""The embedded (SQLite) store's file faults, in one process: a full disk, a file gone, a snapshot that cannot
be written after its command committed. Each is a 503 with Retry-After that records nothing (or, for the
snapshot, the command's own answer), /readyz says not ready while it lasts, and the service serves again
within a look at the file once it ends. tests/e2e/test_store_faults.py makes the real faults under load."""

from __future__ import annotations

import sqlite3
import time

import pytest
from eventsourcing.persistence import OperationalError

from api.app import create_app
from service import embedded
from service.application import TablesService
from service.config import load
from service.errors import StoreUnavailable
from service.store import as_outage
from tests.helpers import Seeds, StepClock

DRAW = {"command": "draw_seats", "player": "anna"}


@pytest.fixture
def served(tmp_path):
    path = tmp_path / "store.sqlite"
    settings = load({"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(path),
                     "ZAMETANO_DATA_DIR": str(tmp_path / "data")})
    service = TablesService(settings, clock=StepClock(), new_seed=Seeds())
    client = create_app(settings, service=service).test_client()
    table_id = client.post("/tables", json={"game": "chemin-de-fer", "players": ["anna", "boris"]}).json["table_id"]
    try:
        yield client, service, path, table_id
    finally:
        service.close()


def a_look_later() -> None:
    time.sleep(embedded.GATE_EVERY + 0.02)


def assert_outage(response, *, recorded_nothing: bool) -> None:
    assert response.status_code == 503, response.get_data(as_text=True)
    assert response.json["code"] == 503 and response.headers["Retry-After"] == "1"
    if recorded_nothing:
        assert "nothing was recorded" in response.json["message"]


@pytest.mark.parametrize("message", ["database or disk is full", "attempt to write a readonly database",
                                     "disk I/O error", "unable to open database file"])
def test_sqlites_file_faults_raw_or_wrapped_are_outages_that_ask_for_a_retry_within_a_second(message):
    raw = sqlite3.OperationalError(message)
    try:
        raise OperationalError(message) from raw
    except OperationalError as wrapped:
        for exc in (raw, wrapped):
            outage = as_outage(exc)
            assert isinstance(outage, StoreUnavailable) and outage.retry_after == 1


def test_with_the_disk_full_a_command_is_a_503_that_recorded_nothing_and_readyz_is_not_ready_until_it_frees(
        served, monkeypatch):
    client, _, _, table_id = served
    monkeypatch.setattr(embedded, "MIN_FREE_BYTES", 1 << 62)  # no disk has this much free: it is full
    a_look_later()
    assert_outage(client.post(f"/tables/{table_id}/commands", json=DRAW), recorded_nothing=True)
    assert_outage(client.get("/readyz"), recorded_nothing=False)
    assert client.get(f"/tables/{table_id}").json["version"] == 1  # reads go on
    monkeypatch.setattr(embedded, "MIN_FREE_BYTES", 1 << 20)
    a_look_later()
    assert client.get("/readyz").status_code == 200
    assert client.post(f"/tables/{table_id}/commands", json=DRAW).json["version"] > 1


def test_with_the_file_gone_reads_and_writes_are_503s_no_empty_store_is_made_and_its_return_serves_again(served):
    client, _, path, table_id = served
    away = path.with_suffix(".away")
    path.rename(away)
    a_look_later()
    assert_outage(client.post(f"/tables/{table_id}/commands", json=DRAW), recorded_nothing=False)
    assert_outage(client.get(f"/tables/{table_id}"), recorded_nothing=False)
    assert_outage(client.get("/readyz"), recorded_nothing=False)
    assert not path.exists()
    away.rename(path)
    a_look_later()
    assert client.get(f"/tables/{table_id}").json["version"] == 1  # nothing was recorded meanwhile
    assert client.post(f"/tables/{table_id}/commands", json=DRAW).json["version"] > 1


def test_a_connection_that_met_a_fault_of_the_file_is_closed_when_given_back(served):
    _, service, _, _ = served
    pool = service.factory.datastore.pool
    conn = pool.get_connection(is_writer=False)
    with pytest.raises(OperationalError), conn.transaction(commit=False) as cursor:
        cursor.execute("SELECT 1")
        raise sqlite3.OperationalError("database or disk is full")
    pool.put_connection(conn)
    assert conn.closed


def test_a_snapshot_that_cannot_be_written_after_its_command_committed_leaves_the_command_answered(served, monkeypatch):
    client, service, _, table_id = served
    service.snapshotting_intervals = dict.fromkeys(service.snapshotting_intervals, 1)  # a snapshot at every save

    def full(*args, **kwargs):
        raise OperationalError("database or disk is full") from sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(service.snapshots, "put", full)
    answer = client.post(f"/tables/{table_id}/commands", json=DRAW)
    assert answer.status_code == 200, answer.json
    assert client.get(f"/tables/{table_id}").json["version"] == answer.json["version"]


def test_a_save_that_committed_then_met_a_fault_of_the_file_is_answered_with_its_own_response_once(
        served, monkeypatch):
    client, service, _, table_id = served
    real, failed = service.save, []

    def save(*aggregates):
        if not failed:
            failed.append(1)
            real(*aggregates)  # committed; then the disk fails, as it can between COMMIT and its answer
            raise OperationalError("disk I/O error") from sqlite3.OperationalError("disk I/O error")
        return real(*aggregates)

    monkeypatch.setattr(service, "save", save)
    answer = client.post(f"/tables/{table_id}/commands", json=DRAW)
    assert answer.status_code == 200 and failed, answer.json
    events = client.get(f"/tables/{table_id}/events").json["events"]
    assert [e["version"] for e in events] == list(range(1, answer.json["version"] + 1))  # recorded once
