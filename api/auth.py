"""Bearer tokens, roles and principals (docs/api.md "Authentication"): who sends each request, and what it may do.

Operators command and query, auditors and surveillance only query, all with a token of ZAMETANO_TOKENS; a
player holds a JWT that an operator minted (POST /players/{player}/tokens) or the casino's own issuer signed
(service/credentials.py), and reads the tables his token allows and issues his own commands. Every request
that passes gets its principal, ``g.principal``: the role and the name (the token's name, or the player),
never the token itself; ``viewer()`` says what it may see of the cards (domain/sight.py).
"""

from __future__ import annotations

import hmac
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from flask import Flask, current_app, g, request

from api.errors import error_body
from api.policy import refused_character
from domain.sight import AUDITOR, EVERYTHING, OPERATOR, SURVEILLANCE, Viewer
from service.errors import BadCredential

# /keys is public on purpose: anyone holding a receipt must be able to fetch the key to check it. /docs (and
# the files its page loads) and /games show only what /openapi.json does. The desk's pages and files (api/desk.py) hold
# no table data: a browser cannot send a token with a page it navigates to, so the page asks for one and
# sends it with every API call it makes.
OPEN_PATHS = ("/healthz", "/readyz", "/metrics", "/openapi.json", "/games", "/keys", "/docs", "/desk")
OPEN_PREFIXES = ("/docs/assets/", "/desk/")
# The role of every request when the service has no tokens: anyone (on loopback) may do everything.
OPEN_ROLE = "open"
PLAYER_ROLE = "player"
# Requests, approves and refuses corrections (domain/corrections.py) and reads what an auditor reads.
SUPERVISOR_ROLE = "supervisor"
# Records deposits and withdrawals in players' purses (docs/wallet.md) and reads what an operator reads.
CASHIER_ROLE = "cashier"
PURSE = re.compile(r"/players/[^/]+/purse")
# What a player's token may call besides a table's (PLAYER_TABLE_PATHS): his own identity, the keys, and his
# own rounds (api/players.py refuses another player's).
PLAYER_PATHS = ("/me", "/keys")
PLAYER_HISTORY = re.compile(r"/players/[^/]+/(?:rounds|purse)")
# A table's reads a player's token may make (each shows him his own cards only), and the one write: his
# commands, which the table's acting rule checks (domain/acting.py). The table's free decisions are not among
# them: they weigh a hand's total before the hands are shown. The roads are: they read only decided coups.
PLAYER_TABLE_PATHS = re.compile(r"/tables/(?P<table>[^/]+)(?:/state|/events|/head|/verify|/roads|/rounds(?:/\d+)?)?")
PLAYER_COMMANDS = re.compile(r"/tables/(?P<table>[^/]+)/commands")
# What each role sees of the cards; a service without tokens (on loopback only) shows everything.
VIEWERS = {"operator": Viewer(OPERATOR), "auditor": Viewer(AUDITOR), "surveillance": Viewer(SURVEILLANCE),
           "supervisor": Viewer(AUDITOR), CASHIER_ROLE: Viewer(OPERATOR),
           OPEN_ROLE: EVERYTHING}
READING = ("GET", "HEAD", "OPTIONS")
# RFC 9110 11.6.1 and RFC 6750 3: a 401 names the scheme that would be accepted.
CHALLENGE = 'Bearer realm="zametano"'


@dataclass(frozen=True)
class Principal:
    """Who sends a request: a role, and the name the log and the service know it by (the token's name, or the
    player; None on a service without tokens). A player's token may be limited to some tables (None: all)."""

    role: str
    name: str | None = None
    tables: tuple[str, ...] | None = None
    expires_at: str | None = None


OPEN = Principal(OPEN_ROLE)


def register(app: Flask) -> None:
    @app.before_request
    def check_token():  # type: ignore[no-untyped-def]
        tokens: dict[str, tuple[str, str]] = current_app.config["ZAMETANO_TOKENS"]
        if not tokens:
            g.principal = OPEN  # no tokens configured: open, and the server only listens on loopback
        if request.path in OPEN_PATHS or request.path.startswith(OPEN_PREFIXES):
            return None
        token = bearer()
        try:
            principal = identify(tokens, token)
        except BadCredential as exc:
            return unauthorized(exc.message, invalid=True)
        if principal is None:
            return unauthorized("Send 'Authorization: Bearer <token>' with a token this service knows.")
        g.principal = principal
        return refusal(principal)


def bearer() -> str | None:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


def identify(tokens: dict[str, tuple[str, str]], token: str | None) -> Principal | None:
    """The principal of a bearer token: a token of ZAMETANO_TOKENS, a player's JWT (BadCredential when it does
    not verify), OPEN on a service without tokens, or None."""
    if token:
        for known, (role, name) in tokens.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                return Principal(role, name)
        if token.count(".") == 2:  # a JWT's header, claims and signature: a player's token
            claims = current_app.extensions["zametano_credentials"].verify(token)
            if refused_character(claims.player):  # an external issuer's: held to the names a table could seat
                raise BadCredential("This player token's 'sub' is not a player name: it holds a character names may not.")
            player = unicodedata.normalize("NFC", claims.player)
            return Principal(PLAYER_ROLE, player, claims.tables, claims.expires_at)
    return None if tokens else OPEN


def refusal(principal: Principal) -> Any:
    """The 403 for what this principal's role may not do, or None."""
    if principal.role == PLAYER_ROLE:
        return player_refusal(principal)
    if principal.role == SUPERVISOR_ROLE and request.method == "POST" and PLAYER_COMMANDS.fullmatch(request.path):
        return None  # a supervisor's corrections; the service refuses him any other command
    if request.method == "POST" and PURSE.fullmatch(request.path):
        if principal.role in (CASHIER_ROLE, OPEN_ROLE):
            return None
        return error_body(403, "Deposits and withdrawals need a cashier's token.")
    if request.method not in READING and principal.role not in ("operator", OPEN_ROLE):
        return error_body(403, f"The role '{principal.role}' may only read; commands need an operator token.")
    return None


def player_refusal(principal: Principal) -> Any:
    """The 403 for what a player's token may not do, or None: it reads /me, /keys and a table's state, events,
    head, rounds and verification, and posts commands, on the tables its ``tables`` claim names (all if none)."""
    reading = request.method in READING
    if reading and (request.path in PLAYER_PATHS or PLAYER_HISTORY.fullmatch(request.path)):
        return None
    table = PLAYER_TABLE_PATHS.fullmatch(request.path) if reading else None
    table = table or (PLAYER_COMMANDS.fullmatch(request.path) if request.method == "POST" else None)
    if table is None:
        return error_body(403, "A player's token reads GET /me, GET /players/<himself>/rounds and a table (its state, "
                               "events, head, rounds, verification) and posts its own commands there; everything "
                               "else needs an operator's or auditor's token.")
    if principal.tables is not None and table["table"].lower() not in {t.lower() for t in principal.tables}:
        return error_body(403, f"This player token is limited to the tables {', '.join(principal.tables)}.")
    return None


def viewer() -> Viewer:
    """What this request's principal may see of the cards (domain/sight.py): a player his own."""
    principal = current_principal() or OPEN
    if principal.role == PLAYER_ROLE:
        return Viewer(PLAYER_ROLE, principal.name)
    return VIEWERS.get(principal.role, Viewer(OPERATOR))


def unauthorized(message: str, *, invalid: bool = False) -> Any:
    response = error_body(401, message)
    # RFC 6750 3.1: a token that was sent but does not verify is an invalid_token.
    response.headers["WWW-Authenticate"] = CHALLENGE + (', error="invalid_token"' if invalid else "")
    return response


def current_principal() -> Principal | None:
    """This request's principal (OPEN when the service has no tokens); None on an open path."""
    principal: Principal | None = g.get("principal")
    return principal


def credential() -> dict[str, str | None]:
    """Who issues this request's command, as the service takes it: ``by``, the name its events record (the
    token's name, or the player; None on a service without tokens, where nothing is recorded), and
    ``as_player``, the player a player's credential speaks for (None: the house's credential), and
    ``as_supervisor``, the supervisor a supervisor's token names (the only one who issues corrections)."""
    principal = current_principal()
    if principal is None:
        return {"by": None, "as_player": None, "as_supervisor": None}
    return {"by": principal.name, "as_player": principal.name if principal.role == "player" else None,
            "as_supervisor": principal.name if principal.role == SUPERVISOR_ROLE else None}
