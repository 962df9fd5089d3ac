"""Over HTTP, a table the read model could not index is named and answers 200 or 409, never 500, and every
other table answers in full; a server refuses to start with a CIPHER_KEY that cannot read its store."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from eventsourcing.cipher import AESCipher

from api import server
from api.app import create_app
from service.application import TablesService
from service.atrest import KEY_FILE
from service.config import LIBRARY_VARIABLES, ConfigError, load
from service.errors import StoreUnreadable
from tests.helpers import Seeds, StepClock, pick
from tests.service.test_read_model import PLAYERS, every_player_renamed, first_of, stored_as, table_with_a_round


def test_over_http_a_table_that_failed_indexing_is_named_and_no_answer_is_a_500(make_service, persistence_env):
    service = make_service()
    client = create_app(load(persistence_env), service=service).test_client()
    good = table_with_a_round(service)
    with stored_as(service, every_player_renamed(["a\x00nna", "b\x00oris", "v\x00era"])):
        nul = table_with_a_round(service)
    bad = service.open_table("chemin-de-fer", PLAYERS, {})["table_id"]
    assert client.get("/tables").status_code == 200
    damaged: list[int] = []
    with stored_as(service, first_of(None, lambda state: b"\x00", damaged)):
        service.execute(bad, *pick(service.current_state(bad), random.Random(2)))

    response = client.get("/tables")
    assert response.status_code == 200
    rows = {t["table_id"]: t for t in response.json["tables"]}
    assert rows[good]["index_error"] is None and rows[nul]["index_error"] is None
    assert rows[nul]["players"] == ["a\x00nna", "b\x00oris", "v\x00era"]
    assert rows[bad]["index_error"]["version"] == damaged[0]
    for table_id in (good, nul):
        assert client.get(f"/tables/{table_id}/rounds").json["rounds"][0]["round"] == 1
        assert client.get(f"/tables/{table_id}/rounds/1").status_code == 200
        assert client.get(f"/tables/{table_id}/verify").status_code == 200
    rounds = client.get(f"/tables/{bad}/rounds")
    assert rounds.status_code == 200 and rounds.json["index_error"] == rows[bad]["index_error"]
    audit = client.get(f"/tables/{bad}/rounds/1")
    assert audit.status_code == 409 and f"could not index table '{bad}' at version {damaged[0]}" in audit.json["message"]
    verify = client.get(f"/tables/{bad}/verify")
    assert verify.status_code == 200 and verify.json["ok"] is False


# --- the cipher checked at start --------------------------------------------------------------------


def written_with_a_key(env: dict[str, str]) -> str:
    """Opens a table in a store written with ``env``; returns its id."""
    service = TablesService(load(env), clock=StepClock(), new_seed=Seeds())
    try:
        return service.open_table("chemin-de-fer", PLAYERS, {})["table_id"]
    finally:
        service.close()


@pytest.fixture
def keyed_store(persistence_env, shared_store):
    key = AESCipher.create_key(num_bytes=32)
    table_id = written_with_a_key({**persistence_env, "CIPHER_KEY": key})
    return persistence_env, key, table_id


def test_only_the_key_the_store_was_written_with_passes_the_check(keyed_store):
    env, key, table_id = keyed_store
    # Without CIPHER_KEY an encrypted store needs its cipher key file, which is not there: no start at all.
    with pytest.raises(ConfigError, match=r"encrypted and the cipher key file .* does not exist.*set CIPHER_KEY"):
        TablesService(load(env))
    key_file = Path(env["ZAMETANO_DATA_DIR"]) / KEY_FILE
    key_file.write_text(AESCipher.create_key(num_bytes=32))  # a cipher key file, but not the store's key
    key_file.chmod(0o600)
    for wrong, says in ((AESCipher.create_key(num_bytes=32), "with this CIPHER_KEY"), (None, f"with the cipher key {key_file}")):
        service = TablesService(load({**env, **({"CIPHER_KEY": wrong} if wrong else {})}))
        try:
            with pytest.raises(StoreUnreadable, match=says):
                service.check_store()
            with pytest.raises(StoreUnreadable):  # nor does the read model record every table as failed
                service.list_tables()
        finally:
            service.close()
    right = TablesService(load({**env, "CIPHER_KEY": key}))
    try:
        right.check_store()
        assert [(t["table_id"], t["index_error"]) for t in right.list_tables()["tables"]] == [(table_id, None)]
    finally:
        right.close()


def test_an_empty_store_accepts_any_key(persistence_env):
    service = TablesService(load({**persistence_env, "CIPHER_KEY": AESCipher.create_key(num_bytes=32)}))
    try:
        service.check_store()
    finally:
        service.close()


def test_the_app_factory_refuses_a_key_that_cannot_read_the_store(keyed_store):
    env, _, _ = keyed_store
    with pytest.raises(StoreUnreadable, match="cannot be read with this CIPHER_KEY"):
        create_app(load({**env, "CIPHER_KEY": AESCipher.create_key(num_bytes=32)}))


@pytest.fixture
def server_env(monkeypatch, tmp_path):
    """The process environment of a server on an SQLite store written with a key; returns the key."""
    for name in (*LIBRARY_VARIABLES, "ZAMETANO_TOKENS"):
        monkeypatch.delenv(name, raising=False)
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "keyed.sqlite")}
    key = AESCipher.create_key(num_bytes=32)
    written_with_a_key({**env, "CIPHER_KEY": key})
    for name, value in {**env, "CREATE_TABLE": "y"}.items():  # prepare_store sets CREATE_TABLE: restored after
        monkeypatch.setenv(name, value)
    # main() empties this metrics folder (and would make a temporary one, and say so in the environment)
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path / "metrics"))
    started: list[dict] = []
    monkeypatch.setattr(server.Server, "run", lambda self: started.append(self.options))
    return key, started


def test_a_server_with_a_wrong_cipher_key_exits_2_with_one_error_line_before_starting(server_env, monkeypatch, capsys):
    _, started = server_env
    monkeypatch.setenv("CIPHER_KEY", AESCipher.create_key(num_bytes=32))
    assert server.main(["--host", "127.0.0.1", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: The stored events cannot be read with this CIPHER_KEY (") and err.count("\n") == 1
    assert started == []


def test_a_server_with_the_right_cipher_key_starts(server_env, monkeypatch):
    key, started = server_env
    monkeypatch.setenv("CIPHER_KEY", key)
    assert server.main(["--host", "127.0.0.1", "--port", "0"]) == 0
    assert len(started) == 1
