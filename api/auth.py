"""Bearer tokens and roles (docs/api.md "Authentication"): operators command and query, auditors only query."""

from __future__ import annotations

import hmac

from flask import Flask, current_app, request

from api.errors import error_body

# /keys is public on purpose: anyone holding a receipt must be able to fetch the key to check it. /docs (and
# the files its page loads) shows only what /openapi.json does.
OPEN_PATHS = ("/healthz", "/readyz", "/metrics", "/openapi.json", "/keys", "/docs")
OPEN_PREFIXES = ("/docs/assets/",)
# RFC 9110 11.6.1 and RFC 6750 3: a 401 names the scheme that would be accepted.
CHALLENGE = 'Bearer realm="zametano"'


def register(app: Flask) -> None:
    @app.before_request
    def check_token():  # type: ignore[no-untyped-def]
        tokens: dict[str, str] = current_app.config["ZAMETANO_TOKENS"]
        if not tokens or request.path in OPEN_PATHS or request.path.startswith(OPEN_PREFIXES):
            return None  # no tokens configured: open, and the server only listens on loopback
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
        return None
