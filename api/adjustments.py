"""The adjustments log (GET /adjustments): every correction decided at every table, in the order decided.

For auditors, operators and supervisors (a player's token is refused by api/auth.py). One MethodView, schema in,
one service call, schema out."""

from __future__ import annotations

import json
from typing import Any

from flask import Response, current_app, request, stream_with_context
from flask.views import MethodView
from flask_smorest import Blueprint
from api import http
from api.openapi import NDJSON, answers
from api.schemas import AdjustmentSchema, AdjustmentsPageSchema, AdjustmentsQueryArgs
from service.adjustments import Filters

blp = Blueprint("adjustments", __name__, description="Corrections under two signatures: voids and their approvals.")


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
