"""Names that only a framework or library uses, for vulture (tests/unit/test_code_shape.py): each is read or
called by name from outside this code, so no caller of ours appears. Parsed by vulture, never imported."""

# ruff: noqa
# mypy: ignore-errors

_ = None

# Flask: the app's JSON provider reads sort_keys; the input policy keeps the body in flask.g.json_body, which
# checked_body() reads with g.get("json_body").
_.sort_keys
_.json_body

# prometheus_client: a registry calls its collectors' collect() (api/ops.py WorkersCollector).
_.collect

# gunicorn: settings read from api/gunicorn_conf.py by name; BaseApplication calls load_config(); the
# post_fork hook takes (server, worker).
accesslog
control_socket_disable
worker_class
keepalive
worker_connections
_.load_config
worker

# gunicorn: api/edge.py's Worker is named by its dotted path in the worker_class setting; gunicorn calls its
# check_config() and get_thread_pool(); a WSGI body stream has readline(), which the API never calls.
_.Worker
_.check_config
_.get_thread_pool
_.readline
# eventsourcing: its SQLite pool calls _create_connection() for each new connection (service/embedded.py),
# and sqlite3 reads a connection's row_factory.
_._create_connection
_.row_factory
# Python: a module's __getattr__ answers `from api.server import Server` (scripts/bench_http.py).
__getattr__

# eventsourcing: an event's apply() is called by its mutate(); the Application reads snapshotting_intervals
# and calls _take_snapshots() and _notify() after each save; the repository reads its event_store; a
# subscription reads _notifications_index in __next__.
_.apply
_._take_snapshots
_._notify
_.snapshotting_intervals
_.event_store
_._notifications_index

# psycopg_pool: the reconnection attempt's hooks, called by the pool.
_.update_delay
_.time_to_give_up

# apispec calls a plugin's init_spec() and operation_helper(); flask-smorest's Api reads ERROR_SCHEMA and
# DEFAULT_ERROR_RESPONSE_NAME; Flask calls the view of /docs's files (api/openapi.py).
_.init_spec
_.operation_helper
_.ERROR_SCHEMA
_.DEFAULT_ERROR_RESPONSE_NAME
asset

# eventsourcing: get_topic() reads an event class's TOPIC (set by domain/events.py's keep_topics), the topic
# a stored event names its class by.
_.TOPIC

# Event fields no code of ours reads by name: every field of an event is read through dataclasses.fields()
# (TableEvent.data), hashed into the chain, shown by the events API and checked by the audit.
disposition  # domain/card_lottery/events.py: PrizeUnclaimed
to_kitty  # domain/card_lottery/events.py: Stage1Ended
from_banker  # domain/chemin_de_fer/events.py: BankPassed
decision  # domain/punto_banco/events.py: DrawDecided
player_hand  # domain/punto_banco/events.py: CoupDecided
banker_hand  # domain/punto_banco/events.py: CoupDecided

# flask-smorest: a Blueprint's arguments() reads ARGUMENTS_PARSER (api/tables.py sets the policy's parser).
_.ARGUMENTS_PARSER

# marshmallow: the fields of api/players.py's schemas, read by name when a schema dumps (as api/schemas.py's,
# which tests/unit/test_code_shape.py leaves out).
started_at
ended_at
balance
theoretical_loss
next_cursor

# flask-smorest: its Api registers its own _openapi_json as the view of /openapi.json (api/openapi.py overrides it).
_._openapi_json

# api/schemas.py as_given: flask-smorest calls the schema's dump, which it replaces.
_.dump
# service/onetrip.py: the library builds its recorder from APPLICATION_RECORDER_TOPIC (service/bootstrap.py).
OneTripRecorder

# service/streams/hub.py: whether the follower has subscribed, which the streams' tests wait for before they
# count reads (its first subscription makes every stream read the log again).
_.hearing

# domain/corrections.py: a reversal names the payment it reverses, for auditors reading the log (never read back).
reverses
# api/adjustments.py: an adjustment's fields, which marshmallow reads from the schema (the fields of api/schemas.py are
# left out of the check as a whole).
decided_by
decided_at
# api/money.py: a transaction's times, which marshmallow reads from the schema; domain/purse.py: the wallet's own
# balance as it answered a debit or a delivery, recorded for auditors (never read back).
recorded_at
settled_at
wallet_balance
