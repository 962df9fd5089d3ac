"""Metrics and logs of the real server: four gunicorn workers (as docker-compose runs them) give one view of
their metrics whichever answers, no counter ever goes down, not even when a worker dies, no request can add
a series, and a whole shoe played over HTTP leaves no card and no seed in the log."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import uuid

import pytest
import requests

from tests.e2e.servers import ROOT, free_port, running_server
from tests.helpers import pick

pytestmark = pytest.mark.e2e
GUNICORN = [sys.executable, "-m", "gunicorn", "-c", "python:api.gunicorn_conf", "api.app:create_app()"]
OPERATOR = {"Authorization": "Bearer op-secret-0f3a9c2e"}
PLAYERS = ["anna", "boris", "vera"]
INJECTION = '"} 1\nzametano_injected_total{by="anonymous'
COUNTER_SUFFIXES = ("_total", "_count", "_sum", "_bucket")
# A card (docs/api.md notation: rank then suit, e.g. Ts, 2c) standing alone, not inside a longer word or hex id.
CARD = re.compile(r"(?<![A-Za-z0-9_])[2-9TJQKA][shdc](?![A-Za-z0-9_])")


@pytest.fixture
def four_workers(postgres_env, tmp_path):
    port = free_port()
    env = {
        **postgres_env,
        "ZAMETANO_DATA_DIR": str(tmp_path / "data"),
        "ZAMETANO_TOKENS": "operator:op-secret-0f3a9c2e",
        "BIND": f"127.0.0.1:{port}",
        "WEB_CONCURRENCY": "4",
        "WEB_THREADS": "2",
        "POSTGRES_POOL_SIZE": "3",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
    }
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "counter_1.db").write_bytes(b"left by an earlier run")
    with running_server(env, tmp_path / "server.log", port=port, command=GUNICORN) as server:
        yield server


def scrape(server, request_id=None):
    """Every series of /metrics with its value; a new connection each time, so any worker may answer."""
    r = requests.get(server + "/metrics", headers={"X-Request-Id": request_id} if request_id else {}, timeout=10)
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    values = {}
    for line in r.text.splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            values[key] = float(value)
    return values


def counters(values):
    return {k: v for k, v in values.items() if k.split("{")[0].endswith(COUNTER_SUFFIXES)}


def commands_answered(values, outcome="ok"):
    return sum(v for k, v in values.items()
               if k.startswith("zametano_command_duration_seconds_count{") and f'outcome="{outcome}"' in k)


def log_lines(server):
    return [json.loads(line) for line in server.log.read_text().splitlines() if line.startswith("{")]


def test_four_workers_give_one_view_of_their_metrics_that_never_goes_down(four_workers, tmp_path):
    server = four_workers
    assert not (tmp_path / "metrics" / "counter_1.db").exists()  # emptied at start
    state = requests.post(f"{server}/tables", json={"game": "chemin-de-fer", "players": PLAYERS, "rules": {"decks": 2}},
                          headers=OPERATOR, timeout=10).json()
    table_id, rng = state["table_id"], random.Random(3)
    previous, played = counters(scrape(server)), 0
    for i in range(20):
        name, player, fields = pick(state, rng)
        r = requests.post(f"{server}/tables/{table_id}/commands", json={"command": name, "player": player, **fields},
                          headers=OPERATOR, timeout=10)
        assert r.status_code == 200, r.text
        state, played = r.json()["state"], played + 1
        now = scrape(server, f"scrape-{i}")
        deadline = time.monotonic() + 5
        while commands_answered(now) < played and time.monotonic() < deadline:
            now = scrape(server, f"scrape-{i}")  # a command is counted once its answer has left its worker
        assert commands_answered(now) == played  # every worker's commands, whichever worker answers
        current = counters(now)
        went_down = {k: (v, current.get(k)) for k, v in previous.items() if current.get(k, -1) < v}
        assert not went_down, f"scrape {i}: {went_down}"
        previous = current
    scrapers = {line["pid"] for line in log_lines(server) if str(line.get("request_id")).startswith("scrape-")}
    assert len(scrapers) >= 2, "every scrape was answered by the same worker: the test proves nothing"

    # A worker killed outright: its counts stay, its gauges that count only while it lives go (child_exit).
    victim = sorted(scrapers)[0]
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while (tmp_path / "metrics" / f"gauge_livesum_{victim}.db").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not (tmp_path / "metrics" / f"gauge_livesum_{victim}.db").exists()
    assert (tmp_path / "metrics" / f"counter_{victim}.db").exists()
    for i in range(8):
        current = counters(scrape(server, f"after-{i}"))
        assert not {k for k, v in previous.items() if current.get(k, -1) < v}
        assert commands_answered(current) == played
    log = server.log.read_text()
    assert '"GET /metrics HTTP/1.1" 200' not in log  # gunicorn's access log is off: the app's lines replace it


def test_no_request_adds_a_series_to_the_metrics_or_makes_them_grow(four_workers):
    server = four_workers
    table_id = requests.post(f"{server}/tables", json={"game": "chemin-de-fer", "players": PLAYERS}, headers=OPERATOR,
                             timeout=10).json()["table_id"]
    path = f"{server}/tables/{table_id}/commands"
    attempts = [
        ({}, {"command": INJECTION, "player": "anna"}),  # unauthenticated, as in the report
        (OPERATOR, {"command": INJECTION, "player": "anna"}),
        ({}, {"command": "x" * 2_000_000, "player": "anna"}),  # a 2 MB command name
        (OPERATOR, {"command": "y" * 60_000, "player": "anna"}),  # under the body limit, refused by the schema
    ]

    def attempt(headers, body):
        r = requests.post(path, json=body, headers={**headers, "X-Request-Id": "attempt"}, timeout=30)
        assert r.status_code in (401, 422), r.text
        assert r.json()["request_id"] == r.headers["X-Request-Id"] == "attempt"

    scrape(server)
    for headers, body in attempts:  # each kind of answer once, on some worker, so that its series exists
        attempt(headers, body)
    before = requests.get(server + "/metrics", timeout=10).text
    for headers, body in attempts * 4:  # spread over the workers
        attempt(headers, body)
    after = requests.get(server + "/metrics", timeout=10).text
    assert set(scrape(server)) == {line.rsplit(" ", 1)[0] for line in before.splitlines() if line and line[0] != "#"}
    assert "injected" not in after and "anonymous" not in after and "xxxxxxxx" not in after
    assert len(after) < len(before) + 500  # only numbers changed


def test_a_whole_shoe_played_over_http_leaves_no_card_and_no_seed_in_the_log(tmp_path):
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "shoe.sqlite"),
           "ZAMETANO_DATA_DIR": str(tmp_path / "data"), "ZAMETANO_LOG_FORMAT": "json"}
    with running_server(env, tmp_path / "server.log") as server:
        demo = subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "demo"), "--url", server, "--decks", "2", "--players", "anna,boris",
             "--seed", "3"], capture_output=True, text=True, timeout=300,
        )
        assert demo.returncode == 0, demo.stderr
        revealed_url = next(line.split()[-1] for line in demo.stdout.splitlines() if "verify-shoe" in line)
        events = requests.get(revealed_url + "/events", params={"limit": 1000}, timeout=10).json()["events"]
        seeds = [e["data"]["seed"] for e in events if e["type"] == "ShoeRevealed"]
        # A second table stops mid-shoe, with refusals, a conflict and an idempotent repeat among its commands.
        state = requests.post(f"{server}/tables", json={"game": "chemin-de-fer", "players": PLAYERS}, timeout=10).json()
        table_id, rng = state["table_id"], random.Random(11)
        for _ in range(30):
            name, player, fields = pick(state, rng)
            body = {"command": name, "player": player, **fields}
            requests.post(f"{server}/tables/{table_id}/commands", json={"command": "deal", "player": "nobody"}, timeout=10)
            requests.post(f"{server}/tables/{table_id}/commands", json=body, headers={"If-Match": '"9999"'}, timeout=10)
            key = {"Idempotency-Key": str(uuid.uuid4())}
            for _ in range(2):
                r = requests.post(f"{server}/tables/{table_id}/commands", json=body, headers=key, timeout=10)
            state = r.json()["state"]
    from service.application import TablesService
    from service.config import load

    store = TablesService(load(env))
    shoe = store.repository.get(uuid.UUID(table_id)).shoe
    store.close()
    assert seeds and not shoe["revealed"]
    log = server.log.read_text()
    lines = log_lines(server)
    assert {"refused 422", "conflict 409", "idempotent repeat"} <= {
        m for line in lines for m in ("refused 422", "conflict 409", "idempotent repeat") if line["message"].startswith(m)}
    assert sum(line.get("route") == "/tables/{table_id}/commands" for line in lines) > 100
    for seed in [*seeds, shoe["seed"]]:
        assert seed not in log
    assert not CARD.findall(log), CARD.findall(log)[:10]
