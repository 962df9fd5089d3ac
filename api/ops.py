"""Operations: liveness, readiness and Prometheus metrics.

Under gunicorn (api/server.py) the workers keep their metrics in files of one folder,
PROMETHEUS_MULTIPROC_DIR, and /metrics adds up every worker's, the dead ones' counters included: each
scrape sees the whole server, whichever worker answers, and no counter ever goes down. A single process
(tests, ``flask run``) answers from its own memory. The metrics the service keeps are service/metrics.py's;
here are the HTTP ones. No label value is taken from a request: routes are the templates of the app's own
routes, methods and outcomes come from fixed lists, commands from the registered games.
"""

from __future__ import annotations

import glob
import math
import os
from typing import Any

from flask import Flask, Response, current_app, request
from flask_smorest import Blueprint
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, disable_created_metrics, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.multiprocess import MultiProcessCollector

from api import edge, logs
from api.errors import unavailable
from api.policy import checked_body
from service import metrics
from service.errors import StoreUnavailable
from service.store import as_outage

# A single process would add a `_created` series to every counter; the workers' shared files have none.
disable_created_metrics()
blp = Blueprint("operations", __name__, description="Liveness, readiness and metrics.")
# What a command's answer was, by its status: every label value is one of these.
OUTCOMES = ("ok", "invalid", "unauthorized", "not_found", "conflict", "refused", "rate_limited", "unavailable", "error")
_OUTCOME_OF = {401: "unauthorized", 403: "unauthorized", 404: "not_found", 409: "conflict", 422: "refused",
               429: "rate_limited", 503: "unavailable"}
# A command takes a few milliseconds; an outage answers within POSTGRES_CONNECT_TIMEOUT (3 s).
COMMAND_BUCKETS = (0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

HTTP_REQUESTS = Counter(
    "zametano_http_requests_total",
    "HTTP requests answered, by method, route template and status.",
    ["method", "route", "status"],
)
COMMAND_SECONDS = Histogram(
    "zametano_command_duration_seconds",
    "Table commands (POST /tables/{table_id}/commands), from the request's arrival to its answer, by command "
    "and outcome.",
    ["command", "outcome"],
    buckets=COMMAND_BUCKETS,
)


def outcome(status: int) -> str:
    if status < 400:
        return "ok"
    if status >= 500:
        return _OUTCOME_OF.get(status, "error")
    return _OUTCOME_OF.get(status, "invalid")


@blp.route("/healthz")
def healthz():  # type: ignore[no-untyped-def]
    """The process is up."""
    return {"status": "ok"}


@blp.route("/readyz")
def readyz():  # type: ignore[no-untyped-def]
    """The event store answers (within about two seconds; 503 otherwise, never a hang).

    `read_model` says how far the read model (listings, rounds, audits) is behind the event log: `lag` in
    events, `position` and `head` the last notification indexed and recorded, `following` whether this
    process's background follower runs (reading the log, or waiting with nothing to read it for), `indexing`
    whether it is the one process that indexes (it holds the indexing lease; the others' followers read the log
    only for their open live streams). A lag does not make the server unready: a query that needs
    the read model waits for it or brings it up to date itself. `at_rest` says whether the stored events are
    encrypted (`encrypted`) and under which `key` (`cipher key file`, `CIPHER_KEY`, or null: a store made
    before encryption by default, kept in clear, or one in memory).
    """
    service = current_app.extensions["zametano"]
    try:
        service.ping()
        read_model = service.read_model_status()
    except Exception as exc:  # noqa: BLE001 - any failure of the store means not ready
        metrics.READ_MODEL_LAG.set(math.nan)
        outage = as_outage(exc) or StoreUnavailable(f"{type(exc).__name__}: {exc}")
        return unavailable(outage, "The event store is not reachable.")
    metrics.READ_MODEL_LAG.set(read_model["lag"])
    return {"status": "ready", "read_model": read_model, "at_rest": service.at_rest.status()}


@blp.route("/metrics")  # its answer is documented with the other operations' in api/openapi.py (OPERATIONS)
def metrics_text():  # type: ignore[no-untyped-def]
    """Prometheus metrics of the whole server (every worker's, added up), in the text format 0.0.4.

    Requests by method, route template and status; command latency by command and outcome; conflicts,
    retries, idempotent repeats, database errors, PostgreSQL connections in use, and the read model's lag
    (measured at each scrape).
    """
    measure_lag()
    if "PROMETHEUS_MULTIPROC_DIR" in os.environ:
        registry = CollectorRegistry()
        WorkersCollector(registry)
    else:
        registry = REGISTRY
    return Response(generate_latest(registry), content_type=CONTENT_TYPE_PLAIN_0_0_4)


# A worker's metrics file holds the length of what it holds in its first bytes.
HEADER_BYTES = 8


class WorkersCollector(MultiProcessCollector):
    """prometheus_client's collector of the workers' files, leaving out a file a worker is making: it is empty
    for a moment before the library sizes it, and read then it failed the whole scrape (a 500, struct.error)
    though it holds nothing yet. (A dead worker's live gauges' files, removed while a scrape reads, the library
    skips itself.)"""

    def collect(self):  # type: ignore[no-untyped-def]
        files = [f for f in glob.glob(os.path.join(self._path, "*.db")) if _has_header(f)]
        return self.merge(files, accumulate=True)


def _has_header(path: str) -> bool:
    try:
        return os.path.getsize(path) >= HEADER_BYTES
    except OSError:  # a live gauge's file, removed since it was listed: the library skips it
        return False


def measure_lag() -> None:
    """The read model's lag now (NaN when the store does not answer: an old number would look current)."""
    try:
        lag = current_app.extensions["zametano"].read_model_status()["lag"]
    except Exception:  # noqa: BLE001 - the scrape still answers; the store's trouble shows on /readyz
        lag = math.nan
    metrics.READ_MODEL_LAG.set(lag)


def register(app: Flask) -> None:
    @app.after_request
    def count(response: Any) -> Any:
        answered = HTTP_REQUESTS.labels(logs.method(), logs.route(), str(response.status_code))
        timed, seconds = None, logs.elapsed()
        if request.endpoint == "tables.Commands":
            body = checked_body()  # None when the body was refused, or never read (no valid token)
            command = metrics.command_label(body.get("command") if isinstance(body, dict) else None)
            timed = COMMAND_SECONDS.labels(command, outcome(response.status_code))

        def counted() -> None:
            answered.inc()
            if timed is not None:
                timed.observe(seconds)

        edge.after_response(response, counted)
        return response


__all__ = ["blp", "register"]
