"""Small helpers shared by the tests: deterministic seeds and clocks, stacked shoes, random legal play."""

from __future__ import annotations

import base64
import hashlib
import importlib.machinery
import importlib.util
import subprocess
import sys
import random
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from datetime import datetime, timedelta, timezone
from typing import Any

from cryptography.hazmat.primitives import serialization

from domain.chain import canonical_json
from domain.rounds import Event, RoundMarks, RoundTracker
from domain.table import Table

START = datetime(2026, 11, 29, 20, 15, 3, tzinfo=timezone.utc)
# The PostgreSQL the tests and benchmarks make their schemas in when POSTGRES_* name no other.
POSTGRES_DEFAULTS = {"host": "127.0.0.1", "port": "5432", "user": "postgres", "dbname": "test"}


def postgres_location(env: Mapping[str, str]) -> dict[str, Any]:
    """psycopg.connect's arguments for the PostgreSQL that ``env`` names with the library's own variables
    (POSTGRES_HOST, _PORT, _USER, _PASSWORD, _DBNAME), each unset or empty one taken from POSTGRES_DEFAULTS;
    the password is None (none sent) when empty. Read from os.environ for the tests' server, and from a
    test's persistence env to reach its schema."""
    location: dict[str, Any] = {
        name: env.get(f"POSTGRES_{name.upper()}") or default for name, default in POSTGRES_DEFAULTS.items()
    }
    location["password"] = env.get("POSTGRES_PASSWORD") or None
    return location


class StepClock:
    """A clock that moves a fixed step at every reading: tests name moments exactly."""

    def __init__(self, start: datetime = START, step: timedelta = timedelta(seconds=1)) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> datetime:
        self.now += self.step
        return self.now


class Seeds:
    """Deterministic 32-byte seeds, and (``salt``) deterministic salts for the concealed parts of chain rule 3,
    counted apart so that the seeds are the same whether or not a command draws salts."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)
        self.salts = 0

    def __call__(self) -> bytes:
        return self.rng.randbytes(32)

    def salt(self) -> str:
        self.salts += 1
        return f"{self.salts:032x}"


@contextmanager
def stacked_decks(tops: dict[str, list[str]]) -> Iterator[None]:
    """Each deck named in ``tops`` ("shoe", "banker", "dealer", "lots") is dealt, after its cut, starting
    with the given cards; the rest of it stays as the fair shuffle made it. A rigged deck for stories that
    need particular hands; replays inside the block see the same order."""
    original = Table._deck_order

    def rigged(label: str, seed_hex: str, decks: int, cut: int) -> list[str]:
        cards = original(label, seed_hex, decks, cut)
        if label not in tops:
            return cards
        rest = list(cards)
        for c in tops[label]:
            rest.remove(c)
        return list(tops[label]) + rest

    Table._deck_order = staticmethod(rigged)  # type: ignore[method-assign]
    try:
        yield
    finally:
        Table._deck_order = staticmethod(original)  # type: ignore[method-assign]


def stacked_shoe(top: list[str]):  # type: ignore[no-untyped-def]
    """A Chemin de fer shoe that starts with the given cards."""
    return stacked_decks({"shoe": top})


SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def load_script(name: str, module_name: str) -> Any:
    """A stand-alone script of scripts/ (no .py ending) loaded as a module, so tests can call its functions."""
    loader = importlib.machinery.SourceFileLoader(module_name, str(SCRIPTS / name))
    spec = importlib.util.spec_from_loader(module_name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses look their module up while the class is built
    loader.exec_module(module)
    return module


DEMO = load_script("demo", "zametano_demo")  # its random legal player serves the tests too


def random_args(state: dict[str, Any], expect: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """Random legal fields for one of the commands the state expects, from the bounds ``expects`` gives
    (no knowledge of any game)."""
    return DEMO.fields_for(expect, rng)


def pick(state: dict[str, Any], rng: random.Random) -> tuple[str, str, dict[str, Any]]:
    expect = rng.choice(state["expects"])
    return expect["command"], expect["player"], random_args(state, expect, rng)


def play_service(service: Any, table_id: str, commands: int, rng: random.Random) -> dict[str, Any]:
    """Random legal commands through the service (fewer where the table expects none); the last state."""
    state = service.current_state(table_id)
    for _ in range(commands):
        if not state["expects"]:
            break
        command, player, args = pick(state, rng)
        state = service.execute(table_id, command, player, args)["state"]
    return state


def key_listing(private: Any, not_after: str | None = None) -> dict[str, Any]:
    """An Ed25519 key as GET /keys lists it (the receipt format): its id and its raw public key, base64url."""
    raw = private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return {"key_id": hashlib.sha256(raw).hexdigest()[:16], "algorithm": "Ed25519",
            "public_key": base64.urlsafe_b64encode(raw).rstrip(b"=").decode(), "not_before": None,
            "not_after": not_after}


def sign_receipt(private: Any, fields: dict[str, Any], key_id: str | None = None) -> dict[str, Any]:
    """A receipt as the receipt format makes one: the fields and the key's id, signed as canonical JSON."""
    unsigned = {**fields, "key_id": key_id or key_listing(private)["key_id"]}
    signature = private.sign(canonical_json(unsigned).encode("utf-8"))
    return {**unsigned, "signature": base64.urlsafe_b64encode(signature).rstrip(b"=").decode()}


def check_exposure(host: str) -> str | None:
    """api/server.py's check of gunicorn's bind addresses, for one host."""
    from api.server import check_binds

    return check_binds([f"[{host.strip('[]')}]:0" if ":" in host else f"{host}:0"])


def queued(committer: Any) -> int:
    """Commands handed to a group committer and waiting for a batch (not those being written)."""
    with committer._changed:
        return len(committer._queue)


def rounds_of(marks: RoundMarks, events: list[Event]) -> list[dict[str, Any]]:
    """Every finished round of a whole log."""
    tracker = RoundTracker(marks)
    out = [r for e in events for r in tracker.feed(e)]
    return out + tracker.flush()


def refused_start(data_dir: Path, signing_key_file: Path) -> subprocess.CompletedProcess[str]:
    """How the server ends when started on an in-memory store with this signing key file: for the start-up
    refusals, which must come before it binds (port 1 is never reached)."""
    env = {"PATH": "/usr/bin:/bin", "PERSISTENCE_MODULE": "eventsourcing.popo", "ZAMETANO_DATA_DIR": str(data_dir),
           "ZAMETANO_SIGNING_KEY_FILE": str(signing_key_file)}
    root = Path(__file__).resolve().parents[1]
    return subprocess.run([sys.executable, "-m", "api.server", "--port", "1"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)
