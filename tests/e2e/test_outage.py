"""PostgreSQL stops under load and starts again: the service answers 503 at once, recovers by itself, and
loses or doubles nothing it acknowledged.

The cluster is the test's own (tests/e2e/pg_cluster.py), never the shared one: the test stops it.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests

from tests.conftest import ON_CI
from tests.e2e.pg_cluster import Cluster, find_bin_dir
from tests.e2e.servers import free_port, running_server
from tests.helpers import pick

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]

PLAYERS = ["anna", "boris", "vera"]
CLIENTS = 4
# Any answer slower than this counts as a hang. The outage lasts longer, so a request that waited for the
# database to come back (as it did before: 12-15 s) would be caught.
ANSWER_WITHIN = 6.0
OUTAGE = 10.0
RECOVERY_DEADLINE = 30.0


@pytest.fixture
def cluster():
    bin_dir = find_bin_dir()
    if bin_dir is None:
        if ON_CI:
            pytest.fail("PostgreSQL's server binaries (initdb, pg_ctl) are needed under CI=true")
        pytest.skip("PostgreSQL's server binaries (initdb, pg_ctl) are not installed")
    cluster = Cluster(bin_dir, free_port())
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        cluster.destroy()


@dataclass
class Answer:
    at: float  # when the request was sent (monotonic)
    method: str
    path: str
    status: int | None  # None: no answer in time, or the connection failed
    content_type: str = ""
    retry_after: str | None = None
    body: Any = None
    problem: str = ""
    took: float = 0.0


@dataclass
class Client:
    """Plays one table with random legal commands. A command answered 503 may or may not have been
    recorded: a client with keys resends it with the same Idempotency-Key until it is answered; one
    without reads the table again and decides anew."""

    base: str
    table_id: str
    state: dict[str, Any]
    seed: int
    keyed: bool = False
    answers: list[Answer] = field(default_factory=list)
    receipts: list[dict[str, Any]] = field(default_factory=list)

    def ask(self, method: str, path: str, **kwargs: Any) -> Answer:
        at = time.monotonic()
        try:
            r = requests.request(method, self.base + path, timeout=ANSWER_WITHIN, **kwargs)
        except requests.RequestException as exc:
            answer = Answer(at, method, path, None, problem=repr(exc))
        else:
            try:
                body = r.json()
            except ValueError:
                body = r.text
            answer = Answer(at, method, path, r.status_code, r.headers.get("Content-Type", ""),
                            r.headers.get("Retry-After"), body)
        answer.took = time.monotonic() - at
        self.answers.append(answer)
        return answer

    def run(self, stop: threading.Event) -> None:
        rng = random.Random(self.seed)
        while not stop.is_set():
            name, player, fields = pick(self.state, rng)
            body = {"command": name, "player": player, **fields}
            headers = {"Idempotency-Key": f"{self.seed}-{len(self.receipts)}"} if self.keyed else {}
            answer = self.ask("POST", f"/tables/{self.table_id}/commands", json=body, headers=headers)
            while self.keyed and answer.status != 200 and not stop.is_set():
                time.sleep(0.1)
                answer = self.ask("POST", f"/tables/{self.table_id}/commands", json=body, headers=headers)
            if answer.status == 200:
                self.receipts.append(answer.body)
                self.state = answer.body["state"]
                continue
            while not stop.is_set():
                time.sleep(0.1)
                fresh = self.ask("GET", f"/tables/{self.table_id}")
                if fresh.status == 200:
                    self.state = fresh.body
                    break


def wait_for(condition, deadline: float, what: str) -> None:  # type: ignore[no-untyped-def]
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {RECOVERY_DEADLINE:g} s"
        time.sleep(0.1)


def check_answer(answer: Answer) -> None:
    """Every answer, whatever the database does: 200, or 503 JSON with Retry-After; never a hang, an
    HTML page or a 500."""
    where = f"{answer.method} {answer.path}"
    assert answer.status is not None, f"{where} got no answer within {ANSWER_WITHIN:g} s: {answer.problem}"
    assert answer.content_type.startswith("application/json"), f"{where}: {answer.status} {answer.body!r}"
    assert answer.status in (200, 503), f"{where}: {answer.status} {answer.body}"
    if answer.status == 503:
        assert answer.body["code"] == 503 and answer.body["message"], answer.body
        assert answer.retry_after is not None and int(answer.retry_after) >= 1, answer


def test_while_postgresql_is_stopped_the_service_answers_503_at_once_and_recovers_losing_nothing(cluster, tmp_path):
    with running_server(cluster.env(), tmp_path / "server.log") as server:
        clients = []
        for i in range(CLIENTS):
            r = requests.post(f"{server}/tables", json={"game": "chemin-de-fer", "players": PLAYERS, "rules": {"decks": 2}},
                              timeout=ANSWER_WITHIN)
            assert r.status_code == 201, r.text
            clients.append(Client(server, r.json()["table_id"], r.json(), seed=i, keyed=i % 2 == 0))
        probe = Client(server, "", {}, seed=0)
        stop = threading.Event()
        threads = [threading.Thread(target=c.run, args=(stop,)) for c in clients]
        for t in threads:
            t.start()
        try:
            wait_for(lambda: all(len(c.receipts) >= 20 for c in clients), time.monotonic() + RECOVERY_DEADLINE,
                     "every client had commands recorded")

            cluster.stop()
            stopped = time.monotonic()
            assert probe.ask("GET", "/healthz").status == 200  # never touches the database
            readiness = [probe.ask("GET", "/readyz") for _ in range(3)]
            assert [a.status for a in readiness] == [503, 503, 503], readiness
            while time.monotonic() < stopped + OUTAGE:
                assert probe.ask("GET", "/healthz").status == 200
                time.sleep(0.5)
            for c in clients:  # commands and queries were asked, and refused, while the database was down
                assert any(a.at > stopped and a.status == 503 for a in c.answers), c.answers[-3:]
            assert any(a.at > stopped and a.status == 503 and a.method == "POST" for a in clients[0].answers)

            cluster.start()
            started = time.monotonic()
            deadline = started + RECOVERY_DEADLINE
            wait_for(lambda: probe.ask("GET", "/readyz").status == 200, deadline, "/readyz says ready again")
            wait_for(lambda: all(sum(a.at > started and a.status == 200 and a.method == "POST" for a in c.answers) >= 5
                                 for c in clients), deadline, "every client's commands are recorded again")
        finally:
            stop.set()
            for t in threads:
                t.join()

        answers = probe.answers + [a for c in clients for a in c.answers]
        for answer in answers:
            check_answer(answer)
        for c in clients:
            check_nothing_lost_doubled_or_half_applied(server, c)
        # recovered by itself: the same master and the same two workers served throughout
        assert server.process.poll() is None
        log = server.log.read_text()
        assert log.count("Booting worker") == 2 and "WORKER TIMEOUT" not in log, log


def check_nothing_lost_doubled_or_half_applied(server: str, client: Client) -> None:
    events = requests.get(f"{server}/tables/{client.table_id}/events", params={"limit": 1000}, timeout=30).json()["events"]
    assert len(events) < 1000, "raise the limit or page"
    assert [e["version"] for e in events] == list(range(1, len(events) + 1))
    by_version = {e["version"]: e for e in events}
    acknowledged: set[int] = set()
    for receipt in client.receipts:
        # every event of every acknowledged command is in the log exactly as the receipt showed it
        for event in receipt["events"]:
            assert by_version.get(event["version"]) == event
        versions = {e["version"] for e in receipt["events"]}
        assert not versions & acknowledged, f"two acknowledged commands claim versions {sorted(versions & acknowledged)}"
        acknowledged |= versions
    # Events no receipt shows come from commands answered 503 after their commit: whole commands only,
    # each a run of versions with one command number, and the whole table replays through the rules.
    commands = [e["command"] for e in events]
    assert commands == sorted(commands)
    unacknowledged = [e for e in events[1:] if e["version"] not in acknowledged]  # version 1: the opening
    if client.keyed:
        # a keyed command is resent until answered, so only the last one, cut short by the end of the
        # test, can be missing its receipt: anything else would be a command recorded twice
        assert all(e["version"] > max(acknowledged) for e in unacknowledged), unacknowledged
        assert len({e["command"] for e in unacknowledged}) <= 1, unacknowledged
    report = requests.get(f"{server}/tables/{client.table_id}/verify", timeout=60).json()
    assert report["ok"] is True, report
