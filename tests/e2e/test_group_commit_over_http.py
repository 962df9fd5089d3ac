"""End to end with group commit on: 16 clients at once across 4 gunicorn workers of several request threads
each (gthread), on PostgreSQL. Every command answered 200 with a receipt is in the log exactly once, at
the versions its receipt names, in order; the log holds nothing no client was told of; /verify is ok. And
the commands of two clients of one worker share transactions (the batch's leader waits for the other
client's command: service/groupcommit.py, api/edge.py), while a lone client's are each written at once."""

from __future__ import annotations

import random
import re
import sys
import threading
import uuid
from collections.abc import Callable
from typing import Any

import requests

from tests.e2e.servers import api_server, free_port, running_server
from tests.helpers import pick

PLAYERS = ["anna", "boris", "vera"]
CLIENTS = 16
SHARING = 4  # the last clients play one table together, with If-Match and Idempotency-Key
COMMANDS = 8  # per client
WORKERS, THREADS = 4, 4
BATCH = re.compile(r"^zametano_group_commit_batch_commands_(sum|count) ([0-9.e+]+)$", re.MULTILINE)


def gthread_server(port: int) -> list[str]:
    """gunicorn as docker-compose runs it (api/gunicorn_conf.py), with threaded workers."""
    return [
        sys.executable, "-m", "gunicorn", "-c", "python:api.gunicorn_conf", "--bind", f"127.0.0.1:{port}",
        "--workers", str(WORKERS), "--worker-class", "gthread", "--threads", str(THREADS), "api.app:create_app()",
    ]


def own_table(base: str, table_id: str, seed: int, commands: int = COMMANDS) -> list[dict[str, Any]]:
    """A client alone at its table, on one kept-alive connection: every command must be recorded."""
    rng, told = random.Random(seed), []
    with requests.Session() as http:
        state = http.get(f"{base}/tables/{table_id}", timeout=30).json()
        for _ in range(commands):
            name, player, fields = pick(state, rng)
            r = http.post(f"{base}/tables/{table_id}/commands", json={"command": name, "player": player, **fields},
                          timeout=30)
            assert r.status_code == 200, r.text
            told.append(r.json())
            state = told[-1]["state"]
    return told


def shared_table(base: str, table_id: str, seed: int) -> list[dict[str, Any]]:
    """Clients at one table: each decides on the version it read (If-Match); a 409 means another was first.
    Every recorded command is sent again with its key and must get the same answer, recording nothing."""
    rng, told = random.Random(seed), []
    with requests.Session() as http:
        for _ in range(COMMANDS):
            state = http.get(f"{base}/tables/{table_id}", timeout=30).json()
            name, player, fields = pick(state, rng)
            body = {"command": name, "player": player, **fields}
            headers = {"If-Match": f'"{state["version"]}"', "Idempotency-Key": uuid.uuid4().hex}
            r = http.post(f"{base}/tables/{table_id}/commands", json=body, headers=headers, timeout=30)
            if r.status_code == 409:
                continue
            assert r.status_code == 200, r.text
            again = http.post(f"{base}/tables/{table_id}/commands", json=body, headers=headers, timeout=30)
            assert again.status_code == 200 and again.json() == r.json(), again.text
            told.append(r.json())
    return told


def test_sixteen_clients_on_four_threaded_workers_have_every_acknowledged_command_recorded_once_in_order(
    postgres_env, tmp_path
):
    env = {**postgres_env, "ZAMETANO_DATA_DIR": str(tmp_path / "data"), "ZAMETANO_GROUP_COMMIT": "y"}
    port = free_port()
    with running_server(env, tmp_path / "server.log", port=port, command=gthread_server(port)) as base:
        opening = {"game": "chemin-de-fer", "players": PLAYERS, "rules": {"decks": 2}}
        tables = [requests.post(f"{base}/tables", json=opening, timeout=30).json()["table_id"]
                  for _ in range(CLIENTS - SHARING + 1)]
        seats = [tables[i] if i < CLIENTS - SHARING else tables[-1] for i in range(CLIENTS)]
        told: list[list[dict[str, Any]]] = [[] for _ in range(CLIENTS)]

        def client(i: int) -> None:
            play = own_table if i < CLIENTS - SHARING else shared_table
            told[i] = play(base, seats[i], i)

        at_once(client, CLIENTS)

        for table_id in tables:
            answers = sorted((a for i, a in enumerate(told) if seats[i] == table_id for a in a), key=lambda a: a["version"])
            assert answers, "no command of this table was recorded"
            log = requests.get(f"{base}/tables/{table_id}/events", params={"limit": 1000}, timeout=30).json()["events"]
            # each acknowledged command once, in the order of its versions, and nothing else after the opening
            assert [e for a in answers for e in a["events"]] == log[1:]
            for a in answers:
                head = log[a["version"] - 1]
                assert (a["receipt"]["version"], a["receipt"]["digest"]) == (head["version"], head["digest"])
            assert requests.get(f"{base}/tables/{table_id}/verify", timeout=60).json()["ok"] is True


def at_once(client: Callable[[int], Any], clients: int) -> None:
    """Runs ``client(0)`` to ``client(clients - 1)`` in threads of their own at once; the first failure is the
    test's."""
    failures: list[BaseException] = []

    def run(i: int) -> None:
        try:
            client(i)
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, repr(failures[0])


def batches(base: str) -> tuple[float, float]:
    """Commands written, and transactions they were written in (the service's own histogram)."""
    found = {m.group(1): float(m.group(2)) for m in BATCH.finditer(requests.get(f"{base}/metrics", timeout=10).text)}
    return found.get("sum", 0.0), found.get("count", 0.0)


def played_by(base: str, clients: int, commands: int = 200) -> float:
    """Commands a transaction while ``clients`` each play their own table at once."""
    opening = {"game": "chemin-de-fer", "players": PLAYERS}
    tables = [requests.post(f"{base}/tables", json=opening, timeout=30).json()["table_id"] for _ in range(clients)]
    before = batches(base)
    at_once(lambda i: own_table(base, tables[i], i, commands), clients)
    written, transactions = (after - earlier for after, earlier in zip(batches(base), before))
    assert written == clients * commands
    return written / transactions


def test_two_clients_of_one_worker_share_transactions_and_a_lone_client_never_waits_for_company(
    postgres_env, tmp_path
):
    env = {**postgres_env, "ZAMETANO_DATA_DIR": str(tmp_path / "data"), "ZAMETANO_GROUP_COMMIT": "y"}
    port = free_port()
    with running_server(env, tmp_path / "server.log", port=port, command=api_server(port, workers=1)) as base:
        assert played_by(base, 1) == 1.0  # alone: every command its own transaction, written at once
        # Without waiting for company two such clients took turns and met in about 1 % of the transactions
        # (1.00 to 1.01 commands a transaction); waiting, in most: 1.8 to 1.9 on a quiet machine, 1.11 to 1.26
        # with three processes spinning beside the test on its two cores, where the clients (this process's
        # threads) are slow to send their next command.
        assert played_by(base, 2) >= 1.05
