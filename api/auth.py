"""Bearer tokens and roles (docs/api.md "Authentication"): operators command and query, auditors only query."""

from __future__ import annotations

import hmac

from flask import Flask, current_app, g, request

from api.errors import error_body

# /keys is public on purpose: anyone holding a receipt must be able to fetch the key to check it. /docs (and
# the files its page loads) shows only what /openapi.json does. The desk's pages and files (api/desk.py) hold
# no table data: a browser cannot send a token with a page it navigates to, so the page asks for one and
# sends it with every API call it makes.
OPEN_PATHS = ("/healthz", "/readyz", "/metrics", "/openapi.json", "/keys", "/docs", "/desk")
OPEN_PREFIXES = ("/docs/assets/", "/desk/")
# The role of every request when the service has no tokens: anyone (on loopback) may do everything.
OPEN_ROLE = "open"
# RFC 9110 11.6.1 and RFC 6750 3: a 401 names the scheme that would be accepted.
CHALLENGE = 'Bearer realm="zametano"'


def register(app: Flask) -> None:
    @app.before_request
    def check_token():  # type: ignore[no-untyped-def]
        tokens: dict[str, str] = current_app.config["ZAMETANO_TOKENS"]
        if not tokens:
            g.role = OPEN_ROLE  # no tokens configured: open, and the server only listens on loopback
            return None
        if request.path in OPEN_PATHS or request.path.startswith(OPEN_PREFIXES):
            return None
        header = request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        role = None
        if scheme.lower() == "bearer":
            for known, known_role in tokens.items():
                if hmac.compare_digest(known.encode(), token.strip().encode()):
                    role = known_role
        if role is None:
            response = error_body(401, "Send 'Authorization: Bearer <token>' with a token this service knows.")
            response.headers["WWW-Authenticate"] = CHALLENGE
            return response
        if request.method not in ("GET", "HEAD", "OPTIONS") and role != "operator":
            return error_body(403, f"The role '{role}' may only read; commands need an operator token.")
        g.role = role
        return None


def current_role() -> str | None:
    """The role of this request's token (``open`` when the service has none); None on an open path."""
    return g.get("role")


def credential_name() -> str | None:
    """The name a command's events record as ``by``: the role of the token that issued it (``open`` when the
    service has no tokens)."""
    return current_role()
