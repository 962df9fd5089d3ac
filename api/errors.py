"""One table from error to HTTP status, and the one error body of docs/api.md:
``{"code", "status", "message", "errors"}``."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from flask import Flask, current_app, jsonify
from werkzeug.exceptions import HTTPException

from api import logs
from api.http import RequestRefused
from domain.errors import DomainError
from service.errors import (
    ConcurrentWrite,
    DamagedLog,
    IdempotencyKeyReused,
    IndexIncomplete,
    IndexUnreadable,
    NotFoundInHistory,
    ServiceError,
    StoreUnavailable,
    StoreUnreadable,
    TableNotFound,
    VersionMismatch,
)
from service import metrics
from service.store import STORE_ERRORS, as_outage

SERVICE_STATUS: dict[type[ServiceError], int] = {
    TableNotFound: 404,
    NotFoundInHistory: 404,
    VersionMismatch: 409,
    ConcurrentWrite: 409,
    IdempotencyKeyReused: 422,
    # The request is fine, the table's stored history is not: 409 says that the resource's state stands in
    # the way (like a version conflict), where a 500 would blame the server and a 503 invite a retry.
    DamagedLog: 409,
    IndexIncomplete: 409,
    IndexUnreadable: 409,
    StoreUnavailable: 503,
}


def error_body(code: int, message: str, errors: dict[str, Any] | None = None, **extra: Any) -> Any:
    body: dict[str, Any] = {"code": code, "status": HTTPStatus(code).phrase, "message": message}
    if errors:
        body["errors"] = errors
    body.update(extra)
    body["request_id"] = logs.request_id()  # the id of the server's log lines for this request (api/logs.py)
    logs.refused(code, message)
    response = jsonify(body)
    response.status_code = code
    return response


def in_http_terms(exc: ServiceError) -> str:
    """The service's message, with the header or the URL that the client uses for what it names."""
    if isinstance(exc, VersionMismatch):
        return (f'If-Match names version {exc.expected}, but the table is at version {exc.actual}; read the table '
                "again and resend.")
    if isinstance(exc, IdempotencyKeyReused):
        return "This Idempotency-Key was already used with a different request body; use a new key."
    if isinstance(exc, StoreUnavailable):
        return exc.message.replace("the same idempotency key", "the same Idempotency-Key")
    if isinstance(exc, DamagedLog):
        return f"{exc.message} See GET /tables/{exc.table_id}/verify."
    if isinstance(exc, (IndexIncomplete, IndexUnreadable)):
        return f"{exc.message} See GET /tables/{exc.table_id}/events and /verify."
    return exc.message


def unavailable(exc: StoreUnavailable, message: str | None = None) -> Any:
    """503 with Retry-After: the store is down or busy; the reason goes to the log only."""
    current_app.logger.warning("event store unavailable: %s", exc.reason)
    metrics.database_error("unavailable")
    response = error_body(503, message or in_http_terms(exc), retry_after=exc.retry_after)
    response.headers["Retry-After"] = str(exc.retry_after)
    return response


def register(app: Flask) -> None:
    @app.errorhandler(DomainError)
    def refused_by_rules(exc: DomainError) -> Any:
        # Every rule refusal is a well-formed request the rules refuse: 422, with what would be allowed.
        details = dict(exc.details)
        field = details.pop("field", None) or details.pop("option", None)
        return error_body(422, exc.message, {field: [exc.message]} if field else None, **details)

    @app.errorhandler(ServiceError)
    def service_error(exc: ServiceError) -> Any:
        return error_body(SERVICE_STATUS.get(type(exc), 422), in_http_terms(exc))

    @app.errorhandler(DamagedLog)
    def damaged_log(exc: DamagedLog) -> Any:
        return error_body(SERVICE_STATUS[DamagedLog], in_http_terms(exc), damaged_version=exc.version,
                          verify=f"/tables/{exc.table_id}/verify")

    @app.errorhandler(RequestRefused)
    def request_refused(exc: RequestRefused) -> Any:
        return error_body(exc.status, exc.message, {exc.field: [exc.message]})

    @app.errorhandler(StoreUnreadable)
    def store_unreadable(exc: StoreUnreadable) -> Any:
        # A server checks this before it starts; a process that skipped the check is misconfigured.
        return error_body(503, str(exc))

    app.register_error_handler(StoreUnavailable, unavailable)

    def store_error(exc: Exception) -> Any:
        # The library's errors that may mean a store down, busy or locked; a broken store stays a 500.
        outage = as_outage(exc)
        if outage is None:
            metrics.database_error("broken")
            raise exc  # a broken store, not an outage: a 500 like any other failure
        return unavailable(outage)

    for error in STORE_ERRORS:
        app.register_error_handler(error, store_error)

    app.register_error_handler(HTTPException, http_error)


def http_error(exc: HTTPException) -> Any:
    """Flask's and flask-smorest's own refusals (a body that is not JSON, a schema not met, no such path) in
    the one error body."""
    code = exc.code or 500
    data = getattr(exc, "data", None) or {}
    errors = data.get("messages")
    if code == 422 and errors:
        return error_body(422, "The request does not fit the schema: " + _summary(errors), errors)
    if code == 400:
        return error_body(400, "The body is not valid JSON; send a JSON object with Content-Type: application/json.")
    if code == 404:
        return error_body(404, exc.description or "No such path.")
    if code == 405:
        return error_body(405, f"Method not allowed here; allowed: {', '.join(sorted(exc.valid_methods or []))}.")
    return error_body(code, data.get("message") or exc.description or HTTPStatus(code).phrase)


def _summary(errors: dict[str, Any]) -> str:
    parts = []
    for location, fields in errors.items():
        if isinstance(fields, dict):
            for name, problems in fields.items():
                text = problems if isinstance(problems, str) else "; ".join(map(str, _flatten(problems)))
                parts.append(f"{name}: {text}")
        else:
            parts.append(f"{location}: {fields}")
    return "; ".join(parts)


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, list):
        return [y for x in value for y in _flatten(x)]
    if isinstance(value, dict):
        return [f"{k}: {'; '.join(map(str, _flatten(v)))}" for k, v in value.items()]
    return [value]
