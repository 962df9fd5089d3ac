"""Sealed seeds: the database alone yields no unrevealed seed and names no undealt card (service/seeds.py).

The acceptance test reads everything the store holds after part of a shoe is dealt (every column of every
row of every table, and on SQLite the database files themselves), decodes it every way it can (raw bytes,
hexadecimal, base64 and base64url, at every offset) and hashes every 32-byte value it finds: none may hash
to the commitment of a shoe not yet revealed. It must find the seeds the log has revealed (so it can see a
seed where there is one), and no run of the next undealt cards, whatever separates them.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import random
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from service.application import TablesService
from service.config import ConfigError, load
from service.replay import table_uuid
from tests.helpers import Seeds, StepClock, pick
from tests.tampering import store_cipher

SEED_BYTES = 32
NEXT_CARDS = 4


def values_in(blob: bytes) -> set[bytes]:
    """Every 32-byte value ``blob`` holds: raw at every offset, and inside every hexadecimal, base64 or
    base64url run, decoded at every offset."""
    found = {blob[i:i + SEED_BYTES] for i in range(max(0, len(blob) - SEED_BYTES + 1))}
    for run in re.findall(rb"[0-9a-fA-F]{64,}", blob):
        for i in range(len(run) - 63):
            found.add(binascii.unhexlify(run[i:i + 64]))
    for run in re.findall(rb"[A-Za-z0-9+/_-]{43,}={0,2}", blob):
        run = run.rstrip(b"=")
        for start in range(4):
            part = run[start:]
            part = part[: len(part) - len(part) % 4] if len(part) % 4 == 1 else part
            for decode in (base64.b64decode, base64.urlsafe_b64decode):
                try:
                    raw = decode(part + b"=" * (-len(part) % 4))
                except (binascii.Error, ValueError):
                    continue
                found.update(raw[i:i + SEED_BYTES] for i in range(max(0, len(raw) - SEED_BYTES + 1)))
    return found


def hashes_in(blobs: list[bytes]) -> set[str]:
    return {hashlib.sha256(v).hexdigest() for blob in blobs for v in values_in(blob)}


def as_bytes(value: Any) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return str(value).encode("utf-8")


def sqlite_blobs(db: Path) -> list[bytes]:
    blobs = [p.read_bytes() for p in db.parent.glob(db.name + "*") if p.is_file()]
    with sqlite3.connect(db) as conn:
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            for row in conn.execute(f'SELECT * FROM "{name}"'):
                blobs += [as_bytes(v) for v in row if v is not None]
    return blobs


def postgres_blobs(env: dict[str, str]) -> list[bytes]:
    import psycopg

    blobs: list[bytes] = []
    with psycopg.connect(host=env["POSTGRES_HOST"], port=env["POSTGRES_PORT"], user=env["POSTGRES_USER"],
                         password=env["POSTGRES_PASSWORD"], dbname=env["POSTGRES_DBNAME"]) as conn:
        names = conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                             (env["POSTGRES_SCHEMA"],)).fetchall()
        for (name,) in names:
            for row in conn.execute(f'SELECT * FROM "{env["POSTGRES_SCHEMA"]}"."{name}"'):
                blobs += [as_bytes(v) for v in row if v is not None]
    return blobs


def partly_dealt(env: dict[str, str]) -> tuple[TablesService, str]:
    """A Chemin de fer table whose seats were drawn (the lots revealed) and whose shoe is part dealt."""
    service = TablesService(load(env), clock=StepClock(), new_seed=Seeds())
    table_id = service.open_table("chemin-de-fer", ["anna", "boris", "clara"], {})["table_id"]
    state, rng = service.current_state(table_id), random.Random(7)
    while not (state["shoe"]["number"] == 2 and 8 <= state["shoe"]["dealt"]):
        command, player, args = pick(state, rng)
        state = service.execute(table_id, command, player, args)["state"]
    return service, table_id


def secrets_of(service: TablesService, table_id: str) -> tuple[dict[str, str], dict[str, str], list[list[str]]]:
    """The commitments of the revealed and unrevealed shoes, and the next undealt cards of each unrevealed one."""
    events = list(service.iter_events(table_id))
    revealed = {e["data"]["shoe"] for e in events if e["type"] == "ShoeRevealed"}
    shuffled = {e["data"]["shoe"]: e["data"]["commitment"] for e in events if e["type"] == "ShoeShuffled"}
    table = service.repository.get(table_uuid(table_id))
    upcoming = [deck["cards"][deck["dealt"]:deck["dealt"] + NEXT_CARDS] for deck in table.decks.values()
                if deck["number"] not in revealed]
    return ({n: c for n, c in shuffled.items() if n in revealed},
            {n: c for n, c in shuffled.items() if n not in revealed}, upcoming)


def opened(blobs: list[bytes], cipher: Any) -> list[bytes]:
    """Every blob that ``cipher`` decrypts (as stored, or base64 as the read model keeps it), decrypted."""
    found = []
    for blob in blobs:
        for decode in (bytes, base64.b64decode):
            try:
                found.append(cipher.decrypt(decode(blob)))
            except ValueError:  # binascii.Error too
                continue
    return found


def named_in(blobs: list[bytes], cards: list[str]) -> bool:
    pattern = re.compile(rb"\W{0,8}".join(re.escape(c.encode()) for c in cards))
    return any(pattern.search(blob) for blob in blobs)


@pytest.mark.parametrize("module", ["sqlite", "postgres"])
def test_no_stored_byte_yields_an_unrevealed_seed_or_names_an_undealt_card(module, tmp_path, request):
    if module == "sqlite":
        env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "ZAMETANO_DATA_DIR": str(tmp_path / "var")}
    else:
        env = {**request.getfixturevalue("postgres_env"), "ZAMETANO_DATA_DIR": str(tmp_path / "var")}
    env["SNAPSHOT_INTERVAL"] = "3"  # snapshots of the table's state, with its decks, are stored too
    service, table_id = partly_dealt(env)
    service.verify(table_id)  # the read model indexed too
    revealed, unrevealed, upcoming = secrets_of(service, table_id)
    blobs = sqlite_blobs(tmp_path / "var" / "zametano.sqlite") if module == "sqlite" else postgres_blobs(env)
    service.close()
    # The store is encrypted at rest by default; even a reader holding its cipher key finds no unrevealed seed.
    blobs += opened(blobs, store_cipher(env))
    assert revealed and unrevealed and all(len(cards) == NEXT_CARDS for cards in upcoming)
    found = hashes_in(blobs)
    assert set(revealed.values()) <= found  # the search sees a seed where the log publishes one
    assert not set(unrevealed.values()) & found, "an unrevealed seed can be read from the database"
    assert not any(named_in(blobs, cards) for cards in upcoming), "undealt cards can be named from the database"


def test_the_search_finds_a_seed_raw_in_hexadecimal_or_in_base64_wherever_it_lies():
    seed = bytes(range(7, 7 + SEED_BYTES))
    target = hashlib.sha256(seed).hexdigest()
    for blob in (b"xx" + seed + b"yy", b'{"seed": "' + seed.hex().encode() + b'"}',
                 b"k=" + base64.b64encode(b"a" + seed), b"z" + base64.urlsafe_b64encode(b"bc" + seed)):
        assert target in hashes_in([blob]), blob
    assert target not in hashes_in([b"nothing here" * 10])
    assert named_in([json.dumps(["Ah", "7c", "Kd", "2s"]).encode()], ["Ah", "7c", "Kd", "2s"])


def test_the_stored_seed_is_sealed_and_opens_again_with_the_seed_key_to_the_same_state(tmp_path):
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "ZAMETANO_DATA_DIR": str(tmp_path), "SNAPSHOT_INTERVAL": "3"}
    service, table_id = partly_dealt(env)
    state = service.current_state(table_id)
    service.close()
    with sqlite3.connect(tmp_path / "zametano.sqlite") as conn:
        seeds = [json.loads(store_cipher(env).decrypt(bytes(s)))["seed"] for (s,) in conn.execute(
            "SELECT state FROM stored_events WHERE topic LIKE '%ShoeShuffled'")]
    assert seeds and all(s.startswith("sealed:v1:") for s in seeds)
    reopened = TablesService(load(env))
    assert reopened.current_state(table_id) == state and reopened.verify(table_id)["ok"]
    reopened.close()


def test_a_rotated_seed_key_seals_new_shoes_while_the_old_key_still_opens_old_ones(tmp_path):
    from service.seeds import KEY_FILE, rotate

    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "ZAMETANO_DATA_DIR": str(tmp_path)}
    service, table_id = partly_dealt(env)
    first = service.seed_keys.current
    service.close()
    second = rotate(tmp_path / KEY_FILE)
    assert second != first
    again = TablesService(load(env), clock=StepClock(), new_seed=Seeds())
    assert again.seed_keys.current == second
    state, rng = again.current_state(table_id), random.Random(8)
    while state["shoe"]["number"] < 4:
        command, player, args = pick(state, rng)
        state = again.execute(table_id, command, player, args)["state"]
    report = again.verify(table_id)
    again.close()
    assert report["ok"], report["problems"]
    with sqlite3.connect(tmp_path / "zametano.sqlite") as conn:
        keys = {json.loads(store_cipher(env).decrypt(bytes(s)))["seed"].split(":")[2] for (s,) in conn.execute(
            "SELECT state FROM stored_events WHERE topic LIKE '%ShoeShuffled'")}
    assert keys == {first, second}


def test_a_store_whose_seed_key_is_lost_is_refused_naming_the_key(tmp_path):
    from service.seeds import KEY_FILE, SeedKeyError

    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "ZAMETANO_DATA_DIR": str(tmp_path)}
    service, table_id = partly_dealt(env)
    lost = service.seed_keys.current
    service.close()
    (tmp_path / KEY_FILE).unlink()  # a new key is made at the next start: the old seeds no longer open
    reopened = TablesService(load(env))
    with pytest.raises(Exception) as caught:
        reopened.repository.get(table_uuid(table_id))
    reopened.close()
    chain = [caught.value, caught.value.__cause__, caught.value.__context__]
    assert any(isinstance(e, SeedKeyError) and f"seed key {lost}" in str(e) for e in chain), chain


def test_a_seed_key_file_others_may_read_is_refused(tmp_path):
    from service.seeds import KEY_FILE

    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "ZAMETANO_DATA_DIR": str(tmp_path)}
    TablesService(load(env)).close()
    (tmp_path / KEY_FILE).chmod(0o644)
    with pytest.raises(ConfigError, match=f"the seed key file {tmp_path / KEY_FILE} has mode 0644"):
        TablesService(load(env))
