"""Operations: liveness, readiness and Prometheus metrics (per worker process)."""

from __future__ import annotations

import threading
from collections import Counter

from flask import Flask, Response, current_app, request
from flask_smorest import Blueprint

from api.errors import error_body
from api.policy import checked_body
from domain.games import GAMES
from api.errors import unavailable
from service.errors import StoreUnavailable
from service.store import as_outage

blp = Blueprint("operations", __name__, description="Liveness, readiness and metrics.")
_lock = threading.Lock()
_requests: Counter[tuple[str, str, int]] = Counter()
_commands: Counter[tuple[str, str]] = Counter()
KNOWN_COMMANDS = frozenset(name for game in GAMES.values() for name in game.commands)


@blp.route("/healthz")
def healthz():  # type: ignore[no-untyped-def]
    """The process is up."""
    return {"status": "ok"}


@blp.route("/readyz")
def readyz():  # type: ignore[no-untyped-def]
    """The event store answers (within about two seconds; 503 otherwise, never a hang).

    `read_model` says how far the read model (listings, rounds, audits) is behind the event log: `lag` in
    events, `position` and `head` the last notification indexed and recorded, `following` whether this
    process's background follower is subscribed. A lag does not make the server unready: a query that needs
    the read model waits for it or brings it up to date itself.
    """
    service = current_app.extensions["zametano"]
    try:
        service.ping()
        read_model = service.read_model_status()
    except Exception as exc:  # noqa: BLE001 - any failure of the store means not ready
        outage = as_outage(exc) or StoreUnavailable(f"{type(exc).__name__}: {exc}")
        return unavailable(outage, "The event store is not reachable.")
    return {"status": "ready", "read_model": read_model}


@blp.route("/metrics")
def metrics():  # type: ignore[no-untyped-def]
    """Prometheus text: requests by route and status, commands by name and outcome."""
    lines = [
        "# HELP zametano_http_requests_total HTTP requests answered by this worker.",
        "# TYPE zametano_http_requests_total counter",
    ]
    with _lock:
        for (method, route, status), n in sorted(_requests.items()):
            lines.append(f'zametano_http_requests_total{{method="{method}",route="{route}",status="{status}"}} {n}')
        lines += [
            "# HELP zametano_commands_total Table commands by name and outcome.",
            "# TYPE zametano_commands_total counter",
        ]
        for (command, outcome), n in sorted(_commands.items()):
            lines.append(f'zametano_commands_total{{command="{command}",outcome="{outcome}"}} {n}')
    return Response("\n".join(lines) + "\n", mimetype="text/plain; version=0.0.4")


def count_command(command: str, outcome: str) -> None:
    with _lock:
        _commands[(command, outcome)] += 1


def register(app: Flask) -> None:
    @app.after_request
    def count(response):  # type: ignore[no-untyped-def]
        rule = request.url_rule.rule if request.url_rule else "unmatched"
        with _lock:
            _requests[(request.method, rule, response.status_code)] += 1
        body = checked_body() if request.endpoint == "tables.Commands" else None
        command = body.get("command") if isinstance(body, dict) else None
        if isinstance(command, str):
            # Any other text as a label would let clients grow the metrics without bound or break their format.
            label = command if command in KNOWN_COMMANDS else "other"
            count_command(label, "ok" if response.status_code < 400 else str(response.status_code))
        return response


__all__ = ["blp", "count_command", "register"]
