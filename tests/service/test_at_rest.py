"""Stored events are plain JSON by default, and encrypted and compressed when configured."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from eventsourcing.cipher import AESCipher

from service.application import TablesService
from service.config import load
from tests.helpers import Seeds, StepClock


def played_raw_rows(env):
    env = {**env, "ZAMETANO_DATA_DIR": str(Path(env["SQLITE_DBNAME"]).parent)}  # the signing key beside it
    service = TablesService(load(env), clock=StepClock(), new_seed=Seeds())
    table_id = service.open_table("chemin-de-fer", ["anna", "boris"], {})["table_id"]
    service.execute(table_id, "draw_seats", "anna", {})
    state = service.current_state(table_id)
    service.close()
    with sqlite3.connect(env["SQLITE_DBNAME"]) as db:
        rows = [bytes(r[0]) for r in db.execute("SELECT state FROM stored_events")]
    reopened = TablesService(load(env))
    assert reopened.current_state(table_id) == state  # readable again with the same settings
    reopened.close()
    return rows


def test_by_default_stored_events_are_plain_json(tmp_path):
    rows = played_raw_rows({"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "plain.sqlite")})
    assert any(b'"players"' in r for r in rows)


def test_with_a_cipher_key_and_compression_nothing_stored_is_readable_without_the_key(tmp_path):
    env = {
        "PERSISTENCE_MODULE": "eventsourcing.sqlite",
        "SQLITE_DBNAME": str(tmp_path / "secret.sqlite"),
        "CIPHER_KEY": AESCipher.create_key(num_bytes=32),
        "COMPRESSOR_TOPIC": "zlib",
    }
    rows = played_raw_rows(env)
    assert rows and not any(b"players" in r or b"anna" in r or b"seed" in r for r in rows)
