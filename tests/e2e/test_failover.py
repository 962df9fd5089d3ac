"""The primary dies under load and its synchronous hot standby is promoted: the real server, given both hosts,
goes on on the new primary, and no command is recorded twice or recorded although answered with an error,
with clients that send no Idempotency-Key.

Both clusters are the test's own (tests/e2e/pg_cluster.py): the primary is killed outright (SIGKILL, its
postmaster and every backend, as when its machine dies), the standby promoted as a failover manager would.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest
import requests

from tests.conftest import ON_CI
from tests.e2e.pg_cluster import Cluster, find_bin_dir
from tests.e2e.servers import free_port, running_server
from tests.helpers import pick

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]

PLAYERS = ["anna", "boris", "vera"]
CLIENTS = 4
ANSWER_WITHIN = 30.0  # a client waits this long: every command gets an answer, none is left unknown
RECOVERY_DEADLINE = 30.0
# As a failover manager would: it promotes the standby once it has found the primary gone, a second or more.
PROMOTE_AFTER = 1.5


@pytest.fixture
def pair():
    """A primary and its synchronous hot standby, each on a free port; both stopped and removed afterwards."""
    bin_dir = find_bin_dir()
    if bin_dir is None or not (bin_dir / "pg_basebackup").exists():
        if ON_CI:
            pytest.fail("PostgreSQL's server binaries (initdb, pg_ctl, pg_basebackup) are needed under CI=true")
        pytest.skip("PostgreSQL's server binaries (initdb, pg_ctl, pg_basebackup) are not installed")
    primary, standby = Cluster(bin_dir, free_port()), Cluster(bin_dir, free_port())
    try:
        primary.init()
        primary.start()
        standby._run("pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres",
                     "-D", str(standby.data), "-R", "-X", "stream", "--no-sync")
        standby.start()
        with connect(primary) as conn:
            # only once the standby runs: before, every commit would wait for it
            conn.execute("ALTER SYSTEM SET synchronous_standby_names = '*'")
            conn.execute("SELECT pg_reload_conf()")
            deadline = time.monotonic() + 30
            while conn.execute("SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'").fetchone()[0] != 1:
                assert time.monotonic() < deadline, "the standby never became synchronous"
                time.sleep(0.1)
        yield primary, standby
    finally:
        for cluster in (standby, primary):
            try:
                cluster.destroy()
            except (RuntimeError, OSError):
                pass  # a killed primary: nothing left to stop, its files are removed anyway


def connect(cluster: Cluster) -> psycopg.Connection[Any]:
    return psycopg.connect(host="127.0.0.1", port=cluster.port, user="postgres", dbname="postgres", autocommit=True)


def kill_outright(cluster: Cluster) -> None:
    """SIGKILL to the postmaster and all its children at once: none of them answers again."""
    postmaster = int((cluster.data / "postmaster.pid").read_text().split()[0])
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == postmaster:
            children.append(int(stat.parent.name))
    for pid in (postmaster, *children):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@dataclass
class Client:
    """Plays one table with random legal commands, without keys; keeps every command's answer."""

    base: str
    table_id: str
    state: dict[str, Any]
    seed: int
    answers: list[tuple[float, int | None, Any]] = field(default_factory=list)  # (sent at, status, body)
    took: list[float] = field(default_factory=list)  # seconds each answer took

    def run(self, stop: threading.Event) -> None:
        rng = random.Random(self.seed)
        while not stop.is_set():
            name, player, fields = pick(self.state, rng)
            at = time.monotonic()
            try:
                r = requests.post(f"{self.base}/tables/{self.table_id}/commands",
                                  json={"command": name, "player": player, **fields}, timeout=ANSWER_WITHIN)
                status, body = r.status_code, r.json()
            except (requests.RequestException, ValueError) as exc:
                status, body = None, repr(exc)
            self.answers.append((at, status, body))
            self.took.append(time.monotonic() - at)
            if status == 200:
                self.state = body["state"]
                continue
            time.sleep(0.1)
            try:
                fresh = requests.get(f"{self.base}/tables/{self.table_id}", timeout=ANSWER_WITHIN)
            except requests.RequestException:
                continue
            if fresh.status_code == 200:
                self.state = fresh.json()

    def ok_after(self, moment: float) -> int:
        return sum(at > moment and status == 200 for at, status, _ in self.answers)


def wait_for(condition, deadline: float, what: str) -> None:  # type: ignore[no-untyped-def]
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {RECOVERY_DEADLINE:g} s"
        time.sleep(0.05)


def check_recorded_exactly_once(server: str, client: Client) -> None:
    """The log is the opening and then exactly the events of the commands answered 200, each at the versions
    its answer gave: nothing twice, nothing missing, nothing of a command answered with an error."""
    events = requests.get(f"{server}/tables/{client.table_id}/events", params={"limit": 1000}, timeout=30).json()["events"]
    assert len(events) < 1000, "raise the limit or page"
    assert [e["version"] for e in events] == list(range(1, len(events) + 1))
    answered = [e for _, status, body in client.answers if status == 200 for e in body["events"]]
    opening = events[: answered[0]["version"] - 1]
    assert events[len(opening):] == answered


def test_the_primary_killed_under_load_loses_and_doubles_nothing_once_its_standby_is_promoted(pair, tmp_path):
    primary, standby = pair
    env = {**primary.env(), "POSTGRES_HOST": "127.0.0.1,127.0.0.1", "POSTGRES_PORT": f"{primary.port},{standby.port}"}
    with running_server(env, tmp_path / "server.log") as server:
        clients = []
        for i in range(CLIENTS):
            r = requests.post(f"{server}/tables", json={"game": "chemin-de-fer", "players": PLAYERS, "rules": {"decks": 2}},
                              timeout=ANSWER_WITHIN)
            assert r.status_code == 201, r.text
            clients.append(Client(server, r.json()["table_id"], r.json(), seed=i))
        stop = threading.Event()
        threads = [threading.Thread(target=c.run, args=(stop,)) for c in clients]
        for t in threads:
            t.start()
        try:
            wait_for(lambda: all(c.ok_after(0) >= 20 for c in clients), time.monotonic() + RECOVERY_DEADLINE,
                     "every client had commands recorded")
            kill_outright(primary)
            killed = time.monotonic()
            time.sleep(PROMOTE_AFTER)
            standby._run("pg_ctl", "promote", "-w", "-t", "30", "-D", str(standby.data))
            promoted = time.monotonic()
            wait_for(lambda: all(c.ok_after(killed) >= 10 for c in clients), killed + RECOVERY_DEADLINE,
                     "every client's commands are recorded on the promoted standby")
        finally:
            stop.set()
            for t in threads:
                t.join()
        first_ok = min(at for c in clients for at, status, _ in c.answers if at > killed and status == 200)
        errors = [(status, body) for c in clients for _, status, body in c.answers if status != 200]
        commands = sum(len(c.answers) for c in clients)
        slowest = max(t for c in clients for t in c.took)
        print(f"\n{commands} commands, {len(errors)} answered with an error; promoted {promoted - killed:.2f} s "
              f"after the kill, first 200 sent {first_ok - killed:.2f} s after it; slowest answer {slowest:.2f} s; "
              f"errors: {sorted({str(s) for s, _ in errors})}")
        assert all(status is not None for status, _ in errors), errors  # every command had an answer
        for c in clients:
            check_recorded_exactly_once(server, c)
        log = server.log.read_text()
        assert "WORKER TIMEOUT" not in log, log
