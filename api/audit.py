"""Audit and replay: the round index, a round's audit, a table verified, its decisions weighed, its roads."""

from __future__ import annotations

from typing import Any

from flask import current_app
from flask.views import MethodView
from flask_smorest import Blueprint

from api import auth, http
from api.openapi import answers
from api.schemas_history import (
    DecisionsPageSchema,
    DecisionsQueryArgs,
    RoadsQueryArgs,
    RoadsSchema,
    RoundAuditSchema,
    RoundsPageSchema,
    RoundsQueryArgs,
    VerifySchema,
)
from domain.games import GAMES

blp = Blueprint("audit", __name__, description="Rounds, round audits and whole-table verification.")


def service() -> Any:
    return current_app.extensions["zametano"]


ROUNDS_ARE = " ".join(f"{game.title}: {game.rounds.doc}" for game in GAMES.values() if game.rounds.doc)


@blp.route("/tables/<table_id>/rounds")
class Rounds(MethodView):
    @blp.doc(description=ROUNDS_ARE)
    @blp.arguments(RoundsQueryArgs(), location="query")
    @blp.response(200, RoundsPageSchema)
    @answers(404, 409, 422, 503)
    def get(self, args: dict[str, Any], table_id: str) -> Any:
        """The table's finished rounds, oldest first: where each starts and ends (versions and times)."""
        return http.cursor_page(service().list_rounds(table_id, http.after(args.get("cursor")), args["limit"]))


@blp.route("/tables/<table_id>/rounds/<int:number>")
class RoundAudit(MethodView):
    @http.digest_tagged
    @blp.response(200, RoundAuditSchema, headers={"ETag": "DocumentTag"})
    @answers(304, 404, 409, 503, reads=("If-None-Match",))
    def get(self, table_id: str, number: int) -> Any:
        """A round's audit: its events, the state before and after, the cards, every decision with its
        actor, every payment, and the checks.

        `chain`: each digest follows from the one before. `cards`: every dealt card equals the revealed shoe
        (null until the shoe is revealed). `rules`: every command of the round, run again through the rules
        from the state before it, records exactly what was recorded. `money`: payments are valid and the
        balances move by exactly them. A failing check is listed in `problems` with the offending event.
        """
        return service().round_audit(table_id, number, auth.viewer())


@blp.route("/tables/<table_id>/verify")
class Verify(MethodView):
    @blp.response(200, VerifySchema)
    @answers(404, 503)
    def get(self, table_id: str) -> Any:
        """Verify a whole table: the log whole and in order, the chain from its first event, every shoe
        against the seed and commitment the log records, every command run again through the rules, and the
        money. `ok` is true only when nothing failed.

        Damage to the stored log (a version missing or unreadable, rows exchanged, a log that ends before its
        snapshot) is listed in `problems` at its version, like any other failed check.
        """
        return service().verify(table_id, auth.viewer())


@blp.route("/tables/<table_id>/decisions")
class Decisions(MethodView):
    @blp.arguments(DecisionsQueryArgs(), location="query")
    @blp.response(200, DecisionsPageSchema)
    @answers(404, 409, 422, 503)
    def get(self, args: dict[str, Any], table_id: str) -> Any:
        """The table's free decisions, oldest first, each weighed against the exact solution of the draw game
        for the table's rule set and decks: each option's expected gain per unit staked for the decider,
        given what he knew, the best one, the cost of the choice per unit and in units, and to whom it went;
        and every player's summary over the whole table: decisions, costly ones, what they gave away and to
        whom, what he staked, its theoretical loss and his result. Only Chemin de fer has free decisions:
        for punto banco and the card lottery the list is empty.
        """
        return http.cursor_page(service().decisions(table_id, http.after(args.get("cursor")), args["limit"],
                                                    auth.viewer()))


@blp.route("/tables/<table_id>/roads")
class Roads(MethodView):
    @blp.arguments(RoadsQueryArgs(), location="query")
    @blp.response(200, RoadsSchema)
    @answers(404, 409, 422, 503)
    def get(self, args: dict[str, Any], table_id: str) -> Any:
        """A baccarat table's roads for one shoe: the bead plate, the big road and the three derived roads
        (big eye boy, small road, cockroach pig), as they stood now, at a moment (`?at=`) or a version
        (`?version=`).

        Drawn from the decided coups of the shoe (`?shoe=`, by default the last shuffled by then), read
        from the log; every reader sees the same roads. The rules of each road are docs/rules/roads.md. A
        table of a game without roads (the Card lottery), a shoe it does not have by then, or a moment before
        the table: 404.
        """
        return service().roads(table_id, at=args.get("at"), version=args.get("version"), shoe=args.get("shoe"))
