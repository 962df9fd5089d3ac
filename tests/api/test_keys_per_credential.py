"""An Idempotency-Key belongs to the credential that sent it (docs/api.md "Idempotency"): who may act is checked
before a key is looked up, and another credential's same key never returns the first one's recorded answer."""

from __future__ import annotations

import pytest

OPERATOR, OTHER_OPERATOR = "operator-secret-0001", "operator-secret-0002"


def bearer(token, key=None):
    return {"Authorization": f"Bearer {token}", **({"Idempotency-Key": key} if key else {})}


@pytest.fixture
def secured(make_client):
    return make_client(ZAMETANO_TOKENS=f"operator@cage:{OPERATOR},operator@pit:{OTHER_OPERATOR}")


def self_table(client):
    """A punto banco table whose players stake with their own tokens; the shoe shuffled and cut."""
    opened = client.post("/tables", headers=bearer(OPERATOR), json={
        "game": "punto-banco", "players": ["marta", "anna", "boris"], "croupier": "marta", "players_act": "self"})
    table_id = opened.json["table_id"]
    tokens = {p: client.post(f"/players/{p}/tokens", json={}, headers=bearer(OPERATOR)).json["token"]
              for p in ("anna", "boris")}
    assert client.post(f"/tables/{table_id}/commands", headers=bearer(OPERATOR),
                       json={"command": "shuffle", "player": "marta"}).status_code == 200
    assert client.post(f"/tables/{table_id}/commands", headers=bearer(tokens["anna"]),
                       json={"command": "cut", "player": "anna", "position": 100}).status_code == 200
    return table_id, tokens


def stake(client, table_id, token, player, key, amount=20):
    return client.post(f"/tables/{table_id}/commands", headers=bearer(token, key),
                       json={"command": "place_stake", "player": player, "spot": "player", "amount": amount})


def test_another_players_credential_replaying_a_used_key_is_refused_and_never_gets_the_first_answer(secured):
    table_id, tokens = self_table(secured)
    first = stake(secured, table_id, tokens["anna"], "anna", "k-1")
    assert first.status_code == 200
    # boris, with his own token, replays anna's body and key: who may act comes first
    replayed = stake(secured, table_id, tokens["boris"], "anna", "k-1")
    assert replayed.status_code == 403 and "version" not in replayed.json
    # the same key for his own stake is his own key: recorded as a new command, not anna's answer
    own = stake(secured, table_id, tokens["boris"], "boris", "k-1")
    assert own.status_code == 200 and own.json["version"] > first.json["version"]
    assert own.json["events"][0]["data"]["player"] == "boris"
    again = stake(secured, table_id, tokens["anna"], "anna", "k-1")  # anna's own repeat: her first answer
    assert again.status_code == 200 and again.json["version"] == first.json["version"]


def test_two_operator_credentials_sharing_a_key_make_two_commands(secured):
    table_id, tokens = self_table(secured)
    opened = secured.post(f"/tables/{table_id}/commands", headers=bearer(OPERATOR, "same"),
                          json={"command": "close_stakes", "player": "marta"})
    assert opened.status_code == 422  # nothing to close yet: refused, nothing recorded under the key
    assert stake(secured, table_id, tokens["anna"], "anna", None).status_code == 200
    closed = secured.post(f"/tables/{table_id}/commands", headers=bearer(OPERATOR, "same"),
                          json={"command": "close_stakes", "player": "marta"})
    assert closed.status_code == 200
    other = secured.post(f"/tables/{table_id}/commands", headers=bearer(OTHER_OPERATOR, "same"),
                         json={"command": "close_stakes", "player": "marta"})
    # the other operator's key finds nothing of the first's: decided afresh, and the stakes are closed already
    assert other.status_code == 422 and "version" not in other.json
