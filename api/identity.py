"""Who the caller is to the service: GET /me.

Who the caller is to the service: the role its token carries and the name it goes by (the desk shows the
croupier's panel only to a role that may command)."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from flask_smorest import Blueprint
from marshmallow import Schema, fields, validate

from api import auth

blp = Blueprint("identity", __name__, description="The caller's role and name.")


class MeSchema(Schema):
    role = fields.String(
        required=True, validate=validate.OneOf(["operator", "auditor", "surveillance", "supervisor", "player", "open"]),
        metadata={"description": "operator, auditor, surveillance, player, or open (the service has no tokens: "
                                 "anyone may do everything)."},
    )
    name = fields.String(allow_none=True, metadata={
        "description": "The token's name (ZAMETANO_TOKENS' role@name:token, else <role>-<n>), or the player; "
                       "null when open."})
    player = fields.String(metadata={"description": "A player's token only: the player it speaks for."})
    tables = fields.List(fields.String(), allow_none=True, metadata={
        "description": "A player's token only: the tables it is limited to; null: every table."})
    expires_at = fields.String(metadata={"description": "A player's token only: when it expires (RFC 3339)."})


@blp.route("/me")
class Me(MethodView):
    @blp.response(200, MeSchema)
    def get(self) -> Any:
        """The role and name of the token sent: `operator` (commands and every query), `auditor` (queries
        only), `surveillance` (queries only, every card as it is dealt), `supervisor` (queries, and corrections in its own
        name), `player` (a player's own token), or `open` when the service has no tokens (it then listens on
        loopback only, and every request may do everything).

        Any token the service knows may ask; the answer names the role and the token's name, never the token.
        """
        principal = auth.current_principal() or auth.OPEN
        if principal.role != auth.PLAYER_ROLE:
            return {"role": principal.role, "name": principal.name}
        return {"role": principal.role, "name": principal.name, "player": principal.name,
                "tables": principal.tables, "expires_at": principal.expires_at}
