"""Money (docs/wallet.md): players' purses, the wallet's transactions, and a table's movements from its log.

A cashier's token records deposits and withdrawals; a player's token reads his own purse; operators, auditors,
supervisors and cashiers read any purse, the transactions and the movements. One MethodView per URL, schema
in, one service call, schema out."""

from __future__ import annotations

import json
from datetime import timezone
from typing import Any

from flask import Response, current_app, request, stream_with_context
from flask.views import MethodView
from flask_smorest import Blueprint
from marshmallow import Schema, fields, validate

from api import http
from api.auth import PLAYER_ROLE, current_principal
from api.http import RequestRefused
from api.openapi import NDJSON, answers
from api.players import name
from api.policy import BodyParser, Moment, Name, Text, Whole
from domain.chain import format_timestamp
from domain.errors import InvalidPlayers
from domain.inputs import folded, validate_name
from domain.purse import MAX_AMOUNT
from service.money import NONE, STATES, iter_transactions, table_movements, transactions_page

blp = Blueprint("money", __name__, description="Players' purses, the wallet's transactions and reconciliation.")
blp.ARGUMENTS_PARSER = BodyParser()


class CashArgs(Schema):
    command = Text(required=True, validate=validate.OneOf(("deposit", "withdraw")),
                   metadata={"description": "`deposit` or `withdraw`."})
    amount = Whole(required=True, minimum=1, maximum=MAX_AMOUNT, metadata={"description": "Whole units."})
    note = Text(load_default="", metadata={"description": "The cashier's words (a receipt number, a reason)."})


class PurseQueryArgs(Schema):
    cursor = Text(metadata={"description": "The next_cursor of the previous page: the version the page starts after."})
    limit = Whole(strict=False, minimum=1, maximum=1000, load_default=100)


class PurseSchema(Schema):
    player = fields.String()
    money = fields.String(metadata={"description": "`purses` (the service keeps the money) or `wallet`."})
    currency = fields.String()
    balance = fields.Integer(metadata={"description": "With purses, the money in it; with a wallet, the net of the "
                                                      "movements the service recorded (the wallet holds the rest)."})
    deposits = fields.Integer()
    withdrawals = fields.Integer()
    version = fields.Integer(metadata={"description": "The purse log's head version."})
    head = fields.String(metadata={"description": "The digest of the head event: the purse's chain, as a table's."})
    receipt = fields.Dict(allow_none=True, metadata={"description": "The head signed, as a table's receipts are."})
    owed = fields.Integer(metadata={"description": "With a wallet: credits, reversals and rollbacks not yet acknowledged."})
    asked = fields.Integer(metadata={"description": "With a wallet: debits asked, neither counted nor rolled back."})
    movements = fields.List(fields.Dict(), metadata={
        "description": "The purse's events after `cursor`, each {version, type, timestamp, actor, data, digest}."})
    next_cursor = fields.String(allow_none=True)


def owner(player: str) -> str:
    """The path's player, a name a table could seat (the accounts' and actors' names are not players')."""
    wanted = name(player)
    try:
        return validate_name(wanted)
    except InvalidPlayers as exc:
        raise RequestRefused(422, "player", exc.message) from None


def _money() -> Any:
    money = current_app.extensions["zametano"].money
    if money.kind == NONE:
        raise RequestRefused(404, "player", "This service keeps no money (ZAMETANO_MONEY=none): a balance is only a "
                                            "result at its table. Purses and a wallet are docs/wallet.md's.")
    return money


@blp.route("/players/<player>/purse")
class PlayerPurse(MethodView):
    @blp.arguments(PurseQueryArgs(), location="query")
    @blp.response(200, PurseSchema)
    @answers(403, 404, 422, 503)
    def get(self, args: dict[str, Any], player: str) -> Any:
        """A player's purse: its balance, its signed head, and a page of its log (the oldest first).

        A player's token reads his own purse only; operators, auditors, supervisors and cashiers read any.
        """
        wanted = owner(player)
        principal = current_principal()
        if principal is not None and principal.role == PLAYER_ROLE and folded(principal.name or "") != folded(wanted):
            raise RequestRefused(403, "player", f"A player's token reads its own purse only: this one is "
                                                f"{principal.name}'s.")
        return http.cursor_page(_money().shown(wanted, http.after(args.get("cursor")), args["limit"]))

    @blp.arguments(CashArgs())
    @blp.response(200, PurseSchema)
    @answers(400, 403, 404, 413, 415, 422, 503, reads=("Idempotency-Key",))
    def post(self, args: dict[str, Any], player: str) -> Any:
        """A cashier's deposit or withdrawal (cashiers' tokens only; with purses only).

        A withdrawal above the balance is refused, naming the balance. A repeated `Idempotency-Key` answers as
        the first time and records nothing. The answer is the purse with the movement just recorded.
        """
        principal = current_principal()
        by = principal.name if principal is not None else None
        return http.cursor_page(_money().cash(owner(player), args["command"], args["amount"], by, args["note"],
                                              request.headers.get("Idempotency-Key")))


class TransactionsQueryArgs(Schema):
    player = Name(metadata={"description": "Only this player's."})
    table = fields.UUID(metadata={"description": "Only this table's."})
    state = Text(validate=validate.OneOf(STATES), metadata={"description": "Only those in this state."})
    start = Moment(format="iso", data_key="from", default_timezone=None,
                   metadata={"description": "Recorded at or after this moment (RFC 3339 with offset)."})
    end = Moment(format="iso", data_key="to", default_timezone=None,
                 metadata={"description": "Recorded before this moment (RFC 3339 with offset)."})
    cursor = Text(metadata={"description": "The next_cursor of the previous page."})
    limit = Whole(strict=False, minimum=1, maximum=1000, load_default=100)


class TransactionSchema(Schema):
    position = fields.Integer(metadata={"description": "Its place in the service's log, which pages are cut at."})
    transaction = fields.String(metadata={"description": "`<table>:<version>:<player>` (docs/wallet.md)."})
    operation = fields.String(validate=validate.OneOf(("debit", "credit", "reversal", "rollback")))
    player = fields.String()
    table = fields.String()
    version = fields.Integer(metadata={"description": "The first version of the command that moved the money."})
    round = fields.String(metadata={"description": "`<table>:<round number>`."})
    amount = fields.Integer()
    reason = fields.String(allow_none=True)
    state = fields.String(validate=validate.OneOf(STATES))
    of = fields.String(metadata={"description": "A rollback's debit."})
    recorded_at = fields.String()
    settled_at = fields.String(allow_none=True)


class TransactionsPageSchema(Schema):
    transactions = fields.List(fields.Nested(TransactionSchema))
    next_cursor = fields.String(allow_none=True)


LISTED = ("A page of the transactions; with `Accept: application/x-ndjson`, every one from `cursor` on, one a line.")


@blp.route("/wallet/transactions")
class WalletTransactions(MethodView):
    @blp.arguments(TransactionsQueryArgs(), location="query")
    @blp.response(200, TransactionsPageSchema, description=LISTED)
    @blp.alt_response(200, content_type=NDJSON, description=LISTED, schema={
        "type": "string", "description": "JSON lines: one Transaction a line, in order."})
    @answers(403, 404, 422, 503)
    def get(self, args: dict[str, Any]) -> Any:
        """Every transaction the service recorded, with its state now, in the order each was first recorded.

        States: `counted` (a debit its stake came with), `refused`, `asked` (asked of the wallet, not yet counted
        or rolled back), `due` (owed to the wallet), `delivered`, `rolling back`, `rolled back`. Filter by player,
        table, state and a window of time; page with `cursor` = the previous page's `next_cursor`.
        """
        money = _money()
        table = str(args["table"]) if "table" in args else None

        def match(row: dict[str, Any]) -> bool:
            return ((args.get("player") is None or row["player"] == args["player"])
                    and (table is None or row["table"] == table)
                    and (args.get("state") is None or row["state"] == args["state"])
                    and (args.get("start") is None or row["recorded_at"] >= _stamp(args["start"]))
                    and (args.get("end") is None or row["recorded_at"] < _stamp(args["end"])))

        after = http.after(args.get("cursor"))
        if request.accept_mimetypes.best_match(["application/json", NDJSON]) == NDJSON:
            lines = (json.dumps(TransactionSchema().dump(r), ensure_ascii=False) + "\n"
                     for r in iter_transactions(money.app, match, after))
            return Response(stream_with_context(lines), mimetype=NDJSON)
        return http.cursor_page(transactions_page(money.app, match, after, args["limit"]))


def _stamp(moment: Any) -> str:
    """A moment as the transactions' times are written (UTC, microseconds), so that the two compare as text."""
    return format_timestamp(moment.astimezone(timezone.utc))


class MovementSchema(Schema):
    table = fields.String()
    version = fields.Integer()
    player = fields.String()
    operation = fields.String(validate=validate.OneOf(("debit", "credit", "reversal")))
    amount = fields.Integer()
    reason = fields.String()
    round = fields.String()
    transaction = fields.String(metadata={"description": "The id it is paid under (a later attempt adds `:<n>`)."})


class MovementsSchema(Schema):
    table_id = fields.String()
    movements = fields.List(fields.Nested(MovementSchema))


@blp.route("/tables/<table_id>/movements")
class TableMovements(MethodView):
    @blp.response(200, MovementsSchema)
    @answers(403, 404, 409, 503)
    def get(self, table_id: str) -> Any:
        """Every movement of money the table's commands made, recomputed from its log (docs/wallet.md).

        For each command, each player whose position it changed (his balance less what the table holds of his):
        a debit, a credit or a reversal. scripts/reconcile compares them with the transactions.
        """
        service = current_app.extensions["zametano"]
        service.require_table(table_id)
        return {"table_id": table_id, "movements": table_movements(service, table_id)}
