"""From error to HTTP status, and the one error body.

One table from error to HTTP status, and the one error body of docs/api.md:
``{"code", "status", "message", "errors"}``."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from flask import Flask, current_app, jsonify
from werkzeug.exceptions import HTTPException

from api import logs
from api.http import RequestRefused
from domain.errors import DomainError, NotYourSeat
from service.money import ConcurrentPurse, WalletUnavailable
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
    StreamRefused,
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
    ConcurrentPurse: 503,  # a purse that moved at every one of ten attempts: busy, try again
}


def error_body(code: int, message: str, errors: dict[str, list[str]] | None = None, **extra: Any) -> Any:
    """The error response; ``errors`` maps each part of the request at fault (a field, a query parameter, a
    header) to its messages, and is always there, ``{}`` when no one part is at fault, so that a client reads
    it one way whatever went wrong."""
    body: dict[str, Any] = {"code": code, "status": HTTPStatus(code).phrase, "message": message}
    body["errors"] = errors or {}
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
        return (exc.message.replace("the same idempotency key", "the same Idempotency-Key")
                .replace("with the idempotency key ", "with the header Idempotency-Key: "))
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
        # Every rule refusal is a well-formed request the rules refuse: 422, with what would be allowed; a
        # credential that may not act for that actor at this table is a 403 (domain/acting.py).
        details = dict(exc.details)
        field = details.pop("field", None) or details.pop("option", None)
        status = 403 if isinstance(exc, NotYourSeat) else 422
        return error_body(status, exc.message, {field: [exc.message]} if field else None, **details)

    @app.errorhandler(ServiceError)
    def service_error(exc: ServiceError) -> Any:
        return error_body(SERVICE_STATUS.get(type(exc), 422), in_http_terms(exc))

    @app.errorhandler(WalletUnavailable)
    def wallet_unavailable(exc: WalletUnavailable) -> Any:
        # The wallet, not this service, is away: nothing was staked; trying again in a moment is right.
        response = error_body(503, exc.message, retry_after=exc.retry_after)
        response.headers["Retry-After"] = str(exc.retry_after)
        return response

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

    @app.errorhandler(StreamRefused)
    def stream_refused(exc: StreamRefused) -> Any:
        # With Retry-After when waiting helps (a stream ends, or another worker takes over); without when the
        # server can never hold one (ZAMETANO_MAX_STREAMS=0, sync workers).
        if exc.retry_after is None:
            return error_body(503, exc.message)
        response = error_body(503, exc.message, retry_after=exc.retry_after)
        response.headers["Retry-After"] = str(exc.retry_after)
        return response

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
    if code == 422 and data.get("messages"):
        errors = field_errors(data["messages"])
        summary = "; ".join(f"{name}: {'; '.join(problems)}" for name, problems in errors.items())
        return error_body(422, "The request does not fit the schema: " + summary, errors)
    if code == 400:
        return error_body(400, "The body is not valid JSON; send a JSON object with Content-Type: application/json.")
    if code == 404:
        return error_body(404, exc.description or "No such path.")
    if code == 405:
        allowed = sorted(exc.valid_methods or [])  # type: ignore[attr-defined]
        response = error_body(405, f"Method not allowed here; allowed: {', '.join(allowed)}.")
        response.headers["Allow"] = ", ".join(allowed)  # RFC 9110 15.5.6: a 405 must say what is allowed
        return response
    return error_body(code, data.get("message") or exc.description or HTTPStatus(code).phrase)


# What marshmallow calls the whole of what it read, by where it read it.
WHOLE = {"json": "body", "query": "query"}


def field_errors(messages: dict[str, Any]) -> dict[str, list[str]]:
    """webargs' messages (``{"json": {"players": {"1": ["..."]}}}``, by where each was read, nested like the
    data) as the error body's ``errors``: ``{"players.1": ["..."]}``. The place a value was read from is
    left out (no two places share a name here); marshmallow's ``_schema`` (the whole object) becomes the
    name of what holds it, ``body`` or ``query`` at the top."""
    out: dict[str, list[str]] = {}
    for location, nested in messages.items():
        _collect(nested, WHOLE.get(location, location), "", out)
    return out


def _collect(value: Any, whole: str, path: str, out: dict[str, list[str]]) -> None:
    if isinstance(value, dict):
        for key, inner in value.items():
            name = path if key == "_schema" else f"{path}.{key}" if path else str(key)
            _collect(inner, whole, name, out)
    elif isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        for inner in value:
            _collect(inner, whole, path, out)
    else:
        problems = value if isinstance(value, list) else [value]
        out.setdefault(path or whole, []).extend(str(p) for p in problems)
