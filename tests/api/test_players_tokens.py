"""Players' tokens over HTTP: POST /players/{player}/tokens (operators only), GET /me naming the player, and a
player's token refused what belongs to the house (tests/api/test_views_per_viewer.py: what it may read and do)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from service.credentials import PlayerCredentials

TABLE = "4c630c84-f71a-4d1b-b2d8-dcb8e778c81d"
ISSUER = "https://accounts.casino.example"


def bearer(token):
    return {"Authorization": f"Bearer {token}"}



@pytest.fixture
def secured(make_client):
    return make_client(ZAMETANO_TOKENS="operator@cage:op-secret-0f3a9c2e,auditor:au-secret-7b1d4e86")


def mint(client, player="anna", token="op-secret-0f3a9c2e", **body):
    return client.post(f"/players/{player}/tokens", json=body, headers=bearer(token) if token else {})


def test_an_operator_mints_a_token_that_names_the_player_at_me(secured):
    minted = mint(secured, ttl_seconds=600, tables=[TABLE])
    assert minted.status_code == 201
    assert set(minted.json) == {"token", "player", "expires_at", "tables"}
    assert minted.json["player"] == "anna" and minted.json["tables"] == [TABLE]
    me = secured.get("/me", headers=bearer(minted.json["token"]))
    assert me.status_code == 200
    assert me.json == {"role": "player", "name": "anna", "player": "anna", "tables": [TABLE],
                       "expires_at": minted.json["expires_at"]}


def test_me_names_the_operators_and_auditors_tokens_by_their_names(secured):
    assert secured.get("/me", headers=bearer("op-secret-0f3a9c2e")).json == {"role": "operator", "name": "cage"}
    assert secured.get("/me", headers=bearer("au-secret-7b1d4e86")).json == {"role": "auditor", "name": "auditor-1"}


def test_only_an_operator_mints(secured):
    assert mint(secured, token=None).status_code == 401
    refused = mint(secured, token="au-secret-7b1d4e86")
    assert refused.status_code == 403 and "operator" in refused.json["message"]
    player = mint(secured).json["token"]
    assert mint(secured, player="boris", token=player).status_code == 403


@pytest.mark.parametrize("body, field, says", [
    ({"ttl_seconds": 59}, "ttl_seconds", "60"),
    ({"ttl_seconds": 604801}, "ttl_seconds", "604800"),
    ({"ttl_seconds": "600"}, "ttl_seconds", "integer"),
    ({"tables": []}, "tables", "1"),
    ({"tables": ["not-a-table"]}, "tables", "UUID"),
    ({"tables": "all"}, "tables", "list"),
    ({"for": "ever"}, "for", "Unknown"),
])
def test_a_bad_body_is_a_422_saying_what_is_allowed(secured, body, field, says):
    refused = mint(secured, **body)
    assert refused.status_code == 422, refused.json
    assert says in json.dumps(refused.json["errors"])


def test_a_name_no_table_could_seat_is_a_422(secured):
    refused = secured.post("/players/%20anna/tokens", json={}, headers=bearer("op-secret-0f3a9c2e"))
    assert refused.status_code == 422 and "surrounding spaces" in refused.json["message"]


@pytest.mark.parametrize("method, path", [
    ("GET", "/tables"), ("POST", "/tables"), ("GET", f"/tables/{TABLE}/decisions"), ("GET", "/events"),
    ("POST", "/players/anna/tokens"),
])
def test_a_players_token_is_refused_what_belongs_to_the_house(secured, method, path):
    token = mint(secured).json["token"]
    refused = secured.open(path, method=method, json={} if method == "POST" else None, headers=bearer(token))
    assert refused.status_code == 403 and "posts its own commands" in refused.json["message"]
    assert secured.get("/keys", headers=bearer(token)).status_code == 200
    assert secured.get("/players/anna/rounds", headers=bearer(token)).status_code == 200
    assert secured.get(f"/tables/{TABLE}", headers=bearer(token)).status_code == 404  # let through: no such table


def test_a_players_token_limited_to_tables_is_refused_at_any_other(secured):
    token = mint(secured, tables=[TABLE]).json["token"]
    other = "00000000-0000-4000-8000-000000000000"
    refused = secured.get(f"/tables/{other}", headers=bearer(token))
    assert refused.status_code == 403 and "limited to the tables" in refused.json["message"]
    assert secured.post(f"/tables/{other}/commands", json={}, headers=bearer(token)).status_code == 403
    assert secured.get(f"/tables/{TABLE}", headers=bearer(token)).status_code == 404


def test_an_expired_tampered_or_foreign_token_is_a_401_with_one_line(secured, tmp_path):
    ours = secured.application.extensions["zametano_credentials"]
    past = PlayerCredentials(ours._key, "zametano", clock=lambda: datetime.now(timezone.utc) - timedelta(days=1))
    expired = past.mint("anna", 600)["token"]
    header, claims, signature = mint(secured).json["token"].split(".")
    tampered = f"{header}.{jwt.utils.base64url_encode(json.dumps({'sub': 'boris'}).encode()).decode()}.{signature}"
    foreign = PlayerCredentials(Ed25519PrivateKey.generate(), "zametano").mint("anna")["token"]
    elsewhere = PlayerCredentials(ours._key, "another-service").mint("anna")["token"]
    for token, says in [(expired, "expired"), (tampered, "altered"), (foreign, "does not know"),
                        (elsewhere, "another service")]:
        refused = secured.get("/me", headers=bearer(token))
        assert refused.status_code == 401, token
        assert says in refused.json["message"] and "\n" not in refused.json["message"]
        assert refused.headers["WWW-Authenticate"] == 'Bearer realm="zametano", error="invalid_token"'


def external_issuer(make_client, tmp_path):
    """A client of a service that accepts the tokens of ISSUER, whose one key (ES256, kid casino-1) is in its
    JWKS file, and a function signing a token of that key: ``sign(sub, iss=ISSUER)``."""
    key = ec.generate_private_key(ec.SECP256R1())
    public = json.loads(jwt.get_algorithm_by_name("ES256").to_jwk(key.public_key()))
    (tmp_path / "jwks.json").write_text(json.dumps({"keys": [{**public, "kid": "casino-1", "alg": "ES256"}]}))
    client = make_client(ZAMETANO_TOKENS="operator:op-secret-0f3a9c2e", ZAMETANO_PLAYER_ISSUER=ISSUER,
                         ZAMETANO_PLAYER_JWKS_FILE=str(tmp_path / "jwks.json"))
    exp = int((datetime.now(timezone.utc) + timedelta(hours=1)).timestamp())

    def sign(sub, iss=ISSUER):
        return jwt.encode({"sub": sub, "aud": "zametano", "iss": iss, "exp": exp}, key, algorithm="ES256",
                          headers={"kid": "casino-1"})

    return client, sign


def test_an_external_issuers_token_is_a_player_at_me(make_client, tmp_path):
    client, sign = external_issuer(make_client, tmp_path)
    me = client.get("/me", headers=bearer(sign("vera")))
    assert me.status_code == 200 and me.json["player"] == "vera" and me.json["tables"] is None
    other = sign("vera", iss="https://elsewhere.example")
    assert client.get("/me", headers=bearer(other)).status_code == 401


def test_on_a_service_without_tokens_anyone_mints_and_a_players_token_is_still_a_player(make_client):
    client = make_client()
    minted = mint(client, token=None)
    assert minted.status_code == 201
    assert client.get("/me").json == {"role": "open", "name": None}
    token = minted.json["token"]
    assert client.get("/me", headers=bearer(token)).json["player"] == "anna"
    assert client.get("/tables", headers=bearer(token)).status_code == 403
    assert client.get("/me", headers=bearer(token[:-4] + "AAAA")).status_code == 401


def test_a_players_name_in_the_path_is_held_to_the_input_policy(secured):
    refused = secured.post("/players/an%E2%80%AEna/tokens", json={}, headers=bearer("op-secret-0f3a9c2e"))
    assert refused.status_code == 422 and "U+202E" in refused.json["message"] and "player" in refused.json["errors"]
    composed = secured.post("/players/zo%C3%AB/tokens", json={}, headers=bearer("op-secret-0f3a9c2e"))  # ë composed
    decomposed = secured.post("/players/zoe%CC%88/tokens", json={}, headers=bearer("op-secret-0f3a9c2e"))  # e, then the diaeresis
    assert composed.json["player"] == decomposed.json["player"] == "zo\u00eb"


def test_an_external_sub_with_a_character_names_may_not_hold_is_a_401(make_client, tmp_path):
    client, sign = external_issuer(make_client, tmp_path)
    refused = client.get("/me", headers=bearer(sign("an\u202ena")))
    assert refused.status_code == 401 and "'sub'" in refused.json["message"]
