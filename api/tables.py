"""Tables and their commands: one MethodView per URL, schema in, one service call, schema out."""

from __future__ import annotations

import json
from typing import Any

from flask import Response, current_app, request, stream_with_context
from flask.views import MethodView
from flask_smorest import Blueprint

from api import http, streams
from api.openapi import NDJSON, SSE, answers
from api.auth import credential, viewer
from api.policy import BodyParser
from api.schemas import (
    ROLES,
    CommandArgs,
    CommandResultSchema,
    EventsPageSchema,
    EventsQueryArgs,
    HeadSchema,
    ListTablesArgs,
    OpenedTableSchema,
    OpenTableArgs,
    StateQueryArgs,
    TablesPageSchema,
    TableStateSchema,
    as_given,
)

blp = Blueprint("tables", __name__, description="Open tables, play them, read their state and history.")
blp.ARGUMENTS_PARSER = BodyParser()  # the body as the input policy parsed it: parsed once
# The headers of a table's state: its version as an ETag, which If-Match takes back.
STATE_HEADERS = {"ETag": "ETag"}


def service() -> Any:
    return current_app.extensions["zametano"]


@blp.route("/tables")
class Tables(MethodView):
    @blp.arguments(ListTablesArgs(), location="query")
    @blp.response(200, TablesPageSchema)
    @answers(422, 503)
    def get(self, args: dict[str, Any]) -> Any:
        """List tables, in the order they were opened, optionally of one game.

        Read from a read model kept up to date from the event log; page with `cursor` = the previous
        page's `next_cursor` (null on the last page).
        """
        return http.cursor_page(service().list_tables(args.get("game"), http.after(args.get("cursor")), args["limit"]))

    @blp.arguments(OpenTableArgs())
    @blp.response(201, OpenedTableSchema, headers={**STATE_HEADERS, "Location": "Location"})
    @answers(400, 403, 413, 415, 422, 503)
    def post(self, args: dict[str, Any]) -> Any:
        """Open a table.

        `rules` holds the game's options (x-games in this document); omitted options take their defaults and
        unknown ones are refused. The table's first event, `TableOpened`, records them for good.
        The state carries the signed `receipt` of that first event; `ETag` its version, `Location` its URL.
        """
        state = service().open_table(args["game"], args["players"], args.get("rules"), by=credential()["by"],
                                     **_roles(args))
        return state, 201, {"Location": f"/tables/{state['table_id']}", **http.etag(state["version"])}


def _roles(args: dict[str, Any]) -> dict[str, Any]:
    """The game's roles and who acts for the players, as given."""
    return {k: args[k] for k in (*ROLES, "players_act") if k in args}


@blp.route("/tables/<table_id>")
class TableView(MethodView):
    @http.conditional
    @blp.response(200, as_given(TableStateSchema()), headers=STATE_HEADERS)
    @answers(304, 400, 404, 409, 412, 503, reads=("If-None-Match", "If-Match"))
    def get(self, table_id: str) -> Any:
        """The table's current state.

        `phase` names what the table waits for and `expects` lists every command legal now. The shoe
        shows counts only: no undealt card and no unrevealed seed is ever shown. `ETag` is the table's
        version, for `If-Match` on a command (and `If-None-Match` here: a 304 until the table moves). A table
        whose stored history is damaged (its log ends before its snapshot, a version is missing) is a 409
        that says what is wrong; its `verify` lists every problem.
        """
        state = service().current_state(table_id, viewer())
        return state, 200, http.etag(state["version"])


@blp.route("/tables/<table_id>/state")
class HistoricState(MethodView):
    @http.conditional
    @blp.arguments(StateQueryArgs(), location="query")
    @blp.response(200, TableStateSchema, headers=STATE_HEADERS)
    @answers(304, 400, 404, 409, 412, 422, 503, reads=("If-None-Match", "If-Match"))
    def get(self, args: dict[str, Any], table_id: str) -> Any:
        """The state as it was at a version (`?version=N`) or at a moment (`?at=<RFC 3339>`).

        Identical to the state the table showed when that version was its head, plus `as_of`; `ETag` is
        the version shown.
        """
        state = service().historic_state(table_id, version=args.get("version"), at=args.get("at"), viewer=viewer())
        return state, 200, http.etag(state["version"])


@blp.route("/tables/<table_id>/commands")
class Commands(MethodView):
    @blp.arguments(CommandArgs())
    @blp.response(200, as_given(CommandResultSchema()), headers=STATE_HEADERS)
    @answers(400, 403, 404, 409, 413, 415, 422, 503, reads=("If-Match", "Idempotency-Key"))
    def post(self, args: dict[str, Any], table_id: str) -> Any:
        """Issue a game command.

        `player` is the actor; the rules say who may issue each command. `If-Match: "<version>"`
        (or `W/"<version>"`, the `ETag` of the state read) refuses with 409 unless the table is still at
        that version; `If-Match: *` only requires the table to exist. A repeated `Idempotency-Key`
        with the same body returns the first response and appends nothing. The response is the
        receipt: the new head `version` and `digest`, the appended events, the new state, and
        `receipt`, the new head signed by the service (verify it with a key of GET /keys); `ETag` is the
        new version.
        """
        command, player = args.pop("command"), args.pop("player")
        result = service().execute(table_id, command, player, args, **http.command_preconditions(), **credential(),
                                   viewer=viewer())
        return result, 200, http.etag(result["version"])


@blp.route("/tables/<table_id>/head")
class Head(MethodView):
    @blp.response(200, HeadSchema)
    @answers(404, 503)
    def get(self, table_id: str) -> Any:
        """The table's head: the version, digest and timestamp of its last event, and a signed `receipt`.

        Reads one event however long the table. The receipt is signed with the current key of
        GET /keys; the same head signed with the same key is always the same receipt.
        """
        return service().head(table_id)


EVENTS = ("A page of the log; with `Accept: application/x-ndjson`, the whole log from `after` on, one Event a line; "
          "with `Accept: text/event-stream`, the log from `after` (or Last-Event-ID) on, then each event as it is "
          "recorded, as Server-Sent Events.")


@blp.route("/tables/<table_id>/events")
class Events(MethodView):
    @blp.arguments(EventsQueryArgs(), location="query")
    @blp.response(200, EventsPageSchema, description=EVENTS)
    @blp.alt_response(200, content_type=NDJSON, description=EVENTS, schema={
        "type": "string", "description": "JSON lines: one Event (as in EventsPage) a line, in version order."})
    @blp.alt_response(200, content_type=SSE, description=EVENTS, schema={
        "type": "string", "description": "Server-Sent Events: `id:` the version, `event: table-event`, `data:` one "
                                         "Event (as in EventsPage) in compact JSON; `: heartbeat` comments."})
    @answers(400, 404, 409, 422, 503, reads=("Last-Event-ID",))
    def get(self, args: dict[str, Any], table_id: str) -> Any:
        """The event log in version order, paged by `after` and `limit`.

        With `Accept: application/x-ndjson` the whole log from `after` on streams as JSON lines.
        With `Accept: text/event-stream` it is a live stream: the log after `Last-Event-ID` (a version, which
        EventSource sends when it connects again) or else after `after`, then each event as it is recorded,
        each once and in order, with a `: heartbeat` comment after each ZAMETANO_STREAM_HEARTBEAT seconds of
        silence; a 503 with `Retry-After` when this worker already holds its ZAMETANO_MAX_STREAMS streams, or this
        credential its share of them (a quarter).
        `data` never holds a seed before its `ShoeRevealed`.
        """
        if streams.asked_for() and request.accept_mimetypes.best_match(["application/json", NDJSON, SSE]) == SSE:
            return streams.table_events(table_id, args["after"])
        if request.accept_mimetypes.best_match(["application/json", NDJSON]) == NDJSON:
            lines = service().iter_events(table_id, after=args["after"], viewer=viewer())
            first = next(lines, None)  # reads the table now, so an unknown table is a 404, not a broken stream
            return Response(stream_with_context(_ndjson(first, lines)), mimetype=NDJSON)
        return service().events_page(table_id, after=args["after"], limit=args["limit"], viewer=viewer())


def _ndjson(first: Any, rest: Any) -> Any:
    if first is not None:
        yield json.dumps(first, ensure_ascii=False) + "\n"
    for event in rest:
        yield json.dumps(event, ensure_ascii=False) + "\n"
