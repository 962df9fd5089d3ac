"""Tokens and roles (docs/api.md "Authentication")."""

import pytest

from api.app import create_app
from api.server import is_loopback
from service.application import TablesService
from service.config import ConfigError, load, parse_tokens
from tests.helpers import check_exposure


@pytest.fixture
def secured(tmp_path, monkeypatch):
    env = {
        "PERSISTENCE_MODULE": "eventsourcing.sqlite",
        "SQLITE_DBNAME": str(tmp_path / "auth.sqlite"),
        "ZAMETANO_DATA_DIR": str(tmp_path),
        "ZAMETANO_TOKENS": "operator:op-secret-0f3a9c2e,auditor:au-secret-7b1d4e86",
    }
    settings = load(env)
    service = TablesService(settings)
    yield create_app(settings, service=service).test_client()
    service.close()


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def test_without_a_known_token_every_table_path_is_a_401(secured):
    assert secured.get("/tables/x").status_code == 401
    r = secured.post("/tables", json={"game": "chemin-de-fer", "players": ["a", "b"]}, headers=bearer("nope"))
    assert r.status_code == 401 and "Bearer" in r.json["message"]


def test_an_auditor_may_read_but_not_command(secured):
    opened = secured.post("/tables", json={"game": "chemin-de-fer", "players": ["a", "b"]}, headers=bearer("op-secret-0f3a9c2e"))
    assert opened.status_code == 201
    table_id = opened.json["table_id"]
    assert secured.get(f"/tables/{table_id}", headers=bearer("au-secret-7b1d4e86")).status_code == 200
    r = secured.post(f"/tables/{table_id}/commands", json={"command": "draw_seats", "player": "a"}, headers=bearer("au-secret-7b1d4e86"))
    assert r.status_code == 403 and "operator" in r.json["message"]


def test_health_and_the_openapi_document_need_no_token(secured):
    assert secured.get("/healthz").status_code == 200
    assert secured.get("/openapi.json").status_code == 200


def test_without_tokens_the_server_listens_only_on_loopback(monkeypatch):
    monkeypatch.delenv("ZAMETANO_TOKENS", raising=False)
    assert "open" in check_exposure("127.0.0.1")
    with pytest.raises(ConfigError, match="ZAMETANO_TOKENS"):
        check_exposure("0.0.0.0")
    monkeypatch.setenv("ZAMETANO_TOKENS", "operator:x-0123456789abcdef")
    assert check_exposure("0.0.0.0") is None


@pytest.mark.parametrize("host,loop", [("127.0.0.1", True), ("127.9.9.9", True), ("::1", True), ("localhost", True),
                                       ("0.0.0.0", False), ("10.0.0.2", False), ("example", False)])
def test_loopback_addresses_are_recognised(host, loop):
    assert is_loopback(host) is loop


def test_token_configuration_is_role_colon_token(tmp_path):
    a, b = "a" * 16, "b" * 16
    assert parse_tokens(f"operator:{a}, auditor:{b}") == {a: ("operator", "operator-1"), b: ("auditor", "auditor-1")}
    with pytest.raises(ConfigError, match="role:token"):
        parse_tokens("admin:" + "x" * 16)


@pytest.mark.parametrize("given, named", [
    ("operator:sh0rt", "operator-1 (operator)"),
    ("operator:" + "a" * 16 + ",auditor@books:" + "b" * 15, "books (auditor)"),
    ("auditor:" + "a" * 16 + ", surveillance:Q7q", "surveillance-1 (surveillance)"),
])
def test_a_token_shorter_than_16_characters_is_refused_naming_its_entry_and_never_the_token(given, named):
    with pytest.raises(ConfigError) as refused:
        parse_tokens(given)
    message = str(refused.value)
    assert message.startswith(f"ZAMETANO_TOKENS: the token of {named} has ")
    assert "a token has at least 16" in message
    short = given.rsplit(":", 1)[1]
    assert short not in message.replace("ZAMETANO_TOKENS", "")


def test_a_token_of_16_characters_is_taken():
    assert parse_tokens("operator:" + "x" * 16) == {"x" * 16: ("operator", "operator-1")}
