"""A per-client rate limit (``ZAMETANO_RATE_LIMIT``): a token bucket per client in each worker process.

The client is the bearer token when it is one this service knows, else the remote address: an unknown
token never buys a fresh bucket. Behind a reverse proxy every client has the proxy's address, so there
the proxy is the place to limit.
"""

from __future__ import annotations

import hmac
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from flask import Flask, current_app, request

from api.errors import error_body
from service.config import RateLimit

EXEMPT_PATHS = ("/healthz", "/readyz", "/metrics")
MAX_CLIENTS = 10_000  # buckets kept per worker; the least recently seen is forgotten (it starts full again)


class TokenBuckets:
    """``limit.burst`` requests at once per client, refilled at ``limit.per_second``."""

    def __init__(self, limit: RateLimit, clock: Callable[[], float] = time.monotonic, max_clients: int = MAX_CLIENTS) -> None:
        self.limit = limit
        self.clock = clock
        self.max_clients = max_clients
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # client -> (tokens, at)
        self._lock = threading.Lock()

    def take(self, client: str) -> float:
        """Spends one token of ``client``'s bucket: 0.0 if there was one, else the seconds until there is."""
        now = self.clock()
        with self._lock:
            tokens, at = self._buckets.pop(client, (float(self.limit.burst), now))
            tokens = min(float(self.limit.burst), tokens + (now - at) * self.limit.per_second)
            wait = 0.0
            if tokens >= 1.0:
                tokens -= 1.0
            else:
                wait = (1.0 - tokens) / self.limit.per_second
            self._buckets[client] = (tokens, now)
            while len(self._buckets) > self.max_clients:
                self._buckets.popitem(last=False)
        return wait


def client_key() -> str:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    token = token.strip()
    if scheme.lower() == "bearer":
        for known in current_app.config.get("ZAMETANO_TOKENS", {}):
            if hmac.compare_digest(known.encode(), token.encode()):
                return "token:" + known
    return "address:" + (request.remote_addr or "unknown")


def register(app: Flask, limit: RateLimit | None) -> None:
    """Register before auth, so that floods of requests without a valid token are limited too."""
    if limit is None:
        return
    buckets = TokenBuckets(limit)
    app.extensions["zametano_rate_limit"] = buckets

    @app.before_request
    def limit_rate():  # type: ignore[no-untyped-def]
        if request.path in EXEMPT_PATHS:
            return None
        wait = buckets.take(client_key())
        if not wait:
            return None
        seconds = max(1, math.ceil(wait))
        response: Any = error_body(
            429,
            f"Too many requests from this client: at most {_rate(limit)}, with bursts of {limit.burst}; "
            f"retry after {seconds} s.",
            retry_after=seconds,
        )
        response.headers["Retry-After"] = str(seconds)
        return response


def _rate(limit: RateLimit) -> str:
    if limit.per_second >= 1:
        return f"{limit.per_second:g} a second"
    return f"{limit.per_second * 60:g} a minute"
