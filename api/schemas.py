"""Marshmallow schemas: inputs are ``...Args``, outputs ``...Schema``. They also make /openapi.json."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from api.policy import JSONValue, Moment, Name, Text, Whole


class OpenTableArgs(Schema):
    game = Text(
        required=True,
        validate=validate.OneOf(["chemin-de-fer", "card-lottery"]),
        metadata={"description": "Which game the table plays."},
    )
    players = fields.List(
        Name(), required=True, metadata={"description": "Player names in the order listed (seating by lots uses it)."}
    )
    rules = fields.Dict(
        keys=Text(),
        values=JSONValue(),
        load_default=dict,
        metadata={"description": "Options of RULES.md; omitted ones take their defaults."},
    )
    banker = Name(metadata={"description": "Card lottery: the banker, one of the players."})
    dealer = Name(metadata={"description": "Card lottery: the dealer, one of the players."})


class CommandArgs(Schema):
    command = Text(required=True, metadata={"description": "The command, e.g. place_stake."})
    player = Name(required=True, metadata={"description": "Who issues the command (the actor)."})
    position = Whole(metadata={"description": "cut: where the shoe is cut, 1..N-1."})
    amount = Whole(metadata={"description": "post_bank, place_stake, collect: whole units."})
    deck = Text(metadata={"description": "Card lottery shuffle: 'banker' or 'dealer'."})
    amounts = fields.List(Whole(), metadata={"description": "Card lottery distribute: four amounts."})
    cards = fields.List(Text(), metadata={"description": "Card lottery lead/beat: cards such as 'Ts'."})
    card = Text(metadata={"description": "Card lottery play: one card."})


class StateQueryArgs(Schema):
    version = Whole(strict=False, minimum=1, maximum=None, metadata={"description": "A past version."})
    at = Moment(format="iso", default_timezone=None, metadata={"description": "A moment (RFC 3339 with offset)."})


class EventsQueryArgs(Schema):
    after = Whole(strict=False, minimum=0, maximum=None, load_default=0)
    limit = Whole(strict=False, minimum=1, maximum=1000, load_default=100)


class ExpectSchema(Schema):
    command = fields.String()
    player = fields.String()
    deck = fields.String(metadata={"description": "Card lottery shuffle: which deck this player shuffles."})


class TableStateSchema(Schema):
    """A table's state. Fields after ``expects`` belong to one game or the other."""

    table_id = fields.String()
    game = fields.String()
    version = fields.Integer()
    digest = fields.String()
    rules = fields.Dict()
    players = fields.List(fields.String())
    seats = fields.List(fields.String())
    banker = fields.String(allow_none=True)
    phase = fields.String()
    balances = fields.Dict(keys=fields.String(), values=fields.Integer())
    house = fields.Integer()
    round = fields.Integer()
    expects = fields.List(fields.Nested(ExpectSchema))
    as_of = fields.Dict(metadata={"description": "Only on a historic state: the version and timestamp shown."})
    # chemin de fer
    bank = fields.Integer()
    stakes = fields.Dict(keys=fields.String(), values=fields.Integer())
    punter = fields.String(allow_none=True)
    hands = fields.Dict()
    shoe = fields.Dict(metadata={"description": "Counts only: number, dealt, remaining."})
    lots = fields.List(fields.Dict())
    # card lottery
    dealer = fields.String(allow_none=True)
    holders = fields.List(fields.String())
    stage = fields.Integer(metadata={"description": "1: the lottery rounds; 2: playing out the set-aside piles."})
    game_number = fields.Integer()
    pot = fields.Integer()
    kitty = fields.Integer()
    lottery_cards = fields.List(fields.String(), metadata={"description": "Face down: '??' until revealed."})
    lottery_amounts = fields.List(fields.Integer())
    set_aside = fields.Dict()
    penalty_piles = fields.Dict()
    table = fields.List(fields.String(), metadata={"description": "Stage 2: the led cards, or the trick so far."})
    leader = fields.String(allow_none=True)
    to_beat = fields.String(allow_none=True)
    turn = fields.String(allow_none=True)
    last_winner = fields.String(allow_none=True)
    decks = fields.Dict(metadata={"description": "Counts only, per deck: number, dealt, remaining."})


class EventSchema(Schema):
    version = fields.Integer()
    type = fields.String()
    timestamp = fields.String()
    actor = fields.String()
    data = fields.Dict()
    digest = fields.String()
    command = fields.Integer(metadata={"description": "Number of the command that appended the event."})


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


class HeadSchema(Schema):
    table_id = fields.String()
    version = fields.Integer()
    digest = fields.String()
    timestamp = fields.String()
    receipt = fields.Nested(ReceiptSchema)


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
    game = Text(validate=validate.OneOf(["chemin-de-fer", "card-lottery"]))
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


class RoundsQueryArgs(Schema):
    cursor = Text(metadata={"description": "The next_cursor of the previous page."})
    limit = Whole(strict=False, minimum=1, maximum=1000, load_default=50)


class RoundSchema(Schema):
    round = fields.Integer()
    first_version = fields.Integer()
    last_version = fields.Integer()
    started_at = fields.String()
    ended_at = fields.String()
    summary = fields.String()


class RoundsPageSchema(Schema):
    rounds = fields.List(fields.Nested(RoundSchema))
    next_cursor = fields.String(allow_none=True)
    index_error = fields.Nested(
        IndexErrorSchema,
        allow_none=True,
        metadata={"description": "null, or where the read model stopped indexing this table: no round after it "
                                 "is listed."},
    )


class ProblemSchema(Schema):
    check = fields.String()
    version = fields.Integer(allow_none=True, metadata={"description": "The offending event, where one is named."})
    type = fields.String(allow_none=True)
    message = fields.String()


class ChecksSchema(Schema):
    chain = fields.Boolean()
    cards = fields.Boolean(allow_none=True, metadata={"description": "null while a shoe of the round is unrevealed."})
    rules = fields.Boolean()
    money = fields.Boolean()


class RoundAuditSchema(RoundSchema):
    events = fields.List(fields.Nested(EventSchema))
    state_before = fields.Nested(TableStateSchema, allow_none=True)
    state_after = fields.Nested(TableStateSchema, allow_none=True,
                                metadata={"description": "null where the stored log cannot give it (see problems)."})
    cards = fields.List(fields.Dict())
    decisions = fields.List(fields.Dict())
    payments = fields.List(fields.Dict())
    checks = fields.Nested(ChecksSchema)
    problems = fields.List(fields.Nested(ProblemSchema))


class VerifySchema(Schema):
    ok = fields.Boolean()
    chain = fields.Dict()
    shoes = fields.List(fields.Dict())
    commands_checked = fields.Integer()
    rounds_checked = fields.Integer()
    problems = fields.List(fields.Nested(ProblemSchema))
