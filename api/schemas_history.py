"""Marshmallow schemas of a table's history: rounds, a round's audit, the whole table verified, decisions and roads.

The rest (opening, commands, states, events, heads, errors) is api/schemas.py, which these build on.
"""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from api.policy import Moment, Text, Whole
from api.schemas import EventSchema, IndexErrorSchema, TableStateSchema


class RoundsQueryArgs(Schema):
    cursor = Text(metadata={"description": "The next_cursor of the previous page."})
    limit = Whole(strict=False, minimum=1, maximum=1000, load_default=50)


# A round voided (docs/api.md "Corrections"), in the rounds list, a round's audit and a player's rounds.
VOID = fields.Dict(metadata={"description": "Only on a round voided: `round`, `request` (GET /adjustments), `reason`, "
                                           "`settled` (its payments reversed; false: its stakes returned), `version` "
                                           "(its RoundVoided)."})


class RoundSchema(Schema):
    round = fields.Integer()
    void = VOID
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


class GainsSchema(Schema):
    draw = fields.Float()
    stand = fields.Float()


class WeighedDecisionSchema(Schema):
    version = fields.Integer(metadata={"description": "The event that records the choice (a face-up card, or HandStood)."})
    round = fields.Integer()
    player = fields.String(metadata={"description": "Who chose."})
    role = fields.String(validate=validate.OneOf(["punter", "banker"]))
    total = fields.Integer(metadata={"description": "The decider's two-card total."})
    third = fields.Raw(metadata={"description": "Banker only: the point value (0-9) of the punter's third card, or "
                                                "\"stood\"."})
    chosen = fields.String(validate=validate.OneOf(["draw", "stand"]))
    best = fields.String(validate=validate.OneOf(["draw", "stand", "either"]))
    gains = fields.Nested(GainsSchema, metadata={"description": "Each option's expected gain per unit staked, for "
                                                                "the decider, given what he knew."})
    cost = fields.Float(metadata={"description": "gains[best] - gains[chosen] per unit staked; 0 when indifferent."})
    at_stake = fields.Integer(metadata={"description": "The stakes of the coup (the bank at risk)."})
    cost_amount = fields.Float(metadata={"description": "What the choice gave away, in units, to 1/10000: the sum of to."})
    to = fields.Dict(keys=fields.String(), values=fields.Float(),
                     metadata={"description": "Who received what the choice gave away, in units."})


class ProblemSchema(Schema):
    check = fields.String()
    version = fields.Integer(allow_none=True, metadata={"description": "The offending event, where one is named."})
    type = fields.String(allow_none=True)
    message = fields.String()
    round = fields.Integer(allow_none=True, metadata={
        "description": "check read_model only: the round whose row the read model holds otherwise than the log "
                       "gives it (null for the table's row and its shoes)."})
    field = fields.String(metadata={"description": "check read_model only: the field of the read model's row "
                                                   "that disagrees with the log."})


class ChecksSchema(Schema):
    chain = fields.Boolean()
    cards = fields.Boolean(allow_none=True, metadata={"description": "null while a shoe of the round is unrevealed."})
    rules = fields.Boolean()
    money = fields.Boolean()
    read_model = fields.Boolean(metadata={"description": "The read model's row of the round (bounds, times, "
                                                         "summary) is the round the log gives."})


class RoundAuditSchema(RoundSchema):
    events = fields.List(fields.Nested(EventSchema))
    state_before = fields.Nested(TableStateSchema, allow_none=True)
    state_after = fields.Nested(TableStateSchema, allow_none=True,
                                metadata={"description": "null where the stored log cannot give it (see problems)."})
    cards = fields.List(fields.Dict())
    decisions = fields.List(fields.Dict())
    free_decisions = fields.List(fields.Nested(WeighedDecisionSchema), metadata={
        "description": "The round's free decisions weighed, as GET /tables/{table_id}/decisions lists them "
                       "(Chemin de fer only; empty for the other games)."})
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


class RoadsQueryArgs(Schema):
    at = Moment(format="iso", default_timezone=None, metadata={
        "description": "A moment (RFC 3339 with offset): the roads as they stood then. Default: now."})
    version = Whole(strict=False, minimum=1, maximum=None, metadata={
        "description": "A version: the roads as they stood when it was the head (not with `at`)."})
    shoe = Whole(strict=False, minimum=1, maximum=None, metadata={
        "description": "The shoe, by its number in the log (`ShoeShuffled.shoe`). Default: the last one shuffled "
                       "by then."})


class _RoadCellSchema(Schema):
    column = fields.Integer(metadata={"description": "From 1, left to right."})
    row = fields.Integer(metadata={"description": "From 1 (top) to `rows`."})
    coup = fields.Integer(metadata={"description": "The coup it stands for, from 1 in the shoe (ties counted)."})


class BeadCellSchema(_RoadCellSchema):
    outcome = fields.String(validate=validate.OneOf(["banker", "player", "tie"]))
    natural = fields.Boolean(allow_none=True, metadata={"description": "A natural decided the coup."})
    banker_pair = fields.Boolean(allow_none=True, metadata={"description": "The banker's first two cards paired."})
    player_pair = fields.Boolean(allow_none=True, metadata={"description": "The player's first two cards paired."})


class BigRoadCellSchema(BeadCellSchema):
    ties = fields.Integer(metadata={"description": "Ties marked on this win: those right after it (before the "
                                                   "shoe's first win: on that first win)."})


class DerivedCellSchema(_RoadCellSchema):
    colour = fields.String(validate=validate.OneOf(["red", "blue"]), metadata={
        "description": "red: the big road repeats itself here; blue: it does not (docs/rules/roads.md)."})


class RoadsSchema(Schema):
    table_id = fields.String()
    game = fields.String()
    as_of = fields.Dict(metadata={"description": "The version and timestamp the roads were read up to."})
    shoe = fields.Integer(allow_none=True, metadata={"description": "The shoe shown; null before the first."})
    shoes = fields.List(fields.Integer(), metadata={"description": "Every shoe of coups shuffled by then."})
    coups = fields.Integer(metadata={"description": "Coups decided in the shoe by then, ties included."})
    totals = fields.Dict(keys=fields.String(), values=fields.Integer(), metadata={
        "description": "Coups by outcome (banker, player, tie), and those with a natural, a banker pair, a player "
                       "pair."})
    rows = fields.Integer(metadata={"description": "Every road's height: 6."})
    bead_plate = fields.List(fields.Nested(BeadCellSchema))
    big_road = fields.List(fields.Nested(BigRoadCellSchema))
    big_eye_boy = fields.List(fields.Nested(DerivedCellSchema))
    small_road = fields.List(fields.Nested(DerivedCellSchema))
    cockroach_pig = fields.List(fields.Nested(DerivedCellSchema))


class DecisionsQueryArgs(Schema):
    cursor = Text(metadata={"description": "The next_cursor of the previous page."})
    limit = Whole(strict=False, minimum=1, maximum=1000, load_default=100)


class PlayerDecisionsSchema(Schema):
    decisions = fields.Integer(metadata={"description": "His free decisions."})
    costly = fields.Integer(metadata={"description": "Those with a cost above 0."})
    cost_amount = fields.Float(metadata={"description": "The sum of his decisions' cost_amount."})
    to = fields.Dict(keys=fields.String(), values=fields.Float(),
                     metadata={"description": "What his decisions gave away, by receiver."})
    staked = fields.Integer(metadata={"description": "Everything he staked (Chemin de fer: for the banker, the bank "
                                                     "at risk), deal by deal."})
    theoretical_loss = fields.Float(allow_none=True, metadata={
        "description": "What his stakes were expected to lose, in units, to 1/10000: each stake times the edge "
                       "against it (negative: an expected gain); null for the card lottery."})
    result = fields.Integer(metadata={"description": "What the payments moved to (positive) or from him."})


class DecisionsPageSchema(Schema):
    decisions = fields.List(fields.Nested(WeighedDecisionSchema))
    players = fields.Dict(keys=fields.String(), values=fields.Nested(PlayerDecisionsSchema),
                          metadata={"description": "Every player of the table, over the whole table."})
    next_cursor = fields.String(allow_none=True)
