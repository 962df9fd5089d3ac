"""Open mode (no tokens) serves loopback only, checked by the app itself (api/loopback.py): the peer's address,
the Host a request names (DNS rebinding), and the Origin of a command (a cross-site page)."""

from __future__ import annotations

import pytest

from api.app import create_app
from service.application import TablesService
from service.config import load

OPENING = {"game": "chemin-de-fer", "players": ["anna", "boris"]}


@pytest.fixture
def app_of(tmp_path):
    made: list[TablesService] = []

    def make(tokens: str = ""):  # type: ignore[no-untyped-def]
        env = {"PERSISTENCE_MODULE": "eventsourcing.popo", "ZAMETANO_DATA_DIR": str(tmp_path)}
        if tokens:
            env["ZAMETANO_TOKENS"] = tokens
        settings = load(env)
        service = TablesService(settings)
        made.append(service)
        return create_app(settings, service=service).test_client()

    yield make
    for service in made:
        service.close()


@pytest.mark.parametrize("host", ["localhost", "localhost:8000", "127.0.0.1", "127.0.0.1:8000", "[::1]", "[::1]:8000"])
def test_open_mode_serves_requests_that_name_a_loopback_host(app_of, host):
    client = app_of()
    assert client.post("/tables", json=OPENING, headers={"Host": host}).status_code == 201
    assert client.get("/healthz", headers={"Host": host}).status_code == 200


@pytest.mark.parametrize("host", ["rebind.attacker.example", "rebind.attacker.example:8000", "10.0.0.2:8000",
                                  "localhost.attacker.example", "[2001:db8::1]:8000"])
def test_open_mode_refuses_a_host_that_is_not_loopback_with_a_421_that_names_it(app_of, host):
    client = app_of()
    for answer in (client.post("/tables", json=OPENING, headers={"Host": host}),
                   client.get("/tables", headers={"Host": host})):
        assert answer.status_code == 421, answer.json
        body = answer.json
        assert body["code"] == 421 and host in body["message"] and "localhost, 127.0.0.1 or [::1]" in body["message"]
        assert list(body["errors"]) == ["Host"]
    assert client.get("/tables").json["tables"] == []  # nothing was opened


@pytest.mark.parametrize("origin", ["https://attacker.example", "http://rebind.attacker.example:8000", "null",
                                    "http://10.0.0.2"])
def test_open_mode_refuses_a_command_from_a_cross_site_page_with_a_403(app_of, origin):
    client = app_of()
    answer = client.post("/tables", json=OPENING, headers={"Origin": origin})
    assert answer.status_code == 403 and list(answer.json["errors"]) == ["Origin"], answer.json
    assert origin in answer.json["message"]
    assert client.get("/tables").json["tables"] == []
    assert client.get("/tables", headers={"Origin": origin}).status_code == 200  # reading: the browser's CORS rules


@pytest.mark.parametrize("origin", ["http://127.0.0.1:8000", "http://localhost:3000", "http://[::1]:8000"])
def test_open_mode_takes_commands_from_loopback_pages_and_from_clients_without_origin(app_of, origin):
    client = app_of()
    assert client.post("/tables", json=OPENING, headers={"Origin": origin}).status_code == 201
    assert client.post("/tables", json=OPENING).status_code == 201


def test_open_mode_refuses_a_peer_that_is_not_loopback_whatever_serves_the_app(app_of):
    # plain `gunicorn 'api.app:create_app()'` may listen anywhere: the app itself refuses others
    client = app_of()
    answer = client.get("/healthz", environ_base={"REMOTE_ADDR": "192.0.2.7"})
    assert answer.status_code == 403 and "loopback" in answer.json["message"]
    assert client.post("/tables", json=OPENING, environ_base={"REMOTE_ADDR": "192.0.2.7"}).status_code == 403
    assert client.get("/healthz", environ_base={"REMOTE_ADDR": "127.0.0.5"}).status_code == 200


def test_with_tokens_any_host_origin_and_peer_is_served_by_its_token(app_of):
    client = app_of("operator:op-secret-0f3a9c2e")
    headers = {"Authorization": "Bearer op-secret-0f3a9c2e", "Host": "tables.casino.example", "Origin": "https://desk.example"}
    answer = client.post("/tables", json=OPENING, headers=headers, environ_base={"REMOTE_ADDR": "192.0.2.7"})
    assert answer.status_code == 201
