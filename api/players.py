"""Players: their credentials (POST /players/{player}/tokens) and their histories (GET /players/{player}/rounds).

An operator mints a token for a player, who then speaks for himself from his own device (docs/api.md
"Authentication"). The token is a JWT signed with the service's players' key (service/credentials.py), valid
for ``ttl_seconds`` and, when ``tables`` is given, on those tables only. With it the player reads his own
history, every round he took part in at every table (docs/api.md "A player's rounds"); auditors and
operators read anyone's."""

from __future__ import annotations

from typing import Any

from flask import current_app
from flask.views import MethodView
from flask_smorest import Blueprint
from marshmallow import Schema, ValidationError, fields, validate

from api import http
from api.auth import PLAYER_ROLE, current_principal
from api.http import RequestRefused
from api.openapi import answers
from api.policy import BodyParser, Whole, clean_text
from api.schemas_history import VOID, RoundsQueryArgs
from domain.inputs import MAX_NAME_LENGTH, folded
from service.credentials import DEFAULT_TTL, MAX_TABLES, MAX_TTL, MIN_TTL

blp = Blueprint("players", __name__, description="Players' credentials and histories.")
blp.ARGUMENTS_PARSER = BodyParser()


class MintTokenArgs(Schema):
    ttl_seconds = Whole(minimum=MIN_TTL, maximum=MAX_TTL, metadata={
        "description": f"How long the token is valid, in seconds: {MIN_TTL} to {MAX_TTL} (7 days); "
                       f"default {DEFAULT_TTL} (8 hours)."})
    tables = fields.List(
        fields.UUID(), validate=validate.Length(min=1, max=MAX_TABLES),
        metadata={"description": f"The tables (1 to {MAX_TABLES} table ids) the token is limited to; "
                                 "left out, it is valid on every table."},
    )


class PlayerTokenSchema(Schema):
    token = fields.String(metadata={"description": "The JWT to send as `Authorization: Bearer <token>`."})
    player = fields.String()
    expires_at = fields.String(metadata={"description": "When the token stops being accepted (RFC 3339, UTC)."})
    tables = fields.List(fields.String(), allow_none=True,
                         metadata={"description": "The tables it is limited to; null: every table."})


@blp.route("/players/<player>/tokens")
class PlayerTokens(MethodView):
    @blp.arguments(MintTokenArgs())
    @blp.response(201, PlayerTokenSchema)
    @answers(400, 403, 413, 415, 422)
    def post(self, args: dict[str, Any], player: str) -> Any:
        """Mint a token for a player (operators only).

        The player's name follows the rules of the names at a table (1 to 40 characters, none reserved).
        The token is shown once: the service keeps no copy, and it cannot be listed again.
        """
        tables = [str(table) for table in args["tables"]] if "tables" in args else None
        return current_app.extensions["zametano_credentials"].mint(name(player), args.get("ttl_seconds"), tables), 201


def name(player: str) -> str:
    """The path's player under the input policy, as a name in a body is (NFC, no refused character)."""
    try:
        return clean_text(player, MAX_NAME_LENGTH)
    except ValidationError as exc:
        raise RequestRefused(422, "player", " ".join(exc.messages)) from None


class SeatRoundSchema(Schema):
    table_id = fields.String()
    void = VOID
    game = fields.String()
    round = fields.Integer(metadata={"description": "The round's number at its table (GET /tables/{id}/rounds/{n})."})
    player = fields.String(metadata={"description": "His name as that table seats him."})
    started_at = fields.String()
    ended_at = fields.String()
    first_version = fields.Integer()
    last_version = fields.Integer()
    summary = fields.String(metadata={"description": "The round's one-line summary, as the table's round list gives it."})
    stakes = fields.Dict(keys=fields.String(), values=fields.Integer(), metadata={
        "description": "What he staked in the round and on what: punto banco's spots (`player`, `banker`, "
                       "`tie`); Chemin de fer's `stake` (a staker's, against the bank) or `bank` (the banker's "
                       "cover of the stakes against him); the Card lottery's `pot` (his contributions)."})
    staked = fields.Integer(metadata={"description": "The sum of `stakes`."})
    result = fields.Integer(metadata={"description": "What the round's payments moved for him: won (above 0) or lost."})
    balance = fields.Integer(metadata={"description": "His balance at that table after the round."})
    theoretical_loss = fields.Float(allow_none=True, metadata={
        "description": "What his stakes were expected to cost him, in units to 1/10000 (below 0: expected to "
                       "gain), rated as GET /tables/{id}/decisions rates them; null for the Card lottery."})


class PlayerRoundsPageSchema(Schema):
    player = fields.String()
    rounds = fields.List(fields.Nested(SeatRoundSchema))
    next_cursor = fields.String(allow_none=True)


@blp.route("/players/<player>/rounds")
class PlayerRounds(MethodView):
    @blp.arguments(RoundsQueryArgs(), location="query")  # a page of rounds, as a table's are paged
    @blp.response(200, PlayerRoundsPageSchema)
    @answers(403, 422, 503)
    def get(self, args: dict[str, Any], player: str) -> Any:
        """A player's history: every finished round he took part in, at every table, the newest first.

        He took part when he had money at stake in the round, money moved to or from him in it, or cards
        were dealt to him in it. The name is compared as names at a table are (NFKC, case folded). A player's
        token reads his own history only (403 for another's), and a token limited to some tables only his rounds
        at those tables; auditors and operators read anyone's. Read
        from the read model; page with `cursor` = the previous page's `next_cursor` (null on the last page).
        """
        wanted = name(player)
        principal = current_principal()
        if principal is not None and principal.role == PLAYER_ROLE and folded(principal.name or "") != folded(wanted):
            raise RequestRefused(403, "player", f"A player's token reads its own player's rounds only: this one "
                                                f"is {principal.name}'s.")
        service = current_app.extensions["zametano"]
        limited = principal.tables if principal is not None and principal.role == PLAYER_ROLE else None
        return http.cursor_page(service.player_rounds(wanted, http.after(args.get("cursor")), args["limit"], limited))
