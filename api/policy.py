"""The one input policy of the API, applied at the edge before anything reaches the service.

Bodies: at most ``ZAMETANO_MAX_BODY_BYTES`` (413), UTF-8 JSON nested at most ``MAX_DEPTH`` levels, with
no NaN or Infinity, no key twice in one object and no number of more than ``MAX_DIGITS`` digits (400).
The depth is measured before Python's json parses anything, so a deep body can never exhaust the stack.

Strings (every string field of every schema, and every string inside ``rules``): normalised to NFC, and
refused (422, naming the field) when they hold a character of the Unicode categories in
``REFUSED_CATEGORIES`` (controls such as NUL, format characters such as bidi overrides and zero-width
characters, lone surrogates, private-use and unassigned code points, line and paragraph separators)
or are longer than their limit. Such characters are invisible or ambiguous on a screen or a printed
record, can make two names look alike, and some (NUL, lone surrogates) cannot be stored at all.

Whole numbers: between ``-MAX_INTEGER`` and ``MAX_INTEGER`` (the integers every JSON reader keeps exactly).
"""

from __future__ import annotations

import json
import re
import unicodedata
from datetime import datetime, timezone
from typing import Any

import orjson
from flask import Flask, Response, g, request
from flask.json.provider import DefaultJSONProvider
from marshmallow import ValidationError, fields, validate
from webargs.flaskparser import FlaskParser
from werkzeug.exceptions import RequestEntityTooLarge

from api.errors import error_body
from domain.inputs import MAX_NAME_LENGTH
from domain.words import Spelled

MAX_TEXT_LENGTH = 64  # command names, cards, decks, rule options, cursors: the longest is far shorter
MAX_DEPTH = 32  # the API's bodies nest at most 3 levels
MAX_DIGITS = 1000  # far past MAX_INTEGER, far below Python's 4,300-digit limit on int()
MAX_INTEGER = 2**53 - 1
REFUSED_CATEGORIES = {
    "Cc": "a control character",
    "Cf": "an invisible format character (bidi control, zero-width character, ...)",
    "Cs": "a lone surrogate",
    "Co": "a private-use character",
    "Cn": "an unassigned code point",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
}
ALLOWED = "letters, marks, digits, punctuation, symbols and spaces"
MOMENTS = "from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z"


# --- strings -------------------------------------------------------------------------------------------


def refused_character(text: str) -> str | None:
    """Why ``text`` is refused, naming its first refused character, or None."""
    for position, char in enumerate(text, 1):
        category = unicodedata.category(char)
        if category in REFUSED_CATEGORIES:
            name = unicodedata.name(char, "")
            label = f"U+{ord(char):04X}" + (f" {name}" if name else "")
            return f"character {position} is {label}, {REFUSED_CATEGORIES[category]}"
    return None


def clean_text(text: str, max_length: int = MAX_TEXT_LENGTH) -> str:
    """``text`` in NFC, or a ValidationError that says what is allowed."""
    problem = refused_character(text)
    if problem:
        raise ValidationError(f"Text may hold {ALLOWED} only; {problem}.")
    text = unicodedata.normalize("NFC", text)
    if len(text) > max_length:
        raise ValidationError(f"At most {max_length} characters; got {len(text)}.")
    return text


class Text(fields.String):
    """A string under the policy: NFC, no refused character, at most ``max_length`` characters."""

    def __init__(self, *, max_length: int = MAX_TEXT_LENGTH, **kwargs: Any) -> None:
        kwargs["metadata"] = {"maxLength": max_length, **kwargs.get("metadata", {})}  # for /openapi.json
        super().__init__(**kwargs)
        self.max_length = max_length

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> str:
        return clean_text(super()._deserialize(value, attr, data, **kwargs), self.max_length)


class Name(Text):
    """A player's name: the policy's characters, and the domain's length (which also refuses
    surrounding spaces and the reserved names, with its own message)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_length=MAX_NAME_LENGTH, **kwargs)


class Whole(fields.Integer):
    """A whole number within the policy's range (``strict``: JSON numbers only, never "7" or 7.0);
    ``minimum`` and ``maximum`` narrow it further. ``maximum=None`` is for positions in a log (a version,
    ``after``), where a number past the end has an answer of its own: nothing there."""

    def __init__(
        self, *, strict: bool = True, minimum: int = -MAX_INTEGER, maximum: int | None = MAX_INTEGER, **kwargs: Any
    ) -> None:
        super().__init__(strict=strict, validate=validate.Range(min=minimum, max=maximum), **kwargs)


class JSONValue(fields.Raw):
    """Any JSON value, its strings (keys included) and whole numbers under the policy; what the value
    means is for the rules to say."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        return _clean_value(value)


def _clean_value(value: Any) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return value
    if isinstance(value, int):
        if not -MAX_INTEGER <= value <= MAX_INTEGER:
            raise ValidationError(f"Whole numbers are from {-MAX_INTEGER} to {MAX_INTEGER}.")
        return value
    if isinstance(value, list):
        return [_clean_value(v) for v in value]
    if isinstance(value, dict):
        return {clean_text(k): _clean_value(v) for k, v in value.items()}
    raise ValidationError("Not a JSON value.")


class Moment(fields.AwareDateTime):
    """An RFC 3339 moment with its UTC offset, handed on in UTC; one that has no UTC equivalent
    (year 1 east of Greenwich, year 9999 west of it) is refused instead of overflowing later."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> datetime:
        moment = super()._deserialize(value, attr, data, **kwargs)
        try:
            return moment.astimezone(timezone.utc)
        except OverflowError:
            raise ValidationError(f"A moment {MOMENTS} in UTC, with its offset; got {value!r}.") from None


# --- bodies --------------------------------------------------------------------------------------------


class BodyRefused(ValueError):
    """The body is not JSON this API reads; ``message`` says what is allowed."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


_TOKEN = re.compile(r'[\[\]{}"]')
_STRING_REST = re.compile(r'(?:[^"\\]++|\\.)*+"', re.DOTALL)  # possessive: never backtracks


def nesting_depth(text: str, limit: int = MAX_DEPTH) -> int:
    """How deep arrays and objects nest in ``text`` (brackets inside strings do not count); stops
    counting past ``limit``. One pass from left to right, each character looked at once, so that no
    input (deep, or full of quotes and backslashes) costs more than its length."""
    depth = deepest = position = 0
    while (token := _TOKEN.search(text, position)) is not None:
        if token.group() == '"':
            rest = _STRING_REST.match(text, token.end())
            if rest is None:
                break  # an unterminated string: the parser will say so
            position = rest.end()
            continue
        position = token.end()
        depth += 1 if token.group() in "[{" else -1
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                break
    return deepest


def loads(data: bytes | str) -> Any:
    """JSON as this API reads it, or BodyRefused saying why not."""
    if isinstance(data, (bytes, bytearray)):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BodyRefused(f"The body is not UTF-8 (byte {exc.start + 1}); send JSON in UTF-8.") from None
    depth = nesting_depth(data)
    if depth > MAX_DEPTH:
        raise BodyRefused(f"The body nests arrays and objects more than {MAX_DEPTH} levels deep; at most {MAX_DEPTH} are allowed.")
    try:
        return json.loads(data, parse_constant=_refuse_constant, parse_int=_whole, parse_float=Spelled,
                          object_pairs_hook=_object)
    except json.JSONDecodeError as exc:
        raise BodyRefused(
            f"The body is not valid JSON ({exc.msg}, line {exc.lineno} column {exc.colno}); "
            "send a JSON object with Content-Type: application/json."
        ) from None


def _refuse_constant(name: str) -> Any:
    raise BodyRefused(f"{name} is not a JSON number; send numbers as digits.")


def _whole(digits: str) -> int:
    if len(digits) > MAX_DIGITS:
        raise BodyRefused(f"The body holds a number of {len(digits)} digits; at most {MAX_DIGITS} are read.")
    return int(digits)


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) < len(pairs):
        seen: set[str] = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise BodyRefused(f"The body names the key {json.dumps(twice)} twice in one object; each key may appear once.")
    return result


class JSONProvider(DefaultJSONProvider):
    """Flask's JSON, reading under the policy: ``request.get_json`` anywhere can never recurse without
    bound or accept NaN. Writing goes through orjson, about ten times faster than Python's json on a page
    of events, with Flask's own conversions (dates as HTTP dates, dataclasses, UUIDs); what orjson cannot
    write (an integer past 64 bits, a key that is not a string) falls back to Python's json unchanged."""

    def loads(self, s: str | bytes, **kwargs: Any) -> Any:
        return loads(s)

    def dumps(self, obj: Any, **kwargs: Any) -> str:
        if kwargs:  # a caller asking for json.dumps options gets json.dumps
            return super().dumps(obj, **kwargs)
        return self._bytes(obj).decode()

    def response(self, *args: Any, **kwargs: Any) -> Response:
        if self.compact is False or (self.compact is None and self._app.debug):
            return super().response(*args, **kwargs)  # indented, for reading in debug mode
        obj = self._prepare_response_obj(args, kwargs)
        return self._app.response_class(self._bytes(obj) + b"\n", mimetype=self.mimetype)

    def _bytes(self, obj: Any) -> bytes:
        option = ORJSON_OPTIONS | (orjson.OPT_SORT_KEYS if self.sort_keys else 0)
        try:
            return orjson.dumps(obj, default=self.default, option=option)
        except orjson.JSONEncodeError:
            return super().dumps(obj, separators=(",", ":")).encode()


# Flask's conversions for dates and dataclasses, not orjson's; subclasses of str, int, dict, list as theirs.
ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


BODY_METHODS = ("POST", "PUT", "PATCH", "DELETE")


def register(app: Flask, max_body_bytes: int) -> None:
    """The body limit, and the body checked once before any view reads it. Register after auth, so a
    client without a valid token never has its body read."""
    app.config["MAX_CONTENT_LENGTH"] = max_body_bytes
    provider = JSONProvider(app)
    for setting in ("ensure_ascii", "sort_keys", "compact", "mimetype"):  # writing stays as configured
        setattr(provider, setting, getattr(app.json, setting))
    app.json = provider

    @app.errorhandler(RequestEntityTooLarge)
    def too_large(exc: RequestEntityTooLarge) -> Any:
        limit = app.config["MAX_CONTENT_LENGTH"]
        return error_body(413, f"The body is too large: this service reads at most {limit} bytes.", max_bytes=limit)

    @app.before_request
    def check_body():  # type: ignore[no-untyped-def]
        if request.method not in BODY_METHODS:
            return None  # no view reads a body here
        if not request.is_json:
            # Refused even when it parses as JSON: a browser sends a cross-site form or text/plain body without
            # asking first (no CORS preflight), so reading such bodies as JSON would let any web page a
            # croupier opens issue commands to a service on their machine.
            if request.content_length or request.headers.get("Transfer-Encoding"):
                sent = f"as {request.mimetype}" if request.mimetype else "without a Content-Type"
                message = f"The body was sent {sent}; send it as JSON, with the header Content-Type: application/json."
                return error_body(415, message, {"Content-Type": [message]})
            return None
        data = request.get_data(cache=True)  # a Content-Length over the limit is a 413 here, unread
        if request.content_length is None and len(data) >= max_body_bytes:
            # A streamed (chunked) body is cut at the limit without a word; reaching it is refusal enough.
            raise RequestEntityTooLarge()
        if not data.strip():
            return None  # the schema names the fields that are missing
        try:
            body = loads(data)
        except BodyRefused as exc:
            return error_body(400, exc.message)
        if not isinstance(body, dict):
            message = f"The body must be a JSON object ({{...}}); got {_kind(body)}."
            return error_body(422, message, {"body": [message]})
        g.json_body = body
        return None


def checked_body() -> Any:
    """The request's JSON body once the policy has read it, else None; never reads the body itself."""
    return g.get("json_body")


class BodyParser(FlaskParser):
    """webargs' parser for the views' ``@blp.arguments``, reading the body the policy has already parsed
    instead of parsing it again; a body the policy kept nothing of (none, blank, not JSON by its type) is
    webargs' own to answer, as before."""

    def load_json(self, req: Any, schema: Any) -> Any:
        body = checked_body()
        return body if body is not None else super().load_json(req, schema)


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "true or false"
    if value is None:
        return "null"
    return "a number"
