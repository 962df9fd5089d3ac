"""Players' credentials: JSON Web Tokens minted with a key of the service's own, and an external issuer's.

A player's token is a JWT (RFC 7519) signed with EdDSA (Ed25519). Its claims: ``sub`` the player, ``aud``
this service's audience (ZAMETANO_PLAYER_AUDIENCE), ``iat`` and ``exp`` in seconds since the epoch, and
``tables`` when it is limited to some tables; its header's ``kid`` names the key, the first 16 hex digits of
sha256 of the raw public key, as for receipts.

The key is the PEM file named by ZAMETANO_PLAYER_KEY_FILE, or else ``player-key.pem`` in the data directory,
made on first start like the receipts' key (service/signing.py), and never the same key: a leaked player key
forges no receipt, and the other way round. On an in-memory store the key lives in memory, like the events.

An external issuer (the casino's own player accounts) is ZAMETANO_PLAYER_ISSUER, the ``iss`` its tokens
must name, with ZAMETANO_PLAYER_JWKS_FILE, a JSON Web Key Set (RFC 7517) of the public keys it signs with;
its tokens need ``sub``, ``aud`` and ``exp``, and each key is used only with its own algorithm.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from domain.errors import InvalidPlayers
from domain.inputs import validate_name
from service.config import ConfigError, Settings
from service.errors import BadCredential
from service.signing import key_id_of, public_raw, read_key, read_or_make_key

KEY_FILE = "player-key.pem"
ALGORITHM = "EdDSA"
DEFAULT_TTL = 8 * 3600  # a shift at the table
MIN_TTL = 60
MAX_TTL = 7 * 24 * 3600
MAX_TABLES = 100
# Seconds of disagreement between clocks (the issuer's and this server's) that `exp` and `iat` forgive.
LEEWAY = 30

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def rfc3339(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class PlayerClaims:
    """What a verified token says: who, on which tables (None: all), until when, and who issued it (None:
    this service)."""

    player: str
    tables: tuple[str, ...] | None
    expires_at: str
    issuer: str | None = None


@dataclass(frozen=True)
class ExternalIssuer:
    issuer: str
    keys: dict[str, jwt.PyJWK]  # by kid


class PlayerCredentials:
    """Mints players' tokens with the service's key, and verifies them and an external issuer's."""

    def __init__(self, key: Ed25519PrivateKey, audience: str, *, external: ExternalIssuer | None = None,
                 clock: Clock = utc_now) -> None:
        self._key = key
        self.key_id = key_id_of(public_raw(key))
        self.audience = audience
        self._external = external
        self._clock = clock

    def mint(self, player: str, ttl_seconds: int | None = None, tables: list[str] | None = None) -> dict[str, Any]:
        """A new token for ``player`` (a valid name), valid ``ttl_seconds`` (default DEFAULT_TTL), limited to
        ``tables`` when given."""
        validate_name(player)
        issued = int(self._clock().timestamp())
        expires = issued + (DEFAULT_TTL if ttl_seconds is None else ttl_seconds)
        claims: dict[str, Any] = {"sub": player, "aud": self.audience, "iat": issued, "exp": expires}
        if tables is not None:
            claims["tables"] = list(dict.fromkeys(tables))
        token = jwt.encode(claims, self._key, algorithm=ALGORITHM, headers={"kid": self.key_id})
        return {"token": token, "player": player, "expires_at": rfc3339(expires), "tables": claims.get("tables")}

    def verify(self, token: str) -> PlayerClaims:
        """The claims of a token this service minted or the external issuer signed, or BadCredential."""
        try:
            kid = jwt.get_unverified_header(token).get("kid")
        except jwt.InvalidTokenError:
            raise BadCredential("This bearer token is neither a token this service knows nor a well-formed JWT.") from None
        if kid == self.key_id:
            return self._checked(token, self._key.public_key(), [ALGORITHM], None)
        found = self._external_key(kid)
        if found is None:
            raise BadCredential(
                f"This player token is signed with a key this service does not know (kid {str(kid)[:40]!r})."
            )
        assert self._external is not None
        return self._checked(token, found.key, [found.algorithm_name], self._external.issuer)

    def _external_key(self, kid: Any) -> jwt.PyJWK | None:
        if self._external is None:
            return None
        keys = self._external.keys
        if kid is None and len(keys) == 1:
            return next(iter(keys.values()))
        return keys.get(kid) if isinstance(kid, str) else None

    def _checked(self, token: str, key: Any, algorithms: list[str], issuer: str | None) -> PlayerClaims:
        required = ["sub", "aud", "exp"] + (["iss"] if issuer else ["iat"])
        try:
            claims = jwt.decode(token, key, algorithms=algorithms, audience=self.audience, issuer=issuer,
                                leeway=LEEWAY, options={"require": required})
        except jwt.InvalidTokenError as exc:
            raise BadCredential(refusal(exc, self.audience)) from None
        return PlayerClaims(player=_player(claims["sub"]), tables=_tables(claims.get("tables")),
                            expires_at=rfc3339(int(claims["exp"])), issuer=issuer)


def refusal(exc: jwt.InvalidTokenError, audience: str) -> str:
    """One line saying why a token signed by a known key is refused."""
    if isinstance(exc, jwt.ExpiredSignatureError):
        return "This player token has expired; ask an operator (or the issuer) for a new one."
    if isinstance(exc, jwt.InvalidSignatureError):
        return "This player token's signature does not verify: it was altered after it was signed."
    if isinstance(exc, jwt.InvalidAudienceError):
        return f"This player token is meant for another service: its 'aud' does not name '{audience}'."
    if isinstance(exc, jwt.InvalidIssuerError):
        return "This player token names another issuer ('iss') than the one this service accepts."
    if isinstance(exc, jwt.MissingRequiredClaimError):
        return f"This player token lacks the claim '{exc.claim}'."
    if isinstance(exc, jwt.ImmatureSignatureError):
        return "This player token was issued in the future ('iat' or 'nbf'); check the issuer's clock."
    return "This player token is not a valid JWT: its header, claims or signature cannot be read."


def _player(sub: Any) -> str:
    try:
        return validate_name(sub) if isinstance(sub, str) else validate_name("")
    except InvalidPlayers:
        raise BadCredential("This player token's 'sub' is not a player name: 1 to 40 characters, not reserved.") from None


def _tables(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise BadCredential("This player token's 'tables' is not a list of table ids.")
    return tuple(value)


def load_credentials(settings: Settings, now: Clock = utc_now) -> PlayerCredentials:
    """The credentials the settings name; every problem with the key or the JWKS file is one ConfigError line."""
    if settings.player_key_file:
        path = Path(settings.player_key_file)
        key = read_key(path, f"ZAMETANO_PLAYER_KEY_FILE {path}")
    elif settings.module == "eventsourcing.popo":
        key = Ed25519PrivateKey.generate()
    else:
        path = Path(settings.data_dir) / KEY_FILE
        key, _ = read_or_make_key(path, f"the players' key {path}")
    external = None
    if settings.player_issuer and settings.player_jwks_file:
        external = ExternalIssuer(settings.player_issuer, read_jwks(Path(settings.player_jwks_file)))
    return PlayerCredentials(key, settings.player_audience, external=external, clock=now)


def read_jwks(path: Path) -> dict[str, jwt.PyJWK]:
    """The public keys of a JWKS file, by kid (a set of one key may leave its kid out)."""
    what = f"ZAMETANO_PLAYER_JWKS_FILE {path}"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{what} cannot be read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ConfigError(f"{what} is not JSON ({exc})") from None
    try:
        keys = jwt.PyJWKSet.from_dict(data).keys
    except (jwt.PyJWKSetError, jwt.PyJWKError, TypeError, AttributeError) as exc:
        raise ConfigError(f"{what} is not a JSON Web Key Set of public keys ({exc})") from None
    if any(key.key_id is None for key in keys) and len(keys) > 1:
        raise ConfigError(f"{what} holds several keys: each needs its 'kid', which tokens name")
    if any(hasattr(key.key, "private_bytes") for key in keys):
        raise ConfigError(f"{what} holds a private key: give the service the issuer's public keys only")
    return {str(key.key_id): key for key in keys}

