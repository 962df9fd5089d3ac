"""The service's Prometheus metrics.

What only the service sees (retries, idempotent repeats, conflicts, group commit's batches, the connection
pool, the database's errors, the read model's lag). The HTTP ones are api/ops.py's.

Every label value comes from a fixed set known here, never from a request: a client that could choose a
label value could add series without bound or break the text format. Under gunicorn the workers share their
values through files (prometheus_client's multiprocess mode, set up by api/server.py before the workers
fork), so /metrics gives one view of the whole server whichever worker answers; the gauges say below how the
workers' values add up.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from domain.games import GAMES

KNOWN_COMMANDS = frozenset(name for game in GAMES.values() for name in game.commands)
OTHER = "other"
CONFLICT_KINDS = ("version_mismatch", "concurrent_write")
# connect: an attempt to open a connection failed; statement_timeout: a statement ran past
# ZAMETANO_STATEMENT_TIMEOUT; unavailable: a request was answered 503 because of the store; broken: a store
# error that is no outage (a 500).
DATABASE_ERROR_KINDS = ("connect", "statement_timeout", "unavailable", "broken")
# table: one table's events (GET /tables/{table_id}/events); heads: every table's head (GET /events).
STREAM_KINDS = ("table", "heads")
# full: the worker held ZAMETANO_MAX_STREAMS streams; credential: the request's credential held its share of
# them (api/holders.py); stopping: the worker was stopping; one_thread: the worker serves one request at a
# time (gunicorn's sync workers), where a stream would hold it whole.
STREAM_REFUSALS = ("full", "credential", "stopping", "one_thread")

RETRIES = Counter(
    "zametano_command_retries_total",
    "Commands decided again on the fresh table after another write to it won the race.",
    ["command"],
)
IDEMPOTENT_REPEATS = Counter(
    "zametano_idempotent_repeats_total",
    "Commands answered with the first response of their Idempotency-Key, appending nothing.",
    ["command"],
)
CONFLICTS = Counter(
    "zametano_conflicts_total",
    "Commands refused with 409: If-Match named an old version, or another write won every retry.",
    ["kind"],
)
# How many commands group commit writes in one transaction: 1 when quiet, more under load (service/groupcommit.py).
GROUP_COMMIT_BATCH = Histogram(
    "zametano_group_commit_batch_commands",
    "Commands of different tables written together in one transaction by group commit.",
    buckets=(1, 2, 4, 8, 16, 32, 64),
)
DATABASE_ERRORS = Counter("zametano_database_errors_total", "Errors of the event store, by kind.", ["kind"])
# Each worker has a pool of its own: the server's connections in use are the sum over the live workers.
POOL_IN_USE = Gauge(
    "zametano_db_pool_connections_in_use",
    "PostgreSQL connections handed out by the workers' pools now.",
    multiprocess_mode="livesum",
)
# One read model for all the workers, each of which looks at it now and then: the latest look is the truth.
READ_MODEL_LAG = Gauge(
    "zametano_read_model_lag_events",
    "Events recorded but not yet in the read model (listings, rounds, audits), as last measured; NaN when "
    "the store could not be asked.",
    multiprocess_mode="livemostrecent",
)
# Each worker counts its own open streams (at most ZAMETANO_MAX_STREAMS): the server's are the sum over the
# live workers.
OPEN_STREAMS = Gauge(
    "zametano_streams_open",
    "Live event streams open now, by kind (table: one table's events; heads: every table's head).",
    ["kind"],
    multiprocess_mode="livesum",
)
STREAMS_REFUSED = Counter(
    "zametano_streams_refused_total",
    "Live event streams refused with 503, by reason (full: the worker held ZAMETANO_MAX_STREAMS; credential: the "
    "credential held its share of them; stopping: "
    "the worker was stopping; one_thread: sync workers, which cannot hold a stream).",
    ["reason"],
)

for _kind in CONFLICT_KINDS:
    CONFLICTS.labels(_kind)
for _kind in DATABASE_ERROR_KINDS:
    DATABASE_ERRORS.labels(_kind)
for _kind in STREAM_KINDS:
    OPEN_STREAMS.labels(_kind)
for _kind in STREAM_REFUSALS:
    STREAMS_REFUSED.labels(_kind)


def command_label(command: object) -> str:
    """A command's name as a label value: a command of a registered game, else ``other``."""
    return command if isinstance(command, str) and command in KNOWN_COMMANDS else OTHER


def database_error(kind: str) -> None:
    DATABASE_ERRORS.labels(kind if kind in DATABASE_ERROR_KINDS else "broken").inc()


def conflict(kind: str) -> None:
    CONFLICTS.labels(kind).inc()


def stream_refused(reason: str) -> None:
    STREAMS_REFUSED.labels(reason).inc()


def batch_written(table_ids: list[object]) -> None:
    """Group commit's hook, told each batch's tables before it is written."""
    GROUP_COMMIT_BATCH.observe(len(table_ids))
