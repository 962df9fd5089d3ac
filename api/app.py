"""The app factory: builds the service once per process (never at import time, never before a fork)."""

from __future__ import annotations

from typing import Any

from flask import Flask

from api import (adjustments, money, audit, auth, desk, edge, errors, holders, identity, keys, logs, loopback, openapi, ops, pages, players, policy,
                 ratelimit, streams, tables)
from api.schemas import games_document
from service.application import TablesService
from service.config import Settings, load
from service.credentials import PlayerCredentials, load_credentials
from service.store import LazyService


def create_app(settings: Settings | None = None, service: Any = None, credentials: PlayerCredentials | None = None) -> Flask:
    settings = settings or load()
    logs.configure(settings.log_format)  # before Flask's logger is first used, so it takes no handler of its own
    app = Flask("zametano")
    app.config.update(
        API_TITLE="Zametano",
        API_VERSION="1",
        OPENAPI_VERSION="3.0.3",
        OPENAPI_URL_PREFIX="/",
        OPENAPI_JSON_PATH="openapi.json",
        API_SPEC_OPTIONS={"x-games": games_document()},
        JSON_SORT_KEYS=False,
        ZAMETANO_TOKENS=settings.tokens,
        ZAMETANO_STREAM_HEARTBEAT=settings.stream_heartbeat,
        **openapi.SETTINGS,
    )
    app.json.sort_keys = False  # type: ignore[attr-defined]
    if service is None:
        # Built now if the event store answers, else on the first request after it does (service/store.py);
        # a CIPHER_KEY that cannot read the store stops the worker as it is built, with the reason. Its
        # follower keeps the read model up to date in the background (service/readmodel/follower.py).
        service = LazyService(lambda: checked(TablesService(settings, follow=True)))
    app.extensions["zametano"] = service
    app.extensions["zametano_stream_holders"] = holders.Holders(settings.max_streams)
    # Players' tokens are minted and checked without the event store: its outage does not lock players out.
    app.extensions["zametano_credentials"] = credentials or load_credentials(settings)
    # Before the Api, which documents /games among its own paths; its compression runs after every other hook.
    pages.register(app)
    api = openapi.Api(app)
    api.register_blueprint(tables.blp)
    api.register_blueprint(streams.blp)
    api.register_blueprint(audit.blp)
    api.register_blueprint(ops.blp)
    api.register_blueprint(keys.blp)
    api.register_blueprint(identity.blp)
    api.register_blueprint(players.blp)
    api.register_blueprint(adjustments.blp)
    api.register_blueprint(money.blp)
    app.register_blueprint(openapi.assets)
    app.register_blueprint(desk.blp)  # pages, not API operations: outside the OpenAPI document
    logs.register(app)  # first: every answer, even one a later hook gives early, has its request id
    errors.register(app)
    loopback.register(app)  # before anything else reads the request: open mode serves loopback only
    ratelimit.register(app, settings.rate_limit)  # before auth: floods without a valid token count too
    auth.register(app)
    policy.register(app, settings.max_body_bytes)  # after auth: no body is read for an unknown client
    ops.register(app)
    edge.register(app)  # last: a request enters the gate once every check has passed and its body is read
    return app


def checked(service: TablesService) -> TablesService:
    """The service, once it has shown it can read what is stored (a wrong CIPHER_KEY stops here)."""
    try:
        service.check_store()
    except Exception:
        service.close()
        raise
    return service
