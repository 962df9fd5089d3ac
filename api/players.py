"""Players' credentials: POST /players/{player}/tokens mints a player's token (docs/api.md "Authentication").

An operator mints a token for a player, who then speaks for himself from his own device. The token is a
JWT signed with the service's players' key (service/credentials.py), valid for ``ttl_seconds`` and, when
``tables`` is given, on those tables only."""

from __future__ import annotations

from typing import Any

from flask import current_app
from flask.views import MethodView
from flask_smorest import Blueprint
from marshmallow import Schema, ValidationError, fields, validate

from api.http import RequestRefused
from api.openapi import answers
from api.policy import BodyParser, Whole, clean_text
from domain.inputs import MAX_NAME_LENGTH
from service.credentials import DEFAULT_TTL, MAX_TABLES, MAX_TTL, MIN_TTL

blp = Blueprint("players", __name__, description="Players' credentials.")
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
    @blp.arguments(MintTokenArgs)
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
