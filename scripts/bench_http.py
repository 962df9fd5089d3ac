"""Zametano over HTTP against what it stands on: PostgreSQL alone (pgbench), the eventsourcing library alone,
and Flask alone under the same gunicorn, in one run, interleaved and repeated (see scripts/bench-http)."""

from __future__ import annotations

import argparse
import http.client
import importlib.util
import json
import multiprocessing
import os
import platform
import random
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts._args import Parser, whole, seconds  # noqa: E402

from eventsourcing.application import Application  # noqa: E402
from eventsourcing.domain import Aggregate, event  # noqa: E402

from _bench import (  # noqa: E402
    PG,
    PG_PASSWORD,
    Target,
    drop_schema,
    markdown_table,
    median_of,
    number,
    percentile,
    pg_connect,
    progress,
    rotated,
    targets_table,
    write_section,
)
from tests.helpers import pick  # noqa: E402

SECTION = "## HTTP (bench-http)"
OPENING = {"game": "chemin-de-fer", "players": ["anna", "boris", "vera", "gleb"], "rules": {"decks": 4}}
ECHO_BODY = {"command": "place_stake", "player": "anna", "amount": 100}
EVENTS_PER_COMMAND = 5  # the bare library's command: what a Chemin de fer command appends, roughly
WARMUP = 5  # commands each client plays before the clock starts (opens the table, fills the caches)
PGBENCH_SCALE = 4  # one branch row per client at 4 clients, as every Zametano table is its own stream
READ_TABLE_EVENTS = 300  # the table the reads are measured on: more than a page of events, many rounds
READS = ("state", "events page", "round audit", "tables listing")
# Measured before this benchmark existed, at 1 client on PostgreSQL: the read targets are half of them.
EARLIER = {"round audit": 28.0, "events page": 11.6}
REFERENCE = re.compile(r"SQLite reference: ([\d,.]+) commands/s, p50 ([\d.]+) ms")
START_TIMEOUT = 60.0
PR_SET_PDEATHSIG = 1  # linux/prctl.h


class BenchError(RuntimeError):
    pass


# --- what is measured -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    name: str
    group: str
    kind: str  # pgbench, library, echo, http, reads
    label: str
    clients: int = 1
    server: str | None = None  # which server it needs: pg-<workers>, sqlite-<workers>, echo


CONFIGS = [
    Config("pgbench-1", "pgbench", "pgbench", "pgbench tpcb-like, 1 client", 1),
    Config("pgbench-4", "pgbench", "pgbench", "pgbench tpcb-like, 4 clients", 4),
    Config("library-1", "library", "library", "eventsourcing alone, 1 process", 1),
    Config("library-2", "library", "library", "eventsourcing alone, 2 processes", 2),
    Config("library-4", "library", "library", "eventsourcing alone, 4 processes", 4),
    Config("echo", "echo", "echo", "Flask echo, 1 worker, 1 client", 1, "echo"),
    Config("http-1w-1c", "http", "http", "Zametano PostgreSQL, 1 worker, 1 client", 1, "pg-1"),
    Config("http-1w-2c", "http", "http", "Zametano PostgreSQL, 1 worker, 2 clients", 2, "pg-1"),
    Config("reads", "reads", "reads", "reads, 1 worker, 1 client", 1, "pg-1"),
    Config("http-2w-4c", "http", "http", "Zametano PostgreSQL, 2 workers, 4 clients", 4, "pg-2"),
    Config("http-4w-8c", "http", "http", "Zametano PostgreSQL, 4 workers, 8 clients", 8, "pg-4"),
    Config("tables-1", "tables", "http", "4 workers, 1 table", 1, "pg-4"),
    Config("tables-4", "tables", "http", "4 workers, 4 tables", 4, "pg-4"),
    Config("tables-16", "tables", "http", "4 workers, 16 tables", 16, "pg-4"),
    Config("tables-64", "tables", "http", "4 workers, 64 tables", 64, "pg-4"),
    Config("sqlite-2w-4c", "sqlite", "http", "Zametano SQLite, 2 workers, 4 clients", 4, "sqlite-2"),
]
# Group commit (ZAMETANO_GROUP_COMMIT) off and on, under gunicorn's threaded workers (it batches the commands
# of one worker's threads); run only when named: --only group-commit.
GTHREADS = 4
ON_REQUEST = [
    Config(f"gc-{state}-{n}", "group-commit", "http", f"4 gthread workers, {n} tables, group commit {state}", n,
           "pg-4-gthread" + ("-gc" if state == "on" else ""))
    for n in (8, 64) for state in ("off", "on")
]
# The same Zametano on PostgreSQL under gunicorn as api.server starts it (pg-N) and under granian's WSGI interface
# (pg-N-granian: GRANIAN_THREADS blocking threads a worker, the tables made once before it starts); run only when
# named: --only granian. granian is not one of the project's dependencies: installed for the measurement alone.
GRANIAN_THREADS = 4
ON_REQUEST += [
    Config(f"{server}-{w}w-{c}c", "granian", "http",
           f"{'granian WSGI' if server == 'granian' else 'gunicorn (api.server)'}, {w} worker{'s' if w > 1 else ''}, "
           f"{c} client{'s' if c > 1 else ''}", c, f"pg-{w}" + ("-granian" if server == "granian" else ""))
    for w, c in ((1, 1), (2, 4)) for server in ("gunicorn", "granian")
]
BY_NAME = {c.name: c for c in CONFIGS + ON_REQUEST}


def select(only: str | None) -> list[Config]:
    """The configurations ``--only`` names (names or groups, comma-separated), in their usual order."""
    if not only:
        return list(CONFIGS)
    wanted = {w.strip() for w in only.split(",") if w.strip()}
    known = {c.name for c in BY_NAME.values()} | {c.group for c in BY_NAME.values()}
    unknown = sorted(wanted - known)
    if unknown:
        raise SystemExit(f"error: --only {', '.join(unknown)}: not a configuration. Known: {', '.join(c.name for c in CONFIGS)}; "
                         f"groups: {', '.join(dict.fromkeys(c.group for c in CONFIGS))}")
    return [c for c in BY_NAME.values() if c.name in wanted or c.group in wanted]


# --- CPU time from /proc ----------------------------------------------------------------------------------

TICK = os.sysconf("SC_CLK_TCK")


def proc_stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state, ppid, ...), or None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()


def cpu_of(pid: int) -> float | None:
    """User + system CPU seconds of one process, None if it is gone."""
    fields = proc_stat(pid)
    return None if fields is None else (int(fields[11]) + int(fields[12])) / TICK


def children_of(pid: int) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            fields = proc_stat(int(entry.name))
            if fields is not None and int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def tree_cpu(pid: int) -> float:
    """CPU seconds of a gunicorn master and its workers."""
    return sum(cpu_of(p) or 0.0 for p in [pid, *children_of(pid)])


class Backends:
    """The CPU time of the PostgreSQL backends serving the connections one application name opened (the
    benchmark sets PGAPPNAME for the processes it starts), read from /proc: the database runs on this
    machine. Background processes (WAL writer, checkpointer) are not counted."""

    def __init__(self) -> None:
        self.conn = pg_connect(autocommit=True, connect_timeout=3, application_name="zametano-bench-monitor")
        pid = self.conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        self.local = cpu_of(pid) is not None and Path(f"/proc/{pid}/comm").read_text().strip() == "postgres"
        if not self.local:
            progress("PostgreSQL runs elsewhere: its CPU time is not counted")

    def snapshot(self, appname: str) -> dict[int, float] | None:
        if not self.local:
            return None
        pids = [r[0] for r in self.conn.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s", (appname,))]
        return {pid: cpu for pid in pids if (cpu := cpu_of(pid)) is not None}

    @staticmethod
    def spent(before: dict[int, float] | None, after: dict[int, float] | None) -> float | None:
        """CPU seconds between two snapshots; a backend that appeared in between counts from its start."""
        if before is None or after is None:
            return None
        return sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())

    def close(self) -> None:
        self.conn.close()


# --- HTTP clients -----------------------------------------------------------------------------------------


class Client:
    """One connection, kept alive as long as the server keeps it (gunicorn's sync workers, WEB_THREADS=1, close it after
    every response; http.client then connects again for the next request)."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        for attempt in (1, 2):
            try:
                self.conn.request(method, path, data, headers)
                response = self.conn.getresponse()
                return response.status, response.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.conn.close()  # closed by the server between two requests: once more, on a new connection
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def json(self, method: str, path: str, body: Any = None) -> Any:
        status, raw = self.call(method, path, body)
        if status >= 300:
            raise BenchError(f"{method} {path} answered {status}: {raw[:300].decode(errors='replace')}")
        return json.loads(raw)

    def close(self) -> None:
        self.conn.close()


class Window:
    """The timed part of a measurement, shared by its clients."""

    deadline = 0.0


class Player:
    """One client playing its own Chemin de fer table: random legal commands from the state's `expects`; after
    a refusal (409, 422) it reads the state again and carries on."""

    def __init__(self, port: int, seed: int) -> None:
        self.client = Client(port)
        self.rng = random.Random(seed)
        self.latencies: list[float] = []  # seconds, commands accepted after the clock started
        self.in_window = 0  # of those, the ones finished before the deadline
        self.refused = 0
        self.state: dict[str, Any] = {}
        self.table = ""
        self.error: BaseException | None = None

    def open(self) -> None:
        self.state = self.client.json("POST", "/tables", OPENING)
        self.table = self.state["table_id"]

    def step(self, deadline: float | None) -> None:
        command, player, args = pick(self.state, self.rng)
        t = time.perf_counter()
        status, raw = self.client.call("POST", f"/tables/{self.table}/commands", {"command": command, "player": player, **args})
        elapsed = time.perf_counter() - t
        if status == 200:
            self.state = json.loads(raw)["state"]
            if deadline is not None:
                self.latencies.append(elapsed)
                self.in_window += time.monotonic() <= deadline
        elif status in (409, 422):
            self.refused += 1
            self.state = self.client.json("GET", f"/tables/{self.table}")
        else:
            raise BenchError(f"{command} on {self.table} answered {status}: {raw[:300].decode(errors='replace')}")

    def run(self, barrier: threading.Barrier, window: Window, warmup: int) -> None:
        try:
            self.open()
            for _ in range(warmup):
                self.step(None)
            barrier.wait()
            while time.monotonic() < window.deadline:
                self.step(window.deadline)
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread, which raises it
            self.error = exc
            barrier.abort()
        finally:
            self.client.close()


# --- servers ----------------------------------------------------------------------------------------------


def die_with_parent() -> None:
    """In a server just forked: a benchmark killed outright takes its server with it (its workers follow
    their master, api/server.py)."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def echo_app() -> Any:
    from flask import Flask, jsonify, request

    app = Flask("echo")

    @app.post("/echo")
    def echo() -> Any:
        return jsonify(request.get_json())

    return app


def serve_echo(port: int) -> int:
    """A Flask app that answers a JSON body with itself, under gunicorn as api/server.py sets it up."""
    from api.server import Server, post_fork, web_threads, worker_settings

    class Echo(Server):
        def load(self) -> Any:
            return echo_app()

    # no access log: the service has none either (it writes its own line per request, api/logs.py)
    Echo({"bind": f"127.0.0.1:{port}", "workers": 1, **worker_settings(web_threads()), "accesslog": None, "timeout": 60,
          "post_fork": post_fork}).run()
    return 0


def granian_installed() -> bool:
    return importlib.util.find_spec("granian") is not None


def serve_granian(port: int, workers: int) -> int:
    """Zametano under granian's WSGI interface: what api/server.py does before gunicorn forks (the metrics folder,
    the tables, the keys, made once: workers creating tables at once race in PostgreSQL), then granian in this
    process's place, each worker building the app through the factory."""
    from api.server import PRIVATE_UMASK, prepare_metrics_dir, prepared_store
    from service.config import ConfigError

    os.umask(PRIVATE_UMASK)
    try:
        prepare_metrics_dir()
        prepared_store()  # sets CREATE_TABLE=n for the workers
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 2
    argv = [sys.executable, "-m", "granian", "--interface", "wsgi", "--factory", "--host", "127.0.0.1", "--port",
            str(port), "--workers", str(workers), "--blocking-threads", str(GRANIAN_THREADS), "--no-access-log",
            "--log-level", "warning", "api.app:create_app"]
    os.execv(sys.executable, argv)


@dataclass
class Served:
    key: str
    port: int
    process: subprocess.Popen  # type: ignore[type-arg]
    log: Path
    workers: int

    @property
    def pid(self) -> int:
        return self.process.pid


@dataclass
class Against:
    """--against REV: the revision the working tree's code is compared with, checked out in a temporary
    worktree, with its own PostgreSQL schema."""

    rev: str
    tree: Path
    schema: str = ""

    @classmethod
    def check_out(cls, rev: str, tmp: Path) -> Against:
        tree = tmp / "against"
        done = subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), rev],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"error: --against {rev}: {done.stderr.strip()}")
        described = subprocess.run(["git", "-C", str(tree), "log", "-1", "--format=%h %s"], capture_output=True,
                                   text=True, check=False).stdout.strip()
        progress(f"comparing with {described[:100]}")
        return cls(rev, tree)

    def remove(self) -> None:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(self.tree)], capture_output=True,
                       check=False)


def twins(configs: list[Config]) -> list[Config]:
    """Each configuration of a Zametano server followed by its twin on the --against revision."""
    out = []
    for config in configs:
        out.append(config)
        if config.server and config.server != "echo":
            twin = Config(f"{config.name}@", config.group, config.kind, f"{config.label} (against)", config.clients,
                          f"{config.server}@")
            BY_NAME[twin.name] = twin
            out.append(twin)
    return out


def against_table(med: dict[str, Measure], configs: list[Config], rev: str) -> str:
    """Each measure of a configuration on the --against revision and on the working tree, and their ratio."""
    rows = []
    for config in configs:
        if config.name.endswith("@") or f"{config.name}@" not in med or config.name not in med:
            continue
        base, head = med[f"{config.name}@"], med[config.name]
        keys = ("rate", "p50", "cpu") if config.kind != "reads" else tuple(k for k in head if k.endswith(" p50"))
        for key in keys:
            was, now = base.get(key), head.get(key)
            ratio = f"{now / was:.2f}" if was and now is not None else "-"
            unit = {"rate": "per second", "p50": "p50 (ms)", "cpu": "CPU (ms/op)"}.get(key, key)
            rows.append([config.label, unit, number(was, 2), number(now, 2), ratio])
    return markdown_table(["configuration", "measure", f"--against {rev}", "working tree", "ratio"], rows)


class Servers:
    """One server at a time, started when a configuration needs it: each worker on PostgreSQL holds a pool
    of connections, and several servers at once could exhaust the database's connections on a shared machine."""

    def __init__(self, tmp: Path, pg: dict[str, str] | None, appname: str, against: Against | None = None) -> None:
        self.tmp, self.pg, self.appname, self.against = tmp, pg, appname, against
        self.current: Served | None = None

    def environment(self, key: str) -> dict[str, str]:
        """A server's environment; a key ending in ``@`` (--against) runs the other revision on a store of its
        own, so that neither reads what the other wrote."""
        env = self._environment(key.rstrip("@"))
        if key.endswith("@"):
            assert self.against is not None
            env["ZAMETANO_DATA_DIR"] = str(self.tmp / "data-against")
            if key.startswith("pg-"):
                env["POSTGRES_SCHEMA"] = self.against.schema
            elif key.startswith("sqlite-"):
                env["SQLITE_DBNAME"] = str(self.tmp / "zametano-against.sqlite")
        return env

    def _environment(self, key: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ZAMETANO_", "POSTGRES_", "SQLITE_"))}
        for name in ("PERSISTENCE_MODULE", "CREATE_TABLE", "CIPHER_TOPIC", "CIPHER_KEY", "COMPRESSOR_TOPIC",
                     "AGGREGATE_CACHE_MAXSIZE", "SNAPSHOT_INTERVAL", "WEB_CONCURRENCY", "BIND", "HOST", "PORT"):
            env.pop(name, None)
        env["ZAMETANO_DATA_DIR"] = str(self.tmp / "data")
        if key.startswith("pg-"):
            if self.pg is None:
                raise BenchError("PostgreSQL is not reachable")
            env.update(self.pg)
            env["PGAPPNAME"] = self.appname
            # on by default; the group-commit comparison switches it off for its other half
            env["ZAMETANO_GROUP_COMMIT"] = "n" if key.endswith("-gthread") else "y"
        elif key.startswith("sqlite-"):
            env.update({"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(self.tmp / "zametano.sqlite")})
        return env

    def ensure(self, key: str) -> Served:
        if self.current is not None and self.current.key == key:
            return self.current
        self.stop()
        workers = 1 if key == "echo" else int(key.rstrip("@").split("-")[1])
        port = free_port()
        if key == "echo":
            argv = [sys.executable, str(Path(__file__).resolve()), "--serve-echo", str(port)]
        elif key.rstrip("@").endswith("-granian"):
            argv = [sys.executable, str(Path(__file__).resolve()), "--serve-granian", str(port), str(workers)]
        else:
            argv = [sys.executable, "-m", "api.server", "--port", str(port), "--workers", str(workers)]
        if "-gthread" in key:  # gunicorn as docker-compose runs it (api/gunicorn_conf.py), threaded workers
            argv = [sys.executable, "-m", "gunicorn", "-c", "python:api.gunicorn_conf", "--bind", f"127.0.0.1:{port}",
                    "--workers", str(workers), "--worker-class", "gthread", "--threads", str(GTHREADS),
                    "api.app:create_app()"]
        log = self.tmp / f"{key.replace('@', '-against')}.log"
        progress(f"starting the {key} server")
        with open(log, "ab") as err:
            code = self.against.tree if key.endswith("@") and self.against is not None else ROOT
            env = self.environment(key)
            if key.rstrip("@").endswith("-granian"):
                # a metrics folder of the run's, gone with it: granian takes the place of the process that would remove it
                metrics = self.tmp / f"metrics-{key.replace('@', '-against')}"
                metrics.mkdir(mode=0o700, exist_ok=True)  # before the script's imports read it (prometheus_client)
                env["PROMETHEUS_MULTIPROC_DIR"] = str(metrics)
            process = subprocess.Popen(argv, cwd=code, env=env, stdout=subprocess.DEVNULL, stderr=err,
                                       preexec_fn=die_with_parent)
        self.current = Served(key, port, process, log, workers)
        self.wait_ready(self.current)
        return self.current

    def wait_ready(self, served: Served) -> None:
        """Answers, all its workers booted, and idle (its CPU time stopped moving): a worker still importing
        its app must not be counted in the first measurement."""
        deadline = time.monotonic() + START_TIMEOUT
        client = Client(served.port)
        try:
            while True:
                if served.process.poll() is not None:
                    tail = served.log.read_text(errors="replace")[-2000:]
                    raise BenchError(f"the {served.key} server stopped (exit {served.process.returncode}):\n{tail}")
                if time.monotonic() > deadline:
                    raise BenchError(f"the {served.key} server did not answer within {START_TIMEOUT:.0f} s")
                try:
                    status, _ = client.call("GET", "/healthz" if served.key != "echo" else "/")
                    if status in (200, 404) and len(children_of(served.pid)) >= served.workers:
                        break
                except OSError:
                    client.close()
                time.sleep(0.2)
        finally:
            client.close()
        last = tree_cpu(served.pid)
        while time.monotonic() < deadline:
            time.sleep(0.5)
            now = tree_cpu(served.pid)
            if now - last < 0.05:
                return
            last = now

    def stop(self) -> None:
        served, self.current = self.current, None
        if served is None or served.process.poll() is not None:
            return
        served.process.send_signal(signal.SIGTERM)  # gunicorn stops its workers, then itself
        try:
            served.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            served.process.kill()
            served.process.wait()


# --- the measurements -------------------------------------------------------------------------------------

Measure = dict[str, float | None]


def summarise(latencies: list[float], in_window: int, seconds: float, count: int, cpu: float | None,
              pg_cpu: float | None, client_cpu: float | None, refused: int | None = None) -> Measure:
    """Per second, p50 and p95 (ms), CPU milliseconds per operation (all operations, the last of each client
    finishing after the deadline included, as its CPU time is)."""
    if not latencies:
        raise BenchError("no operation finished in the timed window")
    total = None if cpu is None else cpu + (pg_cpu or 0.0)
    return {
        "rate": in_window / seconds,
        "p50": percentile(latencies, 50) * 1000,
        "p95": percentile(latencies, 95) * 1000,
        "cpu": None if total is None else total / count * 1000,
        "pg cpu": None if pg_cpu is None else pg_cpu / count * 1000,
        "client cpu": None if client_cpu is None else client_cpu / count * 1000,
        "refused": None if refused is None else float(refused),
    }


def measure_http(served: Served, clients: int, seconds: float, seed: int, backends: Backends | None,
                 appname: str, warmup: int) -> Measure:
    players = [Player(served.port, seed * 1000 + i) for i in range(clients)]
    window = Window()
    marks: dict[str, Any] = {}

    def start() -> None:  # run by the last client to arrive, before any is released
        marks["server"] = tree_cpu(served.pid)
        marks["pg"] = backends.snapshot(appname) if backends and served.key.startswith("pg-") else None
        marks["client"] = time.process_time()
        window.deadline = time.monotonic() + seconds

    batches = Batches(served.port)
    barrier = threading.Barrier(clients, action=start)
    threads = [threading.Thread(target=p.run, args=(barrier, window, warmup), daemon=True) for p in players]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    errors = sorted((p.error for p in players if p.error is not None),
                    key=lambda e: isinstance(e, threading.BrokenBarrierError))  # the cause first, then who waited
    if errors:
        raise BenchError(f"a client failed: {errors[0]!r}") from errors[0]
    client = time.process_time() - marks["client"]  # first: reading /proc below is not the load generator's work
    server = tree_cpu(served.pid) - marks["server"]
    pg = Backends.spent(marks["pg"], backends.snapshot(appname)) if marks["pg"] is not None and backends else None
    latencies = [x for p in players for x in p.latencies]
    measure = summarise(latencies, sum(p.in_window for p in players), seconds, len(latencies), server, pg, client,
                        sum(p.refused for p in players))
    measure["per transaction"] = batches.since()
    return measure


class Batches:
    """Commands a group commit wrote in one transaction, on average since it was made: the service's own histogram
    (zametano_group_commit_batch_commands, summed over the workers at /metrics); None where there is none."""

    PATTERN = re.compile(rb"^zametano_group_commit_batch_commands_(sum|count) ([0-9.e+]+)$", re.MULTILINE)

    def __init__(self, port: int) -> None:
        self.port = port
        self.start = self.read()

    def read(self) -> dict[bytes, float] | None:
        client = Client(self.port)
        try:
            status, raw = client.call("GET", "/metrics")
        except OSError:
            return None
        finally:
            client.close()
        found = {m.group(1): float(m.group(2)) for m in self.PATTERN.finditer(raw)} if status == 200 else {}
        return found if len(found) == 2 else None

    def since(self) -> float | None:
        end = self.read()
        if self.start is None or end is None or end[b"count"] <= self.start[b"count"]:
            return None
        return (end[b"sum"] - self.start[b"sum"]) / (end[b"count"] - self.start[b"count"])


def measure_echo(served: Served, seconds: float, warmup: int) -> Measure:
    client = Client(served.port)
    try:
        for _ in range(warmup):
            client.json("POST", "/echo", ECHO_BODY)
        latencies: list[float] = []
        in_window = 0
        cpu = tree_cpu(served.pid)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            t = time.perf_counter()
            status, raw = client.call("POST", "/echo", ECHO_BODY)
            latencies.append(time.perf_counter() - t)
            in_window += time.monotonic() <= deadline
            if status != 200 or json.loads(raw) != ECHO_BODY:
                raise BenchError(f"the echo answered {status}: {raw[:200]!r}")
        return summarise(latencies, in_window, seconds, len(latencies), tree_cpu(served.pid) - cpu, None, None)
    finally:
        client.close()


@dataclass
class ReadTable:
    table_id: str
    head: int
    rounds: list[int] = field(default_factory=list)


def build_read_table(served: Served, events: int, seed: int) -> ReadTable:
    """A table with more than a page of events and many finished rounds, played over HTTP."""
    player = Player(served.port, seed)
    try:
        player.open()
        while player.state["version"] < events:
            player.step(None)
        rounds = [r["round"] for r in player.client.json("GET", f"/tables/{player.table}/rounds?limit=1000")["rounds"]]
    finally:
        player.client.close()
    if not rounds:
        raise BenchError(f"the read table finished no round in {events} events")
    progress(f"read table: {player.state['version']} events, {len(rounds)} finished rounds")
    return ReadTable(player.table, player.state["version"], rounds)


def measure_reads(served: Served, table: ReadTable, seconds: float, seed: int) -> Measure:
    """The four reads in turn, one client, for ``seconds``: p50 and p95 of each."""
    rng = random.Random(seed)
    client = Client(served.port)
    paths: dict[str, Callable[[], str]] = {
        "state": lambda: f"/tables/{table.table_id}",
        "events page": lambda: f"/tables/{table.table_id}/events?after={rng.randint(0, table.head - 100)}&limit=100",
        "round audit": lambda: f"/tables/{table.table_id}/rounds/{rng.choice(table.rounds)}",
        "tables listing": lambda: "/tables",
    }
    samples: dict[str, list[float]] = {k: [] for k in READS}
    try:
        for kind in READS:  # fills this worker's caches, as a table in play has them
            client.json("GET", paths[kind]())
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for kind in READS:
                path = paths[kind]()
                t = time.perf_counter()
                status, raw = client.call("GET", path)
                samples[kind].append(time.perf_counter() - t)
                if status != 200:
                    raise BenchError(f"GET {path} answered {status}: {raw[:300].decode(errors='replace')}")
    finally:
        client.close()
    out: Measure = {}
    for kind, values in samples.items():
        out[f"{kind} p50"] = percentile(values, 50) * 1000
        out[f"{kind} p95"] = percentile(values, 95) * 1000
        out[f"{kind} n"] = float(len(values))
    return out


class Tally(Aggregate):
    """The bare library's aggregate: a counter whose every step is an event."""

    def __init__(self) -> None:
        self.total = 0

    @event("Counted")
    def count(self, amount: int) -> None:
        self.total += amount


class Tallies(Application):
    pass


def library_worker(env: dict[str, str], ready: Any, go: Any, results: Any, done: Any, warmup: int) -> None:
    """One process of the bare library: a cached get, five events, a save, as fast as it can."""
    os.environ["PGAPPNAME"] = env["PGAPPNAME"]  # libpq reads it: the monitor finds this process's backends
    app = None
    try:
        app = Tallies(env=env)
        tally = Tally()
        app.save(tally)

        def command() -> float:
            t = time.perf_counter()
            aggregate = app.repository.get(tally.id)
            for _ in range(EVENTS_PER_COMMAND):
                aggregate.count(1)
            app.save(aggregate)
            return time.perf_counter() - t

        for _ in range(warmup):
            command()
        ready.put(None)
        deadline = go.get(timeout=120)
        cpu = time.process_time()
        latencies: list[float] = []
        in_window = 0
        while time.monotonic() < deadline:
            latencies.append(command())
            in_window += time.monotonic() <= deadline
        results.put({"latencies": latencies, "in_window": in_window, "cpu": time.process_time() - cpu})
        done.wait(60)  # the monitor reads this process's backends before they close
    except BaseException as exc:  # noqa: BLE001
        ready.put(repr(exc))
        results.put({"error": repr(exc)})
    finally:
        if app is not None:
            app.close()


def measure_library(processes: int, seconds: float, env: dict[str, str], backends: Backends | None, warmup: int) -> Measure:
    ctx = multiprocessing.get_context("spawn")
    ready, go, results, done = ctx.Queue(), ctx.Queue(), ctx.Queue(), ctx.Event()
    workers = [ctx.Process(target=library_worker, args=(env, ready, go, results, done, warmup), daemon=True)
               for _ in range(processes)]
    try:
        for w in workers:
            w.start()
        for _ in workers:
            failure = ready.get(timeout=START_TIMEOUT)
            if failure is not None:
                raise BenchError(f"a library process failed: {failure}")
        pg_before = backends.snapshot(env["PGAPPNAME"]) if backends else None
        deadline = time.monotonic() + seconds
        for _ in workers:
            go.put(deadline)
        reports = [results.get(timeout=seconds + START_TIMEOUT) for _ in workers]
        pg = Backends.spent(pg_before, backends.snapshot(env["PGAPPNAME"])) if backends else None
    finally:
        done.set()
        for w in workers:
            w.join(timeout=15)
            if w.is_alive():
                w.terminate()
                w.join()
        for q in (ready, go, results):
            q.close()
            q.join_thread()
    errors = [r["error"] for r in reports if "error" in r]
    if errors:
        raise BenchError(f"a library process failed: {errors[0]}")
    latencies = [x for r in reports for x in r["latencies"]]
    return summarise(latencies, sum(r["in_window"] for r in reports), seconds, len(latencies),
                     sum(r["cpu"] for r in reports), pg, None)


def pgbench_env(schema: str, appname: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"PGHOST": PG["host"], "PGPORT": PG["port"], "PGUSER": PG["user"], "PGDATABASE": PG["dbname"],
                "PGOPTIONS": f"-c search_path={schema}", "PGAPPNAME": appname})
    if PG_PASSWORD:
        env["PGPASSWORD"] = PG_PASSWORD
    return env


def measure_pgbench(clients: int, seconds: float, env: dict[str, str]) -> Measure:
    argv = ["pgbench", "-b", "tpcb-like", "-c", str(clients), "-j", str(clients), "-T", str(max(1, round(seconds)))]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=seconds + 120, check=False)
    tps = re.search(r"^tps = ([\d.]+)", done.stdout, re.M)
    latency = re.search(r"^latency average = ([\d.]+) ms", done.stdout, re.M)
    if done.returncode != 0 or tps is None:
        raise BenchError(f"pgbench failed ({done.returncode}): {done.stderr[-1000:]}")
    return {"rate": float(tps.group(1)), "p50": None, "p95": None, "cpu": None, "pg cpu": None, "client cpu": None,
            "refused": None, "latency average": float(latency.group(1)) if latency else None}


# --- the run ----------------------------------------------------------------------------------------------


@dataclass
class Run:
    args: argparse.Namespace
    configs: list[Config]
    tmp: Path
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    schemas: list[str] = field(default_factory=list)
    zametano_pg: dict[str, str] | None = None
    library_env: dict[str, str] | None = None
    pgbench: dict[str, str] | None = None
    backends: Backends | None = None
    servers: Servers | None = None
    read_tables: dict[str, ReadTable] = field(default_factory=dict)  # by server: each revision has its own store
    against: Against | None = None
    results: dict[str, list[Measure | None]] = field(default_factory=dict)

    @property
    def warmup(self) -> int:
        return 2 if self.args.quick else WARMUP

    def schema(self, what: str) -> str:
        name = f"zametano_bench_{what}_{self.run_id}"
        with pg_connect(autocommit=True, connect_timeout=3) as conn:
            conn.execute(f"CREATE SCHEMA {name}")
        self.schemas.append(name)
        return name

    def setup(self) -> None:
        if any((c.server or "").rstrip("@").endswith("-granian") for c in self.configs) and not granian_installed():
            raise SystemExit("error: granian is not installed (pip install granian into .venv, for the measurement "
                             "only); leave the granian configurations out with --only")
        kinds = {c.kind for c in self.configs}
        needs_pg = bool(kinds & {"pgbench", "library"}) or any((c.server or "").startswith("pg-") for c in self.configs)
        if needs_pg:
            try:
                self.backends = Backends()
            except Exception as exc:  # noqa: BLE001
                raise SystemExit(f"error: PostgreSQL not reachable at {PG['host']}:{PG['port']} ({exc}); "
                                 "set POSTGRES_HOST/PORT/USER/PASSWORD/DBNAME, or --only echo,sqlite") from None
        base = {"POSTGRES_HOST": PG["host"], "POSTGRES_PORT": PG["port"], "POSTGRES_USER": PG["user"],
                "POSTGRES_PASSWORD": PG_PASSWORD, "POSTGRES_DBNAME": PG["dbname"]}
        if any((c.server or "").startswith("pg-") for c in self.configs):
            self.zametano_pg = {"PERSISTENCE_MODULE": "eventsourcing.postgres", **base,
                                "POSTGRES_SCHEMA": self.schema("http")}
        if "library" in kinds:
            self.library_env = {"PERSISTENCE_MODULE": "eventsourcing.postgres", **base, "POSTGRES_SCHEMA": self.schema("library"),
                                "AGGREGATE_CACHE_MAXSIZE": "1000", "CREATE_TABLE": "n",
                                "PGAPPNAME": f"zametano-bench-library-{self.run_id}"}
            Tallies(env={**self.library_env, "CREATE_TABLE": "y"}).close()  # once, before processes race to
        if "pgbench" in kinds:
            if shutil.which("pgbench") is None:
                raise SystemExit("error: pgbench is not installed (postgresql-client); leave it out with --only")
            self.pgbench = pgbench_env(self.schema("pgbench"), f"zametano-bench-pgbench-{self.run_id}")
            progress(f"pgbench: initialising scale {PGBENCH_SCALE}")
            init = subprocess.run(["pgbench", "-i", "-q", "-s", str(PGBENCH_SCALE)], env=self.pgbench,
                                  capture_output=True, text=True, timeout=300, check=False)
            if init.returncode != 0:
                raise BenchError(f"pgbench -i failed: {init.stderr[-1000:]}")
        if self.args.against:
            self.against = Against.check_out(self.args.against, self.tmp)
            if self.zametano_pg is not None:
                self.against.schema = self.schema("against")
        self.servers = Servers(self.tmp, self.zametano_pg, f"zametano-bench-http-{self.run_id}", self.against)

    def teardown(self) -> None:
        if self.servers is not None:
            self.servers.stop()
        if self.against is not None:
            self.against.remove()
        if self.backends is not None:
            self.backends.close()
        for schema in self.schemas:
            try:
                drop_schema(schema)
            except Exception as exc:  # noqa: BLE001
                progress(f"could not drop schema {schema}: {exc}")

    def measure(self, config: Config, round_index: int) -> Measure:
        seconds, seed = self.args.seconds, self.args.seed * 100 + round_index
        if config.kind == "pgbench":
            assert self.pgbench is not None
            return measure_pgbench(config.clients, seconds, self.pgbench)
        if config.kind == "library":
            assert self.library_env is not None
            return measure_library(config.clients, seconds, self.library_env, self.backends, self.warmup * 4)
        assert self.servers is not None and config.server is not None
        served = self.servers.ensure(config.server)
        if config.kind == "echo":
            return measure_echo(served, seconds, self.warmup * 4)
        if config.kind == "reads":
            table = self.read_tables.get(config.server)
            if table is None:
                events = 120 if self.args.quick else READ_TABLE_EVENTS
                progress(f"read table: playing {events} events")
                table = self.read_tables[config.server] = build_read_table(served, events, self.args.seed)
            return measure_reads(served, table, seconds, seed)
        return measure_http(served, config.clients, seconds, seed, self.backends, self.servers.appname, self.warmup)


def describe(config: Config, m: Measure) -> str:
    if config.kind == "reads":
        return ", ".join(f"{k} p50 {m[f'{k} p50']:.1f} ms" for k in READS)
    unit = "transactions/s" if config.kind == "pgbench" else "requests/s" if config.kind == "echo" else "commands/s"
    text = f"{m['rate']:,.0f} {unit}"
    if m.get("p50") is not None:
        text += f", p50 {m['p50']:.1f} ms, p95 {m['p95']:.1f} ms"
    if m.get("latency average") is not None:
        text += f", latency average {m['latency average']:.2f} ms"
    if m.get("cpu") is not None:
        text += f", CPU {m['cpu']:.2f} ms each"
    if m.get("per transaction") is not None:
        text += f", {m['per transaction']:.2f} commands a transaction"
    if m.get("refused"):
        text += f", {m['refused']:.0f} refused"
    return text


def medians(run: Run) -> dict[str, Measure]:
    out: dict[str, Measure] = {}
    for name, rounds in run.results.items():
        measured = [m for m in rounds if m is not None]
        keys = dict.fromkeys(k for m in measured for k in m)
        out[name] = {k: median_of([m.get(k) for m in measured]) for k in keys}
        rates = [m["rate"] for m in measured if m.get("rate") is not None]
        out[name]["rate min"] = min(rates) if rates else None  # type: ignore[type-var]
        out[name]["rate max"] = max(rates) if rates else None  # type: ignore[type-var]
    return out


def spread(m: Measure) -> str:
    if m.get("rate min") is None:
        return "-"
    return f"{m['rate min']:,.0f}-{m['rate max']:,.0f}"


def throughput_table(med: dict[str, Measure], names: list[str]) -> str:
    rows = []
    for name in names:
        if name not in med:
            continue
        m = med[name]
        unit = "transactions" if name.startswith("pgbench") else "requests" if name == "echo" else "commands"
        rows.append([BY_NAME[name].label, f"{number(m['rate'], 0)} {unit}", spread(m), number(m.get("p50"), 2),
                     number(m.get("p95"), 2), number(m.get("cpu"), 2), number(m.get("pg cpu"), 2),
                     number(m.get("client cpu"), 2), number(m.get("per transaction"), 2), number(m.get("refused"), 0)])
    return markdown_table(["configuration", "per second", "range over rounds", "p50 (ms)", "p95 (ms)",
                           "CPU (ms/op)", "of which PostgreSQL", "load generator CPU (ms/op)", "commands a transaction",
                           "refused"], rows)


def curve_table(med: dict[str, Measure]) -> str:
    rows = []
    for name in ("tables-1", "tables-4", "tables-16", "tables-64"):
        if name in med:
            m = med[name]
            rows.append([str(BY_NAME[name].clients), number(m["rate"], 0), spread(m), number(m["p50"], 1), number(m["p95"], 1),
                         number(m.get("cpu"), 2), number(m.get("per transaction"), 2)])
    return markdown_table(["tables played at once", "commands/s", "range over rounds", "p50 (ms)", "p95 (ms)",
                           "CPU (ms/command)", "commands a transaction"], rows)


def reads_table(med: dict[str, Measure]) -> str:
    m = med.get("reads")
    if not m:
        return ""
    rows = [[kind, number(m[f"{kind} p50"], 2), number(m[f"{kind} p95"], 2), number(m[f"{kind} n"], 0)] for kind in READS]
    return markdown_table(["read (1 worker, 1 client)", "p50 (ms)", "p95 (ms)", "requests (median per round)"], rows)


def get(med: dict[str, Measure], name: str, key: str) -> float | None:
    return med.get(name, {}).get(key)


def targets(med: dict[str, Measure], reference: tuple[float, float] | None) -> list[Target]:
    library_p50, echo_p50 = get(med, "library-1", "p50"), get(med, "echo", "p50")
    floor = None if library_p50 is None or echo_p50 is None else library_p50 + echo_p50
    sqlite_rate = sqlite_p50 = None
    if reference is not None:
        sqlite_rate, sqlite_p50 = reference
    missing_reference = "no reference yet: this run records it"
    library_cpu, echo_cpu = get(med, "library-4", "cpu"), get(med, "echo", "cpu")
    cpu_floor = None if library_cpu is None or echo_cpu is None else library_cpu + echo_cpu
    return [
        Target("HTTP 4 workers, 8 clients / library 4 processes: commands/s",
               get(med, "http-4w-8c", "rate"), get(med, "library-4", "rate"), 0.8, True),
        Target("(stretch) HTTP 4 workers, 8 clients / library 4 processes: commands/s",
               get(med, "http-4w-8c", "rate"), get(med, "library-4", "rate"), 1.0, True),
        Target("(stretch) HTTP 4 workers, 8 clients, commands/s / pgbench 4 clients, transactions/s",
               get(med, "http-4w-8c", "rate"), get(med, "pgbench-4", "rate"), 0.5, True),
        Target("HTTP 4 workers: CPU per command / (library 4 processes + Flask echo)",
               get(med, "http-4w-8c", "cpu"), cpu_floor, 1.0, False, "ms"),
        Target("HTTP p50, 1 worker, 1 client / (library p50, 1 process + Flask echo p50)",
               get(med, "http-1w-1c", "p50"), floor, 1.2, False, "ms"),
        Target("64 tables / 16 tables: commands/s", get(med, "tables-64", "rate"), get(med, "tables-16", "rate"), 1.0, True),
        Target("round audit p50 / the earlier 28 ms", get(med, "reads", "round audit p50"), EARLIER["round audit"], 0.5,
               False, "ms"),
        Target("events page (100) p50 / the earlier 11.6 ms", get(med, "reads", "events page p50"), EARLIER["events page"],
               0.5, False, "ms"),
        Target("SQLite 2 workers, 4 clients / the SQLite reference: commands/s", get(med, "sqlite-2w-4c", "rate"),
               sqlite_rate, 1.0, True, missing=missing_reference),
        Target("SQLite 2 workers, 4 clients / the SQLite reference: p50", get(med, "sqlite-2w-4c", "p50"), sqlite_p50, 1.0,
               False, "ms", missing=missing_reference),
    ]


def read_reference(path: Path) -> tuple[float, float] | None:
    if not path.exists():
        return None
    found = REFERENCE.search(path.read_text())
    return None if found is None else (float(found.group(1).replace(",", "")), float(found.group(2)))


def versions(backends: Backends | None) -> str:
    parts = [f"Python {platform.python_version()}"]
    for dist in ("eventsourcing", "flask", "flask-smorest", "marshmallow", "gunicorn", "psycopg", "psycopg-pool"):
        try:
            parts.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            pass
    if backends is not None:
        parts.append(f"PostgreSQL {backends.conn.execute('SHOW server_version').fetchone()[0].split()[0]}")
    parts.append(f"SQLite {sqlite3.sqlite_version}")
    return ", ".join(parts)


def machine() -> str:
    model = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        kib = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal"))
        memory = f"{kib / 1024 / 1024:.1f} GiB"
    except (OSError, StopIteration):
        memory = "unknown memory"
    cores = os.cpu_count() or 1
    return f"{cores} core{'s' if cores != 1 else ''} ({model}), {memory}"


@contextmanager
def temporary() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="zametano-bench-http-") as tmp:
        yield Path(tmp)


def main(argv: list[str] | None = None) -> int:
    parser = Parser(description=__doc__)
    parser.add_argument("--rounds", type=whole(1), default=3, help="times every configuration runs (interleaved)")
    parser.add_argument("--seconds", type=seconds(0.1), default=5.0, help="timed seconds per measurement")
    parser.add_argument("--quick", action="store_true", help="a short smoke run: 1 round of 1.5 s; docs not written")
    parser.add_argument("--only", help="configurations or groups, comma-separated; docs not written")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--output", default=str(ROOT / "docs" / "benchmarks.md"))
    parser.add_argument("--no-docs", action="store_true", help="print the tables, leave docs/benchmarks.md alone")
    parser.add_argument("--new-reference", action="store_true",
                        help="record this run's SQLite figures as the reference later runs are held to")
    parser.add_argument("--note", default="", help="a sentence for the docs about the run (what else ran on the machine)")
    parser.add_argument("--against", metavar="REV",
                        help="also run each Zametano configuration on this git revision (a lever's A/B); docs not written")
    parser.add_argument("--serve-echo", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--serve-granian", type=int, nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_echo:
        return serve_echo(args.serve_echo)
    if args.serve_granian:
        return serve_granian(*args.serve_granian)
    if args.quick:
        args.rounds, args.seconds = 1, min(args.seconds, 1.5)
    if args.rounds < 1 or args.seconds <= 0:
        raise SystemExit("error: --rounds at least 1, --seconds above 0")
    configs = select(args.only)
    if args.against:
        configs = twins(configs)
    output = Path(args.output)
    began, load_before = time.monotonic(), os.getloadavg()
    with temporary() as tmp:
        run = Run(args, configs, tmp)
        try:
            run.setup()
            names = [c.name for c in configs]
            run.results = {name: [None] * args.rounds for name in names}
            for r in range(args.rounds):
                order = rotated(names, r, args.rounds)
                for i, name in enumerate(order, 1):
                    config = BY_NAME[name]
                    m = run.measure(config, r)
                    run.results[name][r] = m
                    progress(f"round {r + 1}/{args.rounds} [{i}/{len(order)}] {name}: {describe(config, m)}")
            library_versions = versions(run.backends)
        finally:
            run.teardown()
    elapsed = time.monotonic() - began
    load_after = os.getloadavg()

    med = medians(run)
    previous = read_reference(output)
    reference = None if args.new_reference else previous
    goals = targets(med, reference)
    throughput = throughput_table(med, [c.name for c in configs if c.group not in ("tables", "reads")])
    curve = curve_table(med) if any(c.group == "tables" for c in configs) else ""
    reads = reads_table(med)
    goals_text = targets_table(goals)
    print(throughput)
    for extra in (curve, reads):
        if extra:
            print()
            print(extra)
    if args.against:
        print()
        print(against_table(med, configs, args.against))
    print()
    print(goals_text)
    print(f"\ntotal run time {elapsed / 60:.1f} minutes; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")

    partial = args.quick or bool(args.only) or bool(args.against)
    if partial or args.no_docs:
        progress("docs/benchmarks.md left as it is" + (" (a partial run)" if partial else ""))
        return 0
    sqlite = med.get("sqlite-2w-4c")
    if reference is None and sqlite and sqlite.get("rate") is not None:
        recorded = (sqlite["rate"], sqlite["p50"])
        recorded_on = datetime.now(timezone.utc).date().isoformat()
    else:
        recorded = reference
        found = re.search(r"SQLite reference: .*?\(recorded ([\d-]+)", output.read_text()) if output.exists() else None
        recorded_on = found.group(1) if found else "earlier"
    write_section(output, SECTION, section(args, elapsed, load_before, load_after, library_versions, med, throughput, curve,
                                           reads, goals_text, recorded, recorded_on))
    progress(f"wrote the section {SECTION[3:]!r} of {output}")
    return 0


def section(args: argparse.Namespace, elapsed: float, load_before: tuple[float, ...], load_after: tuple[float, ...],
            library_versions: str, med: dict[str, Measure], throughput: str, curve: str, reads: str, goals: str,
            reference: tuple[float, float] | None, recorded_on: str) -> str:
    today = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = f"./scripts/bench-http --rounds {args.rounds} --seconds {args.seconds:g}"
    parts = [
        SECTION,
        f"`{command}`, {today}, {elapsed / 60:.1f} minutes. Machine: {machine()}; load average {load_before[0]:.2f} "
        f"before the run and {load_after[0]:.2f} after. {library_versions}.",
        f"Every configuration ran once per round, {args.rounds} rounds in rotated order, {args.seconds:g} s each; the "
        "figures are medians over the rounds (the range is the lowest and highest round). Each client plays its own "
        "4-player, 4-deck Chemin de fer table with random legal commands taken from the state's `expects`, one "
        "command at a time, over one `http.client` connection (kept open by gunicorn's threaded workers; with "
        "`WEB_THREADS=1` its sync workers close it after every response, and each request connects again). A refusal (409, 422) would make the client read the state "
        f"again; the first {WARMUP} commands of each table are not timed. 'eventsourcing alone' is a minimal "
        f"`Application` and `Aggregate` on the same PostgreSQL: a cached get (`AGGREGATE_CACHE_MAXSIZE`), "
        f"{EVENTS_PER_COMMAND} events, a save, in one to four processes. 'Flask echo' is a Flask app that returns "
        "the small JSON body it is posted, under the same gunicorn settings as the service. pgbench runs the "
        f"built-in tpcb-like script at scale {PGBENCH_SCALE} in a schema of its own.",
        ("CPU per operation is user + system time from /proc of the processes that serve (the gunicorn master "
        "and workers, or the library's processes) plus the PostgreSQL backends serving their connections (found "
        "by application name in `pg_stat_activity`), divided by the operations finished; PostgreSQL's background "
        "processes (WAL writer, checkpointer) are not counted, nor is the load generator, shown apart. The "
        f"server, the database and the load generator share the machine's {os.cpu_count() or 1} cores. On a "
        "shared machine CPU per operation moves far less between rounds than throughput and latency, which wait "
        "for whatever else runs. 'Commands a transaction' is how many commands group commit wrote in one "
        "transaction on average over the timed window (the service's own histogram, "
        "`zametano_group_commit_batch_commands` at /metrics). "
        + args.note).strip(),
        throughput,
    ]
    averages = [(BY_NAME[n].clients, m["latency average"]) for n, m in med.items() if m.get("latency average") is not None]
    if averages:
        parts[-1] += "\n\npgbench reports an average latency only: " + ", ".join(
            f"{v:.2f} ms at {c} client{'s' if c != 1 else ''}" for c, v in averages) + "."
    if curve:
        parts += ["Tables played at once against 4 workers on PostgreSQL, one client each:", curve]
    if reads:
        parts += ["Reads at 1 client on PostgreSQL (one table of about "
                  f"{READ_TABLE_EVENTS} events; a random page of 100 events, a random finished round's audit, the "
                  "first page of the tables listing), each in turn:", reads]
    parts += ["Targets:", goals]
    if reference is not None:
        parts.append(f"SQLite reference: {reference[0]:,.1f} commands/s, p50 {reference[1]:.2f} ms (recorded "
                     f"{recorded_on}; 2 workers, 4 clients; later runs are held to it, `--new-reference` replaces it).")
    return "\n\n".join(parts) + "\n"


if __name__ == "__main__":
    sys.exit(main())
