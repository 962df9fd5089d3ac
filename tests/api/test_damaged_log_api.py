"""A damaged log over HTTP: every endpoint answers (never a 500), the audits name the damage at its version,
and the table's own state is a 409 that says what is wrong and where to look."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from api.app import create_app
from service.application import TablesService
from service.config import load
from tests.helpers import Seeds, StepClock, pick
from tests.tampering import Rows

PLAYERS = ["anna", "boris", "vera"]


@pytest.fixture
def env(tmp_path):
    # A snapshot every 10 events, so that the last one is less than 20 events behind the head.
    return {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "api.sqlite"),
            "SNAPSHOT_INTERVAL": "10"}


@pytest.fixture
def played(env):
    """A table of 150 commands (a revealed shoe among them), played and indexed by one server process."""
    service = TablesService(load(env), clock=StepClock(), new_seed=Seeds())
    try:
        table_id = service.open_table("chemin-de-fer", PLAYERS, {"decks": 2})["table_id"]
        rng = random.Random(3)
        for _ in range(150):
            service.execute(table_id, *pick(service.current_state(table_id), rng))
        rounds = service.list_rounds(table_id, limit=1000)["rounds"]
        shoe = next(s for s in service.index.view.get_shoes(table_id) if s["deck"] == "shoe" and s["seed"])
        middle = rounds[len(rounds) // 2]["first_version"] + 2
        if middle % 10 in (0, 1):
            middle += 2
        yield {"table_id": table_id, "rows": Rows(env, table_id), "rounds": rounds, "shoe": shoe, "middle": middle,
               "service": service}
    finally:
        service.close()


@pytest.fixture
def client(env):
    """Another server process, started after the damage: nothing cached."""
    made = []

    def start():
        service = TablesService(load(env), clock=StepClock(), new_seed=Seeds())
        made.append(service)
        return create_app(load(env), service=service).test_client()

    yield start
    for service in made:
        service.close()


def cut_short(t):
    t["rows"].delete(t["rows"].versions()[-1] - 19)


def cut_short_and_snapshots_dropped(t):
    cut_short(t)
    t["rows"].drop_snapshots()


def row_deleted(t):
    t["rows"].delete(t["middle"], t["middle"])


def rows_exchanged(t):
    t["rows"].exchange(t["middle"], t["middle"] + 1)


def set_seed(t, version, seed="ab" * 32):
    state = t["rows"].state(version)
    state["seed"] = seed
    t["rows"].write(version, state)


def revealed_seed_changed(t):
    set_seed(t, t["shoe"]["revealed_version"])


def both_seeds_changed(t):
    set_seed(t, t["shoe"]["shuffled_version"])
    set_seed(t, t["shoe"]["revealed_version"])


def times_moved_back(t):
    t["rows"].shift_time(timedelta(hours=-1))


def row_unreadable(t):
    t["rows"].write(t["middle"], b"\xff\xfe not an event")


# (damage, the version verify must name first, or None where the server alone cannot see it)
DAMAGES = {
    "cut short behind its snapshot": (cut_short, lambda t: t["rows"].versions()[-1] + 1),
    "cut short, snapshots dropped": (cut_short_and_snapshots_dropped, lambda t: t["rows"].versions()[-1] + 1),
    "a row deleted": (row_deleted, lambda t: t["middle"]),
    "two rows exchanged": (rows_exchanged, lambda t: t["middle"]),
    "revealed seed changed": (revealed_seed_changed, lambda t: t["shoe"]["revealed_version"]),
    "seed changed in shuffle and reveal": (both_seeds_changed, lambda t: t["shoe"]["shuffled_version"]),
    "every time moved back an hour": (times_moved_back, lambda t: None),
    "a row unreadable": (row_unreadable, lambda t: t["middle"]),
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_every_endpoint_answers_a_damaged_log_and_verify_names_the_damage(played, client, damage):
    tamper, where = DAMAGES[damage]
    tamper(played)
    version = where(played)
    http = client()
    table = f"/tables/{played['table_id']}"

    answers = {
        "state": http.get(table),
        "state at a version": http.get(f"{table}/state?version={played['middle'] + 3}"),
        "state at a moment": http.get(f"{table}/state?at=2026-11-29T20:20:00%2B00:00"),
        "events": http.get(f"{table}/events?after=0&limit=1000"),
        "listing": http.get("/tables"),
        "rounds": http.get(f"{table}/rounds?limit=1000"),
        "command": http.post(f"{table}/commands", json={"command": "pass", "player": "anna"}),
        **{f"round {r['round']}": http.get(f"{table}/rounds/{r['round']}") for r in played["rounds"]},
    }
    report = http.get(f"{table}/verify")

    assert {name: r.status_code for name, r in answers.items() if r.status_code >= 500} == {}
    assert report.status_code == 200
    for response in answers.values():
        if response.status_code == 409 and "damaged" in response.json["message"]:
            assert response.json["verify"] == f"{table}/verify"
    if version is None:
        assert report.json["chain"]["ok"] is True
    else:
        assert report.json["ok"] is False
        assert min(p["version"] for p in report.json["problems"] if p["version"] is not None) == version, [(p["version"], p["message"][:90]) for p in report.json["problems"]]


def test_a_log_behind_its_snapshot_is_a_409_that_says_so_for_the_state_commands_and_history(played, client):
    rows = played["rows"]
    head = rows.versions()[-1]
    rows.delete(head - 19)
    end, snapshot = head - 20, rows.snapshot_versions()[-1]
    http = client()
    table = f"/tables/{played['table_id']}"
    ahead = f"the snapshot at version {snapshot} is ahead of the log, which ends at {end}"

    for response in (
        http.get(table),
        http.post(f"{table}/commands", json={"command": "pass", "player": "anna"}),
        http.get(f"{table}/state?version={end - 3}"),
        http.get(f"{table}/state?at=2026-11-29T20:20:00%2B00:00"),
    ):
        assert response.status_code == 409
        body = response.json
        assert body["code"] == 409 and body["status"] == "Conflict"
        assert ahead in body["message"] and "/verify" in body["message"]
        assert body["damaged_version"] == end + 1 and body["verify"] == f"{table}/verify"
    assert rows.versions()[-1] == end  # the refused command appended nothing

    report = http.get(f"{table}/verify").json
    assert report["ok"] is False
    assert any(ahead in p["message"] and p["version"] == end + 1 for p in report["problems"])
    assert len(http.get(f"{table}/events?limit=1000").json["events"]) == end  # the log itself still reads


def test_a_row_that_cannot_be_read_is_a_409_for_the_page_over_it_and_not_for_the_pages_before(played, client):
    victim = played["middle"]
    row_unreadable(played)
    http = client()
    table = f"/tables/{played['table_id']}"

    before = http.get(f"{table}/events?after=0&limit={victim - 1}")
    over = http.get(f"{table}/events?after={victim - 1}")

    assert before.status_code == 200 and before.json["next_after"] == victim - 1
    assert over.status_code == 409 and f"version {victim} cannot be read" in over.json["message"]
    assert over.json["damaged_version"] == victim
