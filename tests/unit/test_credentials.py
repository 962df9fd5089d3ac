"""Players' tokens (service/credentials.py): minted with the service's own key, an external issuer's accepted,
and every token that should not pass refused with one line saying why."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import datetime, timedelta, timezone

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from domain.errors import InvalidPlayers
from service.config import ConfigError, load
from service.credentials import DEFAULT_TTL, PlayerCredentials, load_credentials, read_jwks
from service.errors import BadCredential
from service.signing import load_signer

ISSUER = "https://accounts.casino.example"
NOW = datetime(2030, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def credentials(clock=None, **kwargs):
    return PlayerCredentials(Ed25519PrivateKey.generate(), "zametano", clock=clock or (lambda: datetime.now(timezone.utc)),
                             **kwargs)


def refusal(creds, token):
    with pytest.raises(BadCredential) as caught:
        creds.verify(token)
    message = caught.value.message
    assert "\n" not in message and token not in message
    return message


def test_a_minted_token_names_the_player_the_audience_and_its_lifetime():
    creds = credentials(clock=lambda: NOW)
    minted = creds.mint("anna", 600, ["4c630c84-f71a-4d1b-b2d8-dcb8e778c81d"])
    assert minted["player"] == "anna" and minted["expires_at"] == "2030-01-02T03:14:05Z"
    claims = jwt.decode(minted["token"], options={"verify_signature": False})
    assert claims == {"sub": "anna", "aud": "zametano", "iat": int(NOW.timestamp()), "exp": int(NOW.timestamp()) + 600,
                      "tables": ["4c630c84-f71a-4d1b-b2d8-dcb8e778c81d"]}
    header = jwt.get_unverified_header(minted["token"])
    assert header["alg"] == "EdDSA" and header["kid"] == creds.key_id


def test_a_token_verifies_to_its_player_and_tables_and_without_tables_to_every_table():
    creds = credentials()
    limited = creds.verify(creds.mint("anna", tables=["t1", "t2", "t1"])["token"])
    assert (limited.player, limited.tables, limited.issuer) == ("anna", ("t1", "t2"), None)
    unlimited = creds.verify(creds.mint("boris")["token"])
    assert unlimited.player == "boris" and unlimited.tables is None


def test_the_default_lifetime_is_a_shift_of_eight_hours():
    creds = credentials(clock=lambda: NOW)
    assert creds.mint("anna")["expires_at"] == (NOW + timedelta(seconds=DEFAULT_TTL)).isoformat().replace("+00:00", "Z")


def test_an_expired_token_is_refused_as_expired():
    creds = credentials(clock=lambda: datetime.now(timezone.utc) - timedelta(hours=2))
    assert "expired" in refusal(creds, creds.mint("anna", 600)["token"])


def test_a_token_altered_after_signing_is_refused():
    creds = credentials()
    header, claims, signature = creds.mint("anna")["token"].split(".")
    forged = jwt.utils.base64url_encode(json.dumps({**json.loads(jwt.utils.base64url_decode(claims)), "sub": "boris"}).encode())
    assert "altered" in refusal(creds, f"{header}.{forged.decode()}.{signature}")


def test_a_token_for_another_audience_is_refused_naming_this_one():
    creds = credentials()
    other = PlayerCredentials(creds._key, "another-service")
    assert "'zametano'" in refusal(creds, other.mint("anna")["token"])


def test_a_token_signed_with_a_key_this_service_does_not_know_is_refused():
    creds, foreign = credentials(), credentials()
    assert "does not know" in refusal(creds, foreign.mint("anna")["token"])


@pytest.mark.parametrize("token", ["a.b.c", "not-even-a-jwt", "e30.e30.e30"])
def test_what_is_not_a_jwt_is_refused_in_one_line(token):
    assert refusal(credentials(), token)


def test_a_player_token_is_only_minted_for_a_name_a_table_could_seat():
    with pytest.raises(InvalidPlayers):
        credentials().mint(" anna")


def test_the_players_key_is_made_on_first_start_kept_and_apart_from_the_receipts_key(tmp_path):
    settings = load({"SQLITE_DBNAME": str(tmp_path / "x.sqlite"), "ZAMETANO_DATA_DIR": str(tmp_path)})
    first, again = load_credentials(settings), load_credentials(settings)
    assert first.key_id == again.key_id and (tmp_path / "player-key.pem").stat().st_mode & 0o777 == 0o600
    assert first.key_id != load_signer(settings).key_id
    assert again.verify(first.mint("anna")["token"]).player == "anna"


def test_a_players_key_file_of_another_kind_stops_the_start_with_the_setting_named(tmp_path):
    (tmp_path / "k.pem").write_text("nonsense")
    settings = load({"SQLITE_DBNAME": str(tmp_path / "x.sqlite"), "ZAMETANO_PLAYER_KEY_FILE": str(tmp_path / "k.pem")})
    with pytest.raises(ConfigError, match="ZAMETANO_PLAYER_KEY_FILE"):
        load_credentials(settings)


# --- an external issuer -----------------------------------------------------------------------------------


def issuer_keys(tmp_path):
    """An issuer with an RSA and an EC key, and its JWKS file (public keys only)."""
    keys = {"rsa-1": (rsa.generate_private_key(public_exponent=65537, key_size=2048), "RS256"),
            "ec-1": (ec.generate_private_key(ec.SECP256R1()), "ES256")}
    jwks = []
    for kid, (key, alg) in keys.items():
        algorithm = jwt.get_algorithm_by_name(alg)
        jwks.append({**json.loads(algorithm.to_jwk(key.public_key())), "kid": kid, "alg": alg, "use": "sig"})
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": jwks}))
    return keys, path


def external(tmp_path):
    keys, path = issuer_keys(tmp_path)
    settings = load({"SQLITE_DBNAME": str(tmp_path / "x.sqlite"), "ZAMETANO_DATA_DIR": str(tmp_path),
                     "ZAMETANO_PLAYER_ISSUER": ISSUER, "ZAMETANO_PLAYER_JWKS_FILE": str(path)})
    return load_credentials(settings), keys


def issued(keys, kid, **claims):
    key, alg = keys[kid]
    body = {"sub": "anna", "aud": "zametano", "iss": ISSUER,
            "exp": int((datetime.now(timezone.utc) + timedelta(hours=1)).timestamp()), **claims}
    return jwt.encode({k: v for k, v in body.items() if v is not None}, key, algorithm=alg, headers={"kid": kid})


@pytest.mark.parametrize("kid", ["rsa-1", "ec-1"])
def test_an_external_issuers_token_verifies_with_its_jwks(tmp_path, kid):
    creds, keys = external(tmp_path)
    claims = creds.verify(issued(keys, kid))
    assert (claims.player, claims.issuer, claims.tables) == ("anna", ISSUER, None)


@pytest.mark.parametrize("claims,says", [
    ({"iss": "https://elsewhere.example"}, "issuer"),
    ({"iss": None}, "'iss'"),
    ({"aud": "another-service"}, "another service"),
    ({"exp": None}, "'exp'"),
    ({"sub": None}, "'sub'"),
    ({"exp": 1_000_000_000}, "expired"),
    ({"sub": "x" * 41}, "'sub' is not a player name"),
    ({"tables": "all"}, "'tables'"),
])
def test_an_external_token_missing_or_breaking_a_claim_is_refused_saying_which(tmp_path, claims, says):
    creds, keys = external(tmp_path)
    assert says in refusal(creds, issued(keys, "rsa-1", **claims))


def test_an_external_token_signed_with_a_key_outside_its_jwks_is_refused(tmp_path):
    creds, _ = external(tmp_path)
    stranger = {"rsa-1": (rsa.generate_private_key(public_exponent=65537, key_size=2048), "RS256")}
    assert "altered" in refusal(creds, issued(stranger, "rsa-1"))
    stranger["rsa-9"] = stranger["rsa-1"]
    assert "does not know" in refusal(creds, issued(stranger, "rsa-9"))


def test_an_external_key_is_used_with_its_own_algorithm_only(tmp_path):
    # The classic confusion: a token "signed" with HS256, the issuer's public key as the secret.
    creds, keys = external(tmp_path)
    public_pem = keys["rsa-1"][0].public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    body = {"sub": "anna", "aud": "zametano", "iss": ISSUER, "exp": int(datetime.now(timezone.utc).timestamp()) + 600}
    signing_input = f"{b64(dict(alg='HS256', kid='rsa-1', typ='JWT'))}.{b64(body)}"
    signature = jwt.utils.base64url_encode(hmac.new(public_pem, signing_input.encode(), hashlib.sha256).digest()).decode()
    assert "not a valid JWT" in refusal(creds, f"{signing_input}.{signature}")


def b64(value):
    return jwt.utils.base64url_encode(json.dumps(value).encode()).decode()


def test_an_issuer_without_its_jwks_file_or_a_jwks_with_a_private_key_stops_the_start(tmp_path):
    with pytest.raises(ConfigError, match="go together"):
        load({"ZAMETANO_PLAYER_ISSUER": ISSUER, "SQLITE_DBNAME": str(tmp_path / "x.sqlite")})
    private = json.loads(jwt.get_algorithm_by_name("ES256").to_jwk(ec.generate_private_key(ec.SECP256R1())))
    (tmp_path / "jwks.json").write_text(json.dumps({"keys": [{**private, "kid": "k"}]}))
    with pytest.raises(ConfigError, match="private key"):
        read_jwks(tmp_path / "jwks.json")
    (tmp_path / "jwks.json").write_text("[1, 2")
    with pytest.raises(ConfigError, match="not JSON"):
        read_jwks(tmp_path / "jwks.json")
