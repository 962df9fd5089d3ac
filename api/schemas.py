"""Marshmallow schemas: inputs are ``...Args``, outputs ``...Schema``. They also make /openapi.json."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marshmallow import INCLUDE, Schema, fields, post_dump, validate

from api.policy import JSONValue, Moment, Name, Text, Whole
from domain.acting import PLAYERS_ACT
from domain.game import FieldSpec, Game
from domain.games import GAMES


GAME_NAMES = list(GAMES)
# Opening fields besides players and rules, over every game (each game refuses the ones it does not take).
ROLES: dict[str, list[Game]] = {}
for _game in GAMES.values():
    for _role in _game.roles:
        ROLES.setdefault(_role, []).append(_game)


class _OpenTableArgs(Schema):
    game = Text(required=True, validate=validate.OneOf(GAME_NAMES),
                metadata={"description": "Which game the table plays: " + ", ".join(GAME_NAMES) + "."})
    players = fields.List(Name(), required=True,
                          metadata={"description": "Player names in the order listed (seating by lots uses it)."})
    rules = fields.Dict(keys=Text(), values=JSONValue(), load_default=dict, metadata={
        "description": "The game's options (x-games in this document); omitted ones take their defaults."})
    players_act = Text(
        validate=validate.OneOf(PLAYERS_ACT),
        metadata={"description": "Who issues the players' commands: `croupier` (the default: an operator's token "
                                 "keys them in for the players) or `self` (each player with his own token only; "
                                 "an operator's token is refused with 403). The house's seats stay the operator's."},
    )


def _role_field(role: str, games: list[Game]) -> fields.Field:
    docs = " ".join(f"{game.title}: {game.roles[role]}" for game in games)
    return Name(metadata={"description": docs})


OpenTableArgs = type(
    "OpenTableArgs", (_OpenTableArgs,), {role: _role_field(role, games) for role, games in ROLES.items()}
)


def _command_fields() -> dict[str, fields.Field]:
    """Every field of every game's commands, by name. Here a field is any JSON value under the input policy:
    its shape is checked once, by the game's contract (``FieldSpec``, which names the field and what it must
    be), and documented here with the contract's own JSON Schema where every game gives the name one kind."""
    found: dict[str, list[tuple[Game, str, FieldSpec]]] = {}
    for game in GAMES.values():
        for spec in game.commands.values():
            for name, field in spec.fields.items():
                found.setdefault(name, []).append((game, spec.name, field))
    out: dict[str, fields.Field] = {}
    for name, uses in found.items():
        kinds = {field.kind for _, _, field in uses}
        docs = " ".join(f"{game.title}, {command}: {_sentence(field.doc or field.describe())}"
                        for game, command, field in uses)
        shape = _shape(uses[0][2]) if len(kinds) == 1 else {}
        out[name] = JSONValue(metadata={**shape, "description": docs})
    return out


def _shape(field: FieldSpec) -> dict[str, Any]:
    """What every game's field of this kind is, whatever its choices or bounds: type and, for lists, items."""
    schema = field.json_schema()
    return {k: schema[k] for k in ("type", "items") if k in schema}


def _sentence(text: str) -> str:
    return text if text.endswith(".") else text + "."


class _CommandArgs(Schema):
    command = Text(required=True, metadata={"description": "The command: "
                                            + "; ".join(f"{g.title}: {', '.join(g.commands)}" for g in GAMES.values())
                                            + ". Each game's commands and fields are listed in x-games."})
    player = Name(required=True, metadata={"description": "Who issues the command (the actor)."})


CommandArgs = type("CommandArgs", (_CommandArgs,), _command_fields())


def games_document() -> dict[str, Any]:
    """Every game as the OpenAPI document's ``x-games`` shows it: who plays, the opening roles, the options,
    the accounts, whether it keeps baccarat's roads, and each command with its fields (JSON Schema)."""
    return {
        game.name: {
            "title": game.title,
            "players": {"min": game.players[0], "max": game.players[1]},
            "roles": dict(game.roles),
            "accounts": list(game.accounts),
            "roads": game.roads is not None,
            "options": {o.name: o.json_schema() for o in game.options},
            "commands": {
                spec.name: {
                    "description": spec.doc,
                    "seeded": spec.seeded,
                    "fields": {
                        name: {**field.json_schema(), "optional": field.optional} for name, field in spec.fields.items()
                    },
                }
                for spec in game.commands.values()
            },
        }
        for game in GAMES.values()
    }


class StateQueryArgs(Schema):
    version = Whole(strict=False, minimum=1, maximum=None, metadata={"description": "A past version."})
    at = Moment(format="iso", default_timezone=None, metadata={"description": "A moment (RFC 3339 with offset)."})


class EventsQueryArgs(Schema):
    after = Whole(strict=False, minimum=0, maximum=None, load_default=0)
    limit = Whole(strict=False, minimum=1, maximum=1000, load_default=100)


class _Open(Schema):
    """An output whose shape is partly the game's: the declared fields as declared, and every other key the
    domain returns as it is (never dropped)."""

    class Meta:
        unknown = INCLUDE  # in the OpenAPI document: additionalProperties

    @post_dump(pass_original=True)
    def _keep_the_rest(self, data: dict[str, Any], original: Any, **kwargs: Any) -> dict[str, Any]:
        if isinstance(original, Mapping):
            data.update({k: v for k, v in original.items() if k not in data})
        return data


class ExpectSchema(_Open):
    """A command legal now: who may issue it, and each field with its bounds legal now (``kind``,
    ``optional``; ``min``/``max``, ``choices``, ``cards``, ``count``/``min_count``/``max_count``, ``sum``,
    ``sets``: see the README)."""

    command = fields.String()
    player = fields.String()
    fields_ = fields.Dict(data_key="fields", attribute="fields", metadata={
        "description": "Each field of the command: its kind, whether it is optional, and the bounds legal now."
    })


class ErrorSchema(Schema):
    """The one body of every error. ``errors`` names each part of the request at fault (a body field, with
    dots for a nested one such as ``players.1``; a query parameter; a header) with its messages, and is
    ``{}`` when the fault is not one part. A refusal adds the fields below that let a client act on it
    without reading the message."""

    code = fields.Integer(required=True, metadata={"description": "The HTTP status."})
    status = fields.String(required=True, metadata={"description": "The status's reason phrase."})
    message = fields.String(required=True, metadata={"description": "What went wrong and what is allowed."})
    errors = fields.Dict(
        keys=fields.String(), values=fields.List(fields.String()), required=True,
        metadata={"description": "Each part of the request at fault, with its messages; {} when none is."},
    )
    request_id = fields.String(metadata={"description": "The request's X-Request-Id, to quote when reporting it."})
    retry_after = fields.Integer(metadata={"description": "429, 503: seconds to wait, as in Retry-After."})
    max_bytes = fields.Integer(metadata={"description": "413: the largest body read."})
    damaged_version = fields.Integer(allow_none=True, metadata={"description": "409: where the stored log is damaged."})
    verify = fields.String(metadata={"description": "409: the table's verification, which lists every problem."})
    command = fields.String(metadata={"description": "422: the command that is not one of the game's."})
    allowed = fields.List(fields.String(), metadata={"description": "422: the game's commands."})
    expects = fields.List(fields.Nested(ExpectSchema), metadata={"description": "422: every command legal now."})
    amount = fields.Integer(metadata={"description": "422: the stake refused."})
    max_allowed = fields.Integer(metadata={"description": "422: the largest stake allowed now."})
    choice = fields.String(metadata={"description": "422: the draw or stand refused."})
    required = fields.String(metadata={"description": "422: what the draw rule requires instead."})
    backed = fields.String(metadata={"description": "422: the spot already backed, opposite the one refused."})
    min_stake = fields.Integer(metadata={"description": "422: the least the table takes on a spot."})
    max_stake = fields.Integer(metadata={"description": "422: the most the table takes on a spot."})
    total = fields.Integer(metadata={"description": "422: the stake on the spot the refused one would make."})
    multiple_of = fields.Integer(metadata={"description": "422: banker stakes are multiples of this."})
    names = fields.List(fields.String(), metadata={
        "description": "422: two players' names that are one name (compared after NFKC and case folding) or look alike."})
    player = fields.String(metadata={"description": "422: the player whose purse or wallet refused (docs/wallet.md)."})
    holds = fields.Integer(metadata={"description": "422: what his purse holds."})
    needs = fields.Integer(metadata={"description": "422: what the command needs of it."})
    wallet_reason = fields.String(metadata={"description": "422: the wallet's reason for refusing the debit."})


class TableStateSchema(_Open):
    """A table's state: these keys at every table, and the game's own besides (its accounts by name, and
    what its view shows), passed on as the domain gives them."""

    table_id = fields.String()
    game = fields.String()
    version = fields.Integer()
    digest = fields.String()
    rules = fields.Dict()
    players = fields.List(fields.String())
    phase = fields.String()
    balances = fields.Dict(keys=fields.String(), values=fields.Integer())
    expects = fields.List(fields.Nested(ExpectSchema))
    waits_for = fields.List(fields.Dict(keys=fields.String(), values=fields.String()), metadata={
        "description": "Every command the table waits for and from whom ({command, player}, once each), shown to "
                       "every reader: whose turn it is is public. `expects` lists only the commands this caller "
                       "may send, with their fields."})
    as_of = fields.Dict(metadata={"description": "Only on a historic state: the version and timestamp shown."})
    corrections = fields.List(fields.Dict(), metadata={"description": "Only while there are any: the correction "
                              "requests waiting for a second supervisor (docs/api.md \"Corrections\")."})
    voided = fields.List(fields.Dict(), metadata={"description": "Only once a round is voided: each one (VoidSchema)."})


class EventSchema(Schema):
    version = fields.Integer()
    type = fields.String()
    timestamp = fields.String()
    actor = fields.String()
    data = fields.Dict()
    digest = fields.String()
    command = fields.Integer(metadata={"description": "Number of the command that appended the event."})
    salts = fields.Dict(keys=fields.String(), values=fields.String(), metadata={
        "description": "Chain rule 3: the salt of each concealed part this reader is shown (its value in data), by "
                       "its JSON Pointer in data; left out where none. Its commitment is \"commit:\" + the sha256 "
                       "hex of the canonical JSON of {\"salt\", \"value\"}."})
    concealed = fields.Dict(keys=fields.String(), values=fields.String(), metadata={
        "description": "Chain rule 3: the commitment (\"commit:<sha256 hex>\") of each concealed part hidden from "
                       "this reader (shown in data as \"??\", or null for a total), by its JSON Pointer in data; "
                       "left out where none. With salts, every digest checks from any view."})


class ReceiptSchema(Schema):
    """A table's head signed by the service: keep it, and it proves later what the service recorded."""

    table_id = fields.String()
    version = fields.Integer()
    digest = fields.String(metadata={"description": "The digest of the event at that version."})
    timestamp = fields.String(metadata={"description": "The timestamp of the event at that version."})
    key_id = fields.String(metadata={"description": "The signing key, listed at GET /keys."})
    signature = fields.String(
        metadata={"description": "Ed25519 over the canonical JSON of the other five fields; base64url, no padding."}
    )


class OpenedTableSchema(TableStateSchema):
    receipt = fields.Nested(ReceiptSchema)


class CommandResultSchema(Schema):
    version = fields.Integer()
    digest = fields.String()
    events = fields.List(fields.Nested(EventSchema))
    state = fields.Nested(TableStateSchema)
    receipt = fields.Nested(ReceiptSchema, metadata={"description": "The new head, signed."})


def as_given(schema: Schema) -> Schema:
    """The schema, for the OpenAPI document, of an answer sent as the service gave it: service/present.py already
    builds the dicts in its shape, and dumping them again field by field cost about a tenth of a millisecond
    of a command's few (tests/api/test_answers_as_given.py holds every game's answers to equal their dump)."""
    schema.dump = lambda obj, *, many=None: obj  # type: ignore[method-assign]
    return schema


class HeadSchema(Schema):
    table_id = fields.String()
    version = fields.Integer()
    digest = fields.String()
    timestamp = fields.String()
    receipt = fields.Nested(ReceiptSchema)


class HeadChangeSchema(Schema):
    """The data of one message of GET /events: a table's head after it moved, with what lists it."""

    table_id = fields.String()
    game = fields.String(allow_none=True, metadata={"description": "null only if the table's first event cannot be read."})
    version = fields.Integer()
    digest = fields.String()
    timestamp = fields.String(metadata={"description": "The head event's timestamp."})
    opened_at = fields.String(allow_none=True)
    players = fields.List(fields.String(), allow_none=True)


class SigningKeySchema(Schema):
    key_id = fields.String(metadata={"description": "First 16 hex digits of sha256 of the raw public key."})
    algorithm = fields.String()
    public_key = fields.String(metadata={"description": "The raw 32-byte public key, base64url without padding."})
    not_before = fields.String(allow_none=True, metadata={"description": "When the service began signing with it."})
    not_after = fields.String(allow_none=True, metadata={"description": "When it was retired; null while current."})


class SigningKeysSchema(Schema):
    keys = fields.List(fields.Nested(SigningKeySchema), metadata={"description": "The current key first."})


class EventsPageSchema(Schema):
    events = fields.List(fields.Nested(EventSchema))
    next_after = fields.Integer(allow_none=True)


class ListTablesArgs(Schema):
    game = Text(validate=validate.OneOf(GAME_NAMES))
    cursor = Text(metadata={"description": "The next_cursor of the previous page."})
    limit = Whole(strict=False, minimum=1, maximum=1000, load_default=50)


class IndexErrorSchema(Schema):
    version = fields.Integer(metadata={
        "description": "The event the read model could not index (for rows the database refused, the first of their batch)."
    })
    message = fields.String()


class TableSummarySchema(Schema):
    table_id = fields.String()
    game = fields.String()
    players = fields.List(fields.String())
    opened_at = fields.String()
    version = fields.Integer()
    updated_at = fields.String()
    rounds = fields.Integer(metadata={"description": "Finished rounds."})
    index_error = fields.Nested(
        IndexErrorSchema,
        allow_none=True,
        metadata={"description": "null, or where and why the read model stopped indexing this table: its row, "
                                 "rounds and shoes end before that version; the table's events are intact."},
    )


class TablesPageSchema(Schema):
    tables = fields.List(fields.Nested(TableSummarySchema))
    next_cursor = fields.String(allow_none=True)


class HealthSchema(Schema):
    status = fields.String(metadata={"description": "ok"})


class ReadModelStatusSchema(Schema):
    position = fields.Integer(metadata={"description": "The last notification of the event log indexed."})
    head = fields.Integer(metadata={"description": "The last notification recorded."})
    lag = fields.Integer(metadata={"description": "Events recorded but not yet indexed."})
    following = fields.Boolean(metadata={
        "description": "Whether this process's follower runs: reading the log, or waiting with nothing to read it "
                       "for (false while it waits to start again after a failure)."})
    indexing = fields.Boolean(metadata={
        "description": "Whether this process's follower indexes the read model: one process at a time does (it "
                       "holds the indexing lease); the others' followers read the log only for their open live "
                       "streams."})


class AtRestSchema(Schema):
    encrypted = fields.Boolean(metadata={"description": "whether the stored events are encrypted (AES-GCM)"})
    key = fields.String(allow_none=True, metadata={
        "description": "`cipher key file` or `CIPHER_KEY`; null when not encrypted (a store made before "
                       "encryption by default, kept in clear, or one in memory)"})


class ReadinessSchema(Schema):
    status = fields.String(metadata={"description": "ready"})
    read_model = fields.Nested(ReadModelStatusSchema)
    at_rest = fields.Nested(AtRestSchema)
