"""The app factory: builds the service once per process (never at import time, never before a fork)."""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask_smorest import Api

from api import audit, auth, errors, ops, tables
from service.application import TablesService
from service.config import Settings, load
from service.store import LazyService


def create_app(settings: Settings | None = None, service: Any = None) -> Flask:
    settings = settings or load()
    app = Flask("zametano")
    app.config.update(
        API_TITLE="Zametano",
        API_VERSION="1",
        OPENAPI_VERSION="3.0.3",
        OPENAPI_URL_PREFIX="/",
        OPENAPI_JSON_PATH="openapi.json",
        JSON_SORT_KEYS=False,
        ZAMETANO_TOKENS=settings.tokens,
    )
    app.json.sort_keys = False  # type: ignore[attr-defined]
    # Built now if the event store answers, else on the first request after it does (service/store.py).
    app.extensions["zametano"] = service if service is not None else LazyService(lambda: TablesService(settings))
    api = Api(app)
    api.spec.components.security_scheme("bearer", {"type": "http", "scheme": "bearer"})
    api.register_blueprint(tables.blp)
    api.register_blueprint(audit.blp)
    api.register_blueprint(ops.blp)
    errors.register(app)
    auth.register(app)
    ops.register(app)
    return app
