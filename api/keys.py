"""The public keys receipts are signed with: GET /keys.

The public keys receipts are signed with (open to anyone: a receipt is worth little unless its holder
can check it)."""

from __future__ import annotations

from typing import Any

from flask import current_app
from flask.views import MethodView
from flask_smorest import Blueprint

from api.openapi import answers
from api.schemas import SigningKeysSchema

blp = Blueprint("keys", __name__, description="The public keys that sign receipts.")


@blp.route("/keys")
class Keys(MethodView):
    @blp.response(200, SigningKeysSchema)
    @answers(503)
    def get(self) -> Any:
        """Every key the service has signed receipts with: the current key first, then retired ones.

        `key_id` is the first 16 hex digits of sha256 of the raw public key; `public_key` is the raw
        32-byte Ed25519 key in base64url without padding; `not_before`/`not_after` bound when the
        service signed with it (`not_after` is null for the current key). No token is needed.
        """
        return current_app.extensions["zametano"].signing_keys()
