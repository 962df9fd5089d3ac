"""Open mode (no tokens) serves loopback only, whatever serves the app: the peer, the Host it names, the Origin of commands.

The server refuses to listen elsewhere without tokens (api/server.py), but the app may be served by anything
(plain ``gunicorn 'api.app:create_app()'``, a proxy on this machine), and a web page can reach a service on
loopback through the visitor's browser: under a name its own DNS points at 127.0.0.1 (DNS rebinding: the
browser sends that name as Host), or by posting to it from its own origin (the browser sends that Origin).
So, without tokens, every request must come from a loopback address and name a loopback host, and a command
(any method but GET, HEAD, OPTIONS) sent by a browser must come from a page of a loopback origin.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from flask import Flask, current_app, request

from api.errors import error_body
from api.server import is_loopback

READING = ("GET", "HEAD", "OPTIONS")


def host_name(authority: str) -> str:
    """The host of ``host[:port]`` or ``[v6][:port]``."""
    if authority.startswith("["):
        return authority.partition("]")[0] + "]"
    return authority.rpartition(":")[0] if authority.count(":") == 1 else authority


def refusal() -> Any:
    """The 4xx for a request open mode does not serve, or None."""
    peer = request.environ.get("REMOTE_ADDR") or ""
    if peer and not is_loopback(peer):  # no address: a unix socket, which only this machine reaches
        return error_body(403, "This service has no tokens (ZAMETANO_TOKENS) and so answers only clients on this "
                               "machine (loopback); set tokens to serve others.")
    host = request.host or ""
    if not is_loopback(host_name(host)):
        message = (f"The Host {host!r} is not this machine: without tokens (ZAMETANO_TOKENS) the service answers "
                   "only requests to localhost, 127.0.0.1 or [::1] (with any port).")
        return error_body(421, message, {"Host": [message]})
    origin = request.headers.get("Origin")
    if origin is not None and request.method not in READING and not loopback_origin(origin):
        message = (f"A command from the web page of {origin!r} is refused: without tokens (ZAMETANO_TOKENS) the "
                   "service takes commands only from pages of localhost, 127.0.0.1 or [::1], or from clients that "
                   "send no Origin.")
        return error_body(403, message, {"Origin": [message]})
    return None


def loopback_origin(origin: str) -> bool:
    try:
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and parts.hostname is not None and is_loopback(parts.hostname)
    except ValueError:
        return False  # "null" (a sandboxed page, a file) or no URL at all


def register(app: Flask) -> None:
    @app.before_request
    def check_loopback():  # type: ignore[no-untyped-def]
        if current_app.config["ZAMETANO_TOKENS"]:
            return None
        return refusal()
