"""What /openapi.json says besides the views' schemas, and /docs.

What /openapi.json says besides the views' schemas: every status an operation can answer, with the one
error body, the headers it reads and sends, who may call it, and /docs, the document as a page to try.

A view lists its own refusals with ``answers(...)``; what depends on the path alone is added here from the
same tables the code obeys: a 401 and the bearer scheme unless the path is open (api/auth.py), a 429
unless it is never rate-limited (api/ratelimit.py). tests/api/test_openapi_truth.py holds every response
of every operation to the document."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from importlib.resources import files
from typing import Any

import flask_smorest
from apispec import APISpec, BasePlugin
from flask import Blueprint, Flask, send_from_directory
from flask_smorest import Blueprint as ApiBlueprint

from api import auth, pages, ratelimit
from api.schemas import ErrorSchema, HeadChangeSchema, HealthSchema, ReadinessSchema

NDJSON = "application/x-ndjson"
SSE = "text/event-stream"
BEARER = "bearer"
DOCS = "/docs"
# The Swagger UI files, as the flask-swagger-ui package installs them (its version is the UI's).
ASSETS = str(files("flask_swagger_ui") / "dist")


def _header(description: str, schema: dict[str, Any] | None = None, required: bool = True) -> dict[str, Any]:
    return {"description": description, "schema": schema or {"type": "string"}, "required": required}


HEADERS = {
    "ETag": _header('The version of the table the state shows, quoted ("7"): send it back as If-Match.',
                    {"type": "string", "pattern": '^"[0-9]+"$'}),
    "Location": _header("The new table's URL.", {"type": "string", "pattern": "^/tables/[^/]+$"}),
    "Retry-After": _header("Seconds to wait before trying again.", {"type": "integer", "minimum": 1}),
    "WWW-Authenticate": _header('The scheme this service takes: Bearer realm="zametano".'),
    "Allow": _header("The methods this path takes."),
    "DocumentTag": _header("A digest of the document's bytes: send it back as If-None-Match to hear 304 while it is "
                           "unchanged.", {"type": "string", "pattern": '^"[0-9a-f]+"$'}),
    "X-Request-Id": _header("The request's id, as the service's log names it: quote it when reporting a problem.",
                            required=False),
}
# Request headers, each declared as a parameter of the operations that read it.
PARAMETERS = {
    "If-Match": {
        "required": False, "schema": {"type": "string"},
        "description": 'The version the command expects the table at, as its ETag gives it: "7" (or W/"7"); the '
                       "command is a 409 unless the table is still there. `*`: any version (the table must exist). "
                       "Anything else is a 400. On a GET of a state, a version other than the state's is a 412.",
    },
    "If-None-Match": {
        "required": False, "schema": {"type": "string"},
        "description": 'The ETag last read (a state\'s version, "7", or a digest of an answer): a 304 without a '
                       "body while it is still the one.",
    },
    "Last-Event-ID": {
        "required": False, "schema": {"type": "string"},
        "description": "With `Accept: text/event-stream`: the `id` of the last message a stream received (EventSource "
                       "sends it when it connects again); the stream resumes after it. Not a whole number: a 400.",
    },
    "Idempotency-Key": {
        "required": False, "schema": {"type": "string"},
        "description": "A key of the client's choosing: a command sent again with the same key and body gets the first "
                       "answer and appends nothing; the same key with another body is a 422.",
    },
}
ERROR_HEADERS: dict[int, dict[str, Any]] = {
    401: {"WWW-Authenticate": "WWW-Authenticate"},
    405: {"Allow": "Allow"},
    429: {"Retry-After": "Retry-After"},
    # A store that is down or busy says when to try again; one the service cannot read (a wrong
    # CIPHER_KEY) does not, since waiting will not mend it.
    503: {"Retry-After": {**HEADERS["Retry-After"], "required": False}},
}
REFUSALS = {
    400: "The body is not JSON this service reads, or a header (If-Match, Last-Event-ID) names nothing it can use.",
    401: "No token, or one this service does not know (only when tokens are configured).",
    403: "The token's role may not do this: an auditor only reads.",
    404: "No such table, version, moment or round.",
    405: "This path does not take the method.",
    406: "The Accept header does not name the type this path answers in (`text/event-stream`).",
    409: "If-Match names a version that is no longer the table's, another command won the race, or the table's "
         "stored history is damaged (`verify`, `damaged_version`).",
    413: "The body is larger than the service reads (`max_bytes`).",
    412: "If-Match names another version than the state's (on a GET).",
    415: "The body was not sent as Content-Type: application/json.",
    422: "The request does not fit the schema, or the rules refuse it; the message says what is allowed.",
    429: "Too many requests from this client (`retry_after`).",
    503: "The event store is not reachable now, or cannot be read; or this worker can open no live stream now "
         "(it holds ZAMETANO_MAX_STREAMS, is stopping, or serves one request at a time).",
}
# The name of each error's response in components/responses.
NAMES = {code: HTTPStatus(code).phrase.replace(" ", "").replace("-", "") for code in REFUSALS}


def answers(*codes: int, reads: tuple[str, ...] = ()) -> Callable[[Any], Any]:
    """Documents a view's answers besides its success (each a status of REFUSALS, or 304) and the request
    headers it reads (names of PARAMETERS). The 401 and 429 every guarded path can answer are added by the
    plugin below."""
    unknown = [c for c in codes if c not in REFUSALS and c != 304] + [h for h in reads if h not in PARAMETERS]
    if unknown:
        raise ValueError(f"not documented in api/openapi.py: {unknown}")
    return ApiBlueprint.doc(**{"x-answers": list(codes), "x-reads": list(reads)})


# The operations of api/ops.py, which return plain dicts and text: their success and refusals.
OPERATIONS: dict[str, dict[str, Any]] = {
    "/healthz": {"responses": {200: {"description": "The process is up.",
                                     "content": {"application/json": {"schema": "Health"}}}}},
    "/readyz": {"responses": {200: {"description": "The event store answers; the read model's lag.",
                                    "content": {"application/json": {"schema": "Readiness"}}}},
                "x-answers": [503]},
    "/metrics": {"responses": {200: {"description": "Prometheus text exposition, format 0.0.4 (`text/plain; version=0.0.4`).",
                                     "content": {"text/plain": {"schema": {"type": "string"}}}}}},
}
# The documents that do not change while the service runs: their strong ETag, and 304 while it is the client's.
UNCHANGED = {
    304: {"description": "The document named by If-None-Match is still this one: no body.",
          "headers": {"ETag": "DocumentTag", "X-Request-Id": "X-Request-Id"}},
}
_DOCUMENT = {"parameters": ["If-None-Match"]}
# The document and its page, which flask-smorest serves (the page's files: asset() below), and the games alone
# (api/pages.py).
OWN_PATHS: dict[str, dict[str, Any]] = {
    "/openapi.json": {"summary": "This document.", "tags": ["documentation"], **_DOCUMENT, "responses": {200: {
        "description": "The OpenAPI document.", "headers": {"ETag": "DocumentTag"},
        "content": {"application/json": {"schema": {"type": "object", "additionalProperties": True}}}}, **UNCHANGED}},
    "/games": {"summary": "The games (this document's x-games alone): who plays, roles, options, accounts, commands.",
               "tags": ["documentation"], **_DOCUMENT, "responses": {200: {
                   "description": "Every game by its name.", "headers": {"ETag": "DocumentTag"},
                   "content": {"application/json": {"schema": {"type": "object", "additionalProperties": True}}}},
                   **UNCHANGED}},
    DOCS: {"summary": "This document as an interactive page (Swagger UI), served with its files.",
           "tags": ["documentation"], "responses": {200: {
               "description": "The page.", "content": {"text/html": {"schema": {"type": "string"}}}}}},
}


class HttpPlugin(BasePlugin):
    """Completes each operation as apispec registers it: its refusals as references to the one error
    response of their status, its header parameters, its security, and X-Request-Id on every answer."""

    def init_spec(self, spec: APISpec) -> None:
        for name, header in HEADERS.items():
            spec.components.header(name, header)
        for name, parameter in PARAMETERS.items():
            spec.components.parameter(name, "header", parameter)
        spec.components.security_scheme(BEARER, {"type": "http", "scheme": "bearer"})
        spec.components.schema("Health", schema=HealthSchema)
        spec.components.schema("Readiness", schema=ReadinessSchema)
        spec.components.schema("HeadChange", schema=HeadChangeSchema)
        for code, description in REFUSALS.items():
            headers = {**ERROR_HEADERS.get(code, {}), "X-Request-Id": "X-Request-Id"}
            spec.components.response(NAMES[code], {
                "description": description, "headers": headers,
                "content": {"application/json": {"schema": ErrorSchema}},
            })

    def operation_helper(self, path: str | None = None, operations: dict[str, Any] | None = None,
                         **kwargs: Any) -> None:
        for operation in (operations or {}).values():
            if path in OPERATIONS:
                operation.update({k: v for k, v in OPERATIONS[path].items() if k != "responses"})
                operation.setdefault("responses", {}).update(OPERATIONS[path]["responses"])
            _complete(path or "", operation)


def _plain_summary(operation: dict[str, Any]) -> None:
    """An operation's summary as Swagger UI shows it, as plain text (it renders only the description as Markdown):
    its first sentence, backticks taken out; the whole text stays at the head of the description."""
    summary = " ".join(str(operation.get("summary", "")).split())
    first = summary.split(". ", 1)[0].rstrip(".") + "."
    if first == "." or (first == summary and "`" not in summary):
        if summary:
            operation["summary"] = summary  # one line, as a docstring's wrapped first paragraph is not
        return
    operation["summary"] = first.replace("`", "")
    operation["description"] = "\n\n".join(t for t in (summary, operation.get("description")) if t)


def _complete(path: str, operation: dict[str, Any]) -> None:
    _plain_summary(operation)
    responses: dict[Any, Any] = operation.setdefault("responses", {})
    for code, response in list(responses.items()):
        # flask-smorest's own 422 of a view with arguments: the view's answers() says whether it is one.
        if isinstance(response, str) and response in HTTPStatus.__members__:
            del responses[code]
    codes = set(operation.pop("x-answers", []))
    reads = operation.pop("x-reads", [])
    if reads:
        operation.setdefault("parameters", []).extend(reads)
    if path in auth.OPEN_PATHS:
        operation["security"] = []
    else:
        operation["security"] = [{BEARER: []}]
        codes.add(401)
    if path not in ratelimit.EXEMPT_PATHS:
        codes.add(429)
    for response in responses.values():
        if isinstance(response, dict):
            response.setdefault("headers", {})["X-Request-Id"] = "X-Request-Id"
    if 304 in codes:
        codes.remove(304)
        success = next((r for code, r in responses.items() if str(code) == "200" and isinstance(r, dict)), {})
        tag = success.get("headers", {}).get("ETag", "ETag")  # a state's version, or a digest of the answer
        what = "state named by If-None-Match is still the table's" if tag == "ETag" else \
            "answer named by If-None-Match is still this one"
        responses[304] = {"description": f"The {what}: no body.",
                          "headers": {"ETag": tag, "X-Request-Id": "X-Request-Id"}}
    for code in sorted(codes):
        responses[code] = NAMES[code]


class Api(flask_smorest.Api):
    """flask-smorest's Api with the one error schema, and no catch-all "default" response: every status
    an operation answers is listed, and any other is a fault the tests catch."""

    ERROR_SCHEMA = ErrorSchema
    DEFAULT_ERROR_RESPONSE_NAME = None  # type: ignore[assignment]

    def __init__(self, app: Flask) -> None:
        super().__init__(app, spec_kwargs={"extra_plugins": [HttpPlugin()]})
        # Built on its first request, once every blueprint has added its operations; 82 KB, so not once a request.
        self._document = pages.Document(self.spec.to_dict, indent=2)
        for rule in app.url_map.iter_rules():
            if rule.rule in OWN_PATHS:
                self.spec.path(rule=rule, operations={"get": OWN_PATHS[rule.rule]})

    def _openapi_json(self) -> Any:
        return self._document.answer()

    def _openapi_swagger_ui(self) -> Any:
        """flask-smorest's Swagger UI page, with the icon the Swagger UI files carry (a tab without one shows a
        blank page icon, and the browser asks for a /favicon.ico the service does not serve)."""
        page = super()._openapi_swagger_ui()
        icon = f'<link rel="icon" type="image/png" href="{self._swagger_ui_url}favicon-32x32.png"/>'
        return page.replace("<head>", f"<head>\n    {icon}", 1)


# Swagger UI fetches the document from the page's own server and no validator elsewhere (no other host at all).
SWAGGER_UI = {"validatorUrl": None}
SETTINGS = {
    "OPENAPI_SWAGGER_UI_PATH": DOCS.lstrip("/"),
    "OPENAPI_SWAGGER_UI_URL": "docs/assets/",  # relative to /docs, so it holds under a path prefix too
    "OPENAPI_SWAGGER_UI_CONFIG": SWAGGER_UI,
}

assets = Blueprint("docs_assets", __name__)


@assets.route(f"{DOCS}/assets/<path:name>")
def asset(name: str) -> Any:
    """A file of the Swagger UI page (send_from_directory refuses any path outside the directory)."""
    return send_from_directory(ASSETS, name)
