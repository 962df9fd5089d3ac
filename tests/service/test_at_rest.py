"""Stored events are encrypted by default: a new SQLite or PostgreSQL store under a cipher key file made on first
start (0600, refused when others may read it), CIPHER_KEY overriding it; a store made before, in clear, is kept
in clear and says so; scripts/encrypt-store copies a store into an encrypted one and every head matches."""

from __future__ import annotations

import json

import random
import sqlite3
from contextlib import closing
from pathlib import Path

import psycopg
import pytest
from eventsourcing.cipher import AESCipher

from api import server
from service.application import TablesService
from service.atrest import KEY_FILE
from service.config import LIBRARY_VARIABLES, ConfigError, load
from tests.helpers import Seeds, StepClock, load_script, pick, postgres_location
from tests.service.test_stored_contract import insert_old_log

encrypt_store = load_script("encrypt_store.py", "zametano_encrypt_store")
NAMES = (b"anna", b"boris", b"players", b"seed", b"ShoeShuffled")


@pytest.fixture(params=["sqlite", "postgres"])
def at_rest_env(request, tmp_path):  # type: ignore[no-untyped-def]
    """The settings of a new store at rest, on SQLite and on PostgreSQL, with the data folder of the test."""
    if request.param == "sqlite":
        return {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "events.sqlite"),
                "ZAMETANO_DATA_DIR": str(tmp_path / "data")}
    return {**request.getfixturevalue("postgres_env"), "ZAMETANO_DATA_DIR": str(tmp_path / "data")}


def raw_rows(env: dict[str, str]) -> list[bytes]:
    """Every state the store holds: events, snapshots, and the read model's sealed columns."""
    if env["PERSISTENCE_MODULE"] == "eventsourcing.sqlite":
        with closing(sqlite3.connect(env["SQLITE_DBNAME"])) as db:
            tables = ("stored_events", "stored_snapshots")
            rows = [bytes(r[0]) for t in tables for r in db.execute(f"SELECT state FROM {t}")]  # noqa: S608
            return rows + [r[0].encode() for r in db.execute("SELECT sealed FROM zametano_tables_v3")]
    schema = env["POSTGRES_SCHEMA"]
    with psycopg.connect(**postgres_location(env)) as db:
        tables = (f"{schema}.zametano_events", f"{schema}.zametano_snapshots")
        rows = [bytes(r[0]) for t in tables for r in db.execute(f"SELECT state FROM {t}")]  # noqa: S608
        return rows + [r[0].encode() for r in db.execute(f"SELECT sealed FROM {schema}.zametano_tables_v3")]


def play(env: dict[str, str], commands: int = 12) -> tuple[str, dict]:
    """A table played a little on a service of ``env`` (snapshots every 5 events); its id and state."""
    service = TablesService(load({**env, "SNAPSHOT_INTERVAL": "5"}), clock=StepClock(), new_seed=Seeds())
    try:
        table_id = service.open_table("chemin-de-fer", ["anna", "boris"], {})["table_id"]
        rng = random.Random(4)
        for _ in range(commands):
            service.execute(table_id, *pick(service.current_state(table_id), rng))
        service.list_tables()  # the read model indexes it
        return table_id, service.current_state(table_id)
    finally:
        service.close()


def test_a_new_store_is_encrypted_by_default_under_a_key_file_made_0600_on_first_start(at_rest_env):
    table_id, state = play(at_rest_env)
    key_file = Path(at_rest_env["ZAMETANO_DATA_DIR"]) / KEY_FILE
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"
    rows = raw_rows(at_rest_env)
    assert len(rows) > 12
    # Ciphertext starts with a random nonce, so a first byte of "{" proves nothing: JSON is what parses as JSON.
    assert not [r for r in rows if any(name in r for name in NAMES) or is_json(r)]
    again = TablesService(load(at_rest_env))  # the same key file reads it again
    try:
        assert again.at_rest.encrypted and again.at_rest.how == "key file"
        assert again.current_state(table_id) == state and again.verify(table_id)["ok"] is True
    finally:
        again.close()


def test_the_key_file_is_refused_when_others_may_read_it(at_rest_env):
    play(at_rest_env, commands=1)
    key_file = Path(at_rest_env["ZAMETANO_DATA_DIR"]) / KEY_FILE
    key_file.chmod(0o644)
    with pytest.raises(ConfigError, match=rf"the cipher key file {key_file} has mode 0644: others may read"):
        TablesService(load(at_rest_env))


def test_cipher_key_overrides_the_key_file(at_rest_env):
    key = AESCipher.create_key(num_bytes=32)
    table_id, state = play({**at_rest_env, "CIPHER_KEY": key}, commands=2)
    assert not (Path(at_rest_env["ZAMETANO_DATA_DIR"]) / KEY_FILE).exists()
    assert not [r for r in raw_rows(at_rest_env) if b"anna" in r]
    service = TablesService(load({**at_rest_env, "CIPHER_KEY": key}))
    try:
        assert service.at_rest.how == "CIPHER_KEY" and service.current_state(table_id) == state
    finally:
        service.close()


def test_with_a_cipher_key_and_compression_nothing_stored_is_readable_without_the_key(at_rest_env):
    table_id, state = play({**at_rest_env, "CIPHER_KEY": AESCipher.create_key(num_bytes=32), "COMPRESSOR_TOPIC": "zlib"})
    rows = raw_rows(at_rest_env)
    assert rows and not [r for r in rows if any(name in r for name in NAMES)]


def test_a_named_key_file_is_used_and_made_there(at_rest_env, tmp_path):
    named = tmp_path / "elsewhere" / "events.key"
    named.parent.mkdir()
    play({**at_rest_env, "ZAMETANO_CIPHER_KEY_FILE": str(named)}, commands=1)
    assert named.exists() and oct(named.stat().st_mode & 0o777) == "0o600"
    assert not (Path(at_rest_env["ZAMETANO_DATA_DIR"]) / KEY_FILE).exists()


def test_a_key_file_that_is_not_a_key_stops_start_up_naming_it(at_rest_env, tmp_path):
    named = tmp_path / "bad.key"
    named.write_text("not a key\n")
    named.chmod(0o600)
    with pytest.raises(ConfigError, match=rf"ZAMETANO_CIPHER_KEY_FILE {named} is not a cipher key"):
        TablesService(load({**at_rest_env, "ZAMETANO_CIPHER_KEY_FILE": str(named)}))


def old_store(env: dict[str, str]) -> str:
    """A store made before encryption by default: the card-lottery fixture's rows in clear; its table's id."""
    service = TablesService(load({**env, "CIPHER_KEY": AESCipher.create_key(num_bytes=32)}))  # tables, no key file
    try:
        service.mapper.cipher = None  # written in clear, as before
        return insert_old_log(service, "card-lottery-stored-v1")
    finally:
        service.close()


def test_a_store_in_clear_is_kept_in_clear_and_says_so(at_rest_env):
    table_id = old_store(at_rest_env)
    service = TablesService(load(at_rest_env))
    try:
        assert service.at_rest.how == "in clear" and not service.at_rest.encrypted
        assert "NOT encrypted" in service.at_rest.describe() and "scripts/encrypt-store" in service.at_rest.describe()
        assert service.verify(table_id)["ok"] is True
    finally:
        service.close()
    assert not (Path(at_rest_env["ZAMETANO_DATA_DIR"]) / KEY_FILE).exists()  # no key made for it


@pytest.fixture
def environ(monkeypatch):  # type: ignore[no-untyped-def]
    """Sets the process environment the scripts and the server read."""
    for name in (*LIBRARY_VARIABLES, "ZAMETANO_TOKENS", "ZAMETANO_CIPHER_KEY_FILE", "ZAMETANO_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)

    def set_env(env: dict[str, str]) -> None:
        for name, value in env.items():
            monkeypatch.setenv(name, value)

    return set_env


def test_the_start_up_line_says_a_store_in_clear_is_not_encrypted(at_rest_env, environ):
    old_store(at_rest_env)
    environ({**at_rest_env, "CREATE_TABLE": "y"})
    line = server.prepare_store()
    assert line.count("events NOT encrypted") == 1 and "scripts/encrypt-store" in line  # once, with the way out


def target_of(env: dict[str, str], tmp_path: Path) -> str:
    if env["PERSISTENCE_MODULE"] == "eventsourcing.sqlite":
        return str(tmp_path / "encrypted.sqlite")
    return f"{env['POSTGRES_SCHEMA']}_enc"


def drop_target(env: dict[str, str], target: str) -> None:
    if env["PERSISTENCE_MODULE"] == "eventsourcing.postgres":
        with psycopg.connect(**postgres_location(env), autocommit=True) as db:
            db.execute(f"DROP SCHEMA IF EXISTS {target} CASCADE")


def test_encrypt_store_copies_a_store_in_clear_into_an_encrypted_one_where_every_head_matches(
        at_rest_env, environ, tmp_path, capsys):
    old = old_store(at_rest_env)
    played, state = play(at_rest_env)  # a second table, in clear too, with snapshots
    target = target_of(at_rest_env, tmp_path)
    environ(at_rest_env)
    try:
        assert encrypt_store.main([target, "--batch", "7"]) == 0
        out, err = capsys.readouterr()
        assert out.startswith("ok: ") and " 2 tables " in out and "every table's head" in out
        assert "events copied: " in err and "heads compared: 2 of " in err
        moved = {**at_rest_env, **({"SQLITE_DBNAME": target} if "SQLITE_DBNAME" in at_rest_env else {"POSTGRES_SCHEMA": target})}
        service = TablesService(load(moved))
        try:
            assert service.at_rest.how == "key file"
            assert service.current_state(played) == state
            assert service.verify(old)["ok"] is True and service.verify(played)["ok"] is True
            service.list_tables()
        finally:
            service.close()
        assert not [r for r in raw_rows(moved) if any(name in r for name in NAMES)]
        # a target that holds events already is refused, and left as it is
        assert encrypt_store.main([target]) == 2
        assert "already holds" in capsys.readouterr().err
    finally:
        drop_target(at_rest_env, target)


def test_encrypt_store_help_acts_on_nothing(tmp_path, environ, capsys):
    environ({"ZAMETANO_DATA_DIR": str(tmp_path / "data"), "SQLITE_DBNAME": str(tmp_path / "e.sqlite")})
    with pytest.raises(SystemExit) as done:
        encrypt_store.main(["--help"])
    assert done.value.code == 0 and "encrypted" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []


def test_encrypt_store_refuses_the_source_itself_as_target(tmp_path, environ, capsys):
    db = tmp_path / "e.sqlite"
    environ({"ZAMETANO_DATA_DIR": str(tmp_path), "SQLITE_DBNAME": str(db)})
    assert encrypt_store.main([str(db)]) == 2
    assert "is the source itself" in capsys.readouterr().err


def test_a_new_postgres_schema_name_is_checked(environ, capsys):
    environ({"PERSISTENCE_MODULE": "eventsourcing.postgres", "POSTGRES_HOST": "127.0.0.1", "POSTGRES_DBNAME": "x",
             "POSTGRES_USER": "x"})
    assert encrypt_store.main(["Bad; name"]) == 2
    assert "a schema name in lower case" in capsys.readouterr().err


def is_json(row: bytes) -> bool:
    try:
        json.loads(row)
    except ValueError:  # UnicodeDecodeError included
        return False
    return True
