"""The adjustments log (GET /adjustments): every correction decided at every table, in the order decided.

For auditors, operators and supervisors (a player's token is refused by api/auth.py). One MethodView, schema in,
one service call, schema out."""

from __future__ import annotations

import json
from typing import Any

from flask import Response, current_app, request, stream_with_context
from flask.views import MethodView
from flask_smorest import Blueprint
from marshmallow import Schema, fields, validate
from api import http
from api.openapi import NDJSON, answers
from api.policy import Moment, Name, Text, Whole
from domain.corrections import APPROVED, KINDS, REASONS, REFUSED
from service.adjustments import Filters

blp = Blueprint("adjustments", __name__, description="Corrections under two signatures: voids and their approvals.")


class AdjustmentsQueryArgs(Schema):
    table = fields.UUID(metadata={"description": "Only this table's."})
    player = Name(metadata={"description": "Only those that moved this player's money or stakes."})
    reason = Text(validate=validate.OneOf(REASONS), metadata={"description": "Only those of this reason."})
    start = Moment(format="iso", data_key="from", default_timezone=None,
                   metadata={"description": "Decided at or after this moment (RFC 3339 with offset)."})
    end = Moment(format="iso", data_key="to", default_timezone=None,
                 metadata={"description": "Decided before this moment (RFC 3339 with offset)."})
    cursor = Text(metadata={"description": "The next_cursor of the previous page."})
    limit = Whole(strict=False, minimum=1, maximum=1000, load_default=50)


class AdjustmentSchema(Schema):
    position = fields.Integer(metadata={"description": "Its place in the service's log, which pages are cut at."})
    table_id = fields.String()
    version = fields.Integer(metadata={"description": "The decision's event (CorrectionApproved or CorrectionRefused)."})
    request = fields.Integer(metadata={"description": "The request's number at its table."})
    kind = fields.String(validate=validate.OneOf(KINDS))
    round = fields.Integer(metadata={"description": "The round corrected (GET /tables/{id}/rounds/{n})."})
    reason = fields.String(validate=validate.OneOf(REASONS))
    note = fields.String(metadata={"description": "The requester's free text."})
    status = fields.String(validate=validate.OneOf((APPROVED, REFUSED)))
    requested_by = fields.String(metadata={"description": "The supervisor who asked for it."})
    requested_at = fields.String()
    decided_by = fields.String(metadata={"description": "The second supervisor, who approved or refused it."})
    decided_at = fields.String()
    why = fields.String(allow_none=True, metadata={"description": "Refused: the refuser's words; null if approved."})
    players = fields.List(fields.String(), metadata={"description": "The players whose money or stakes it moved."})
    before = fields.Dict(keys=fields.String(), values=fields.Integer(), allow_none=True,
                         metadata={"description": "Every balance and account before it (null if refused)."})
    after = fields.Dict(keys=fields.String(), values=fields.Integer(), allow_none=True,
                        metadata={"description": "Every balance and account after it (null if refused)."})
    stake = fields.Dict(allow_none=True, metadata={
        "description": "A stake's correction: the `player` it was recorded for, its `spot`, the right `amount` and "
                       "the player it should have been recorded `to`; null for a void."})


class AdjustmentsPageSchema(Schema):
    adjustments = fields.List(fields.Nested(AdjustmentSchema))
    next_cursor = fields.String(allow_none=True)


LISTED = ("A page of the corrections decided; with `Accept: application/x-ndjson`, every one from `cursor` on, "
          "one Adjustment a line.")


@blp.route("/adjustments")
class Adjustments(MethodView):
    @blp.arguments(AdjustmentsQueryArgs(), location="query")
    @blp.response(200, AdjustmentsPageSchema, description=LISTED)
    @blp.alt_response(200, content_type=NDJSON, description=LISTED, schema={
        "type": "string", "description": "JSON lines: one Adjustment (as in AdjustmentsPage) a line, in order."})
    @answers(403, 422, 503)
    def get(self, args: dict[str, Any]) -> Any:
        """Every correction decided, at every table, in the order decided.

        Each voided round and each refused request, with who requested it and who approved or refused it (two
        different supervisors), the reason, the round, and every balance before and after. Filter by `table`,
        `player`, `reason` and a window of time (`from`, `to`); page with `cursor` = the previous page's
        `next_cursor` (null on the last page).
        """
        filters = Filters(str(args["table"]) if "table" in args else None, args.get("player"), args.get("reason"),
                          args.get("start"), args.get("end"))
        after = http.after(args.get("cursor"))
        service = current_app.extensions["zametano"]
        if request.accept_mimetypes.best_match(["application/json", NDJSON]) == NDJSON:
            lines = (json.dumps(AdjustmentSchema().dump(e), ensure_ascii=False) + "\n"
                     for e in service.iter_adjustments(filters, after))
            return Response(stream_with_context(lines), mimetype=NDJSON)
        return http.cursor_page(service.adjustments_page(filters, after, args["limit"]))
