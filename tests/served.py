"""The real app served in this process over a real socket (the standard library's WSGI server), tables played
on it with random legal moves, and copies of the played store: what the tests of the stand-alone scripts
run against."""

from __future__ import annotations

import json
import logging
import random
import shutil
import sqlite3
import threading
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest

from api.app import create_app
from service.application import TablesService
from service.atrest import KEY_FILE as CIPHER_KEY_FILE
from service.config import load
from service.seeds import KEY_FILE as SEED_KEY_FILE
from service.signing import KEY_FILE, KEYRING_FILE
from tests.helpers import Seeds, StepClock, load_script, pick


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def sqlite_env(db: Path, **extra: str) -> dict[str, str]:
    """The settings of a service on the SQLite file ``db``, its signing key and keyring beside it."""
    return {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(db), "ZAMETANO_DATA_DIR": str(db.parent),
            **extra}


@contextmanager
def serving(store: Path | dict[str, str], tokens: str = "", wrap: Callable[[Any], Any] | None = None,
            steady: bool = False) -> Iterator[str]:
    """The app over the SQLite file ``store`` (or the settings ``store``), served on a free port; yields its
    base URL. ``steady``: the clock and the seeds of the shuffles are the tests' own, so that the same
    commands make the same log."""
    env = dict(store) if isinstance(store, dict) else sqlite_env(store)
    if tokens:
        env["ZAMETANO_TOKENS"] = tokens
    settings = load(env)
    app = create_app(settings, TablesService(settings, clock=StepClock(), new_seed=Seeds()) if steady else None)
    # The server shares the process, and so stderr, with the scripts under test, whose own stderr the tests
    # read: only its warnings and errors are let through (a 5xx still shows).
    logger = logging.getLogger("zametano")
    level, logger.level = logger.level, logging.WARNING
    httpd = make_server("127.0.0.1", 0, wrap(app) if wrap else app, handler_class=QuietHandler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
        app.extensions["zametano"].close()
        logger.setLevel(level)


def call(method: str, url: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def play(base: str, opening: dict[str, Any], done: Callable[[list[dict[str, Any]]], bool], seed: int) -> str:
    """Opens a table and plays random legal commands until `done(every event so far)`."""
    rng = random.Random(seed)
    state = call("POST", f"{base}/tables", opening)
    table_id, events = state["table_id"], []
    for _ in range(4000):
        command, player, args = pick(state, rng)
        result = call("POST", f"{base}/tables/{table_id}/commands", {"command": command, "player": player, **args})
        state = result["state"]
        events += result["events"]
        if done(events):
            return table_id
    raise AssertionError(f"{opening['game']}: the table never reached what the tests need")


def a_shoe_was_revealed(events: list[dict[str, Any]]) -> bool:
    """Chemin de fer: a whole shoe (not only the lots for the seats) has been dealt and revealed."""
    return any(e["type"] == "ShoeRevealed" and e["data"]["shoe"] > 1 for e in events) and sum(
        e["type"] == "CoupSettled" for e in events) >= 5


def a_game_ended(events: list[dict[str, Any]]) -> bool:
    return any(e["type"] == "GameEnded" for e in events)


def events_of(base: str, table_id: str) -> list[dict[str, Any]]:
    events, after = [], 0
    while after is not None:
        page = call("GET", f"{base}/tables/{table_id}/events?after={after}&limit=1000")
        events += page["events"]
        after = page["next_after"]
    return events


@dataclass
class Played:
    """An SQLite store (snapshots every 10 events) holding a Chemin de fer table played past the reveal of a
    whole shoe, with payments, and a card lottery table played to its end; the same log at every run."""

    db: Path
    chemin_de_fer: str
    lottery: str


SNAPSHOT_INTERVAL = "10"


def play_tables(base: str) -> tuple[str, str]:
    """The two tables of `Played`, played on the service at ``base``: (Chemin de fer, card lottery)."""
    chemin_de_fer = play(base, {"game": "chemin-de-fer", "players": ["anna", "boris", "vera"]},
                         a_shoe_was_revealed, seed=11)
    lottery = play(base, {"game": "card-lottery", "players": ["olga", "ivan", "anna", "boris"],
                          "banker": "olga", "dealer": "ivan"}, a_game_ended, seed=12)
    return chemin_de_fer, lottery


def play_store(db: Path) -> Played:
    with serving(sqlite_env(db, SNAPSHOT_INTERVAL=SNAPSHOT_INTERVAL), steady=True) as base:
        return Played(db, *play_tables(base))


def copy_store(db: Path, folder: Path) -> Path:
    """A copy of the SQLite store ``db`` in ``folder``, with the signing key and keyring kept beside it."""
    copy = folder / db.name
    with closing(sqlite3.connect(db)) as source, closing(sqlite3.connect(copy)) as target:
        source.backup(target)
    for name in (KEY_FILE, KEYRING_FILE, SEED_KEY_FILE, CIPHER_KEY_FILE):
        shutil.copy(db.parent / name, folder / name)
    return copy


# --- running scripts/audit and reading what it prints ------------------------------------------------

audit = load_script("audit", "zametano_audit")
HEADER = ("table", "game", "events", "revealed", "rounds", "chain", "shoes", "server", "heads", "result")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = audit.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def rows(out: str) -> dict[str, dict[str, str]]:
    """The table's rows by (short) table id: {column: cell}."""
    lines = out.splitlines()
    assert tuple(lines[0].split()) == HEADER, out
    starts = [lines[0].index(name) for name in HEADER]
    found = {}
    for line in lines[1:]:
        if not line.strip():
            break
        cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], None])]
        found[cells[0]] = dict(zip(HEADER, cells))
    return found


def row_of(out: str, table_id: str) -> dict[str, str]:
    matching = [row for short, row in rows(out).items() if table_id.startswith(short)]
    assert len(matching) == 1, out
    return matching[0]


def problem_lines(out: str, table_id: str) -> list[str]:
    """The problems listed under `table_id`, one line each: source, version, message."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(table_id))
    taken = []
    for line in lines[start + 1 :]:
        if not line.startswith("    "):
            break
        taken.append(line.strip())
    return taken
