"""A refusal tells its caller nothing his own view does not show (docs/design.md "Hidden information"): two tables
that differ only in a face-down hand refuse the same commands in the same words to everyone who may not see that
hand, and the player whose cards they are is told why."""

from __future__ import annotations

from typing import Any

import pytest

from domain.errors import DomainError, IllegalPlay, NotAllowedNow
from domain.sight import OPERATOR, PLAYER, SURVEILLANCE, Viewer
from service.application import TablesService
from tests.helpers import stacked_shoe

PLAYERS = ["anna", "boris"]
# After the deal the punter holds two cards making 2 on one table and 3 on the other (the classic rule forces a
# draw on both), the banker 7 on both: no natural, the punter to decide.
PUNTER_ON = {2: ["Ts", "7h", "2d", "Kc"], 3: ["Ts", "7h", "3d", "Kc"]}


def to_the_punters_choice(service: TablesService, total: int) -> tuple[str, str, str]:
    """A croupier's table dealt to the punter's choice with the punter on ``total``: its id, punter, banker."""
    table_id = service.open_table("chemin-de-fer", PLAYERS, {"decks": 2, "auto_forced": False})["table_id"]
    with stacked_shoe(PUNTER_ON[total]):
        state = service.current_state(table_id)
        while state["phase"] != "punter_draw":
            expect = state["expects"][0]
            fields = {"post_bank": {"amount": 100}, "place_stake": {"amount": 10}, "cut": {"position": 20}}.get(
                expect["command"], {})
            state = service.execute(table_id, expect["command"], expect["player"], fields)["state"]
    table = service.table(table_id)
    return table_id, table.punter, table.banker


def refusal(service: TablesService, table_id: str, command: str, player: str, viewer: Viewer,
            as_player: str | None = None) -> dict[str, Any]:
    with pytest.raises(DomainError) as refused:
        service.execute(table_id, command, player, {}, as_player=as_player, viewer=viewer)
    return {"class": type(refused.value).__name__, "message": refused.value.message, **refused.value.details}


def test_a_refusal_reads_the_same_to_all_who_may_not_see_the_hand_whatever_the_hand_holds(make_service):
    service = make_service()
    tables = {total: to_the_punters_choice(service, total) for total in PUNTER_ON}
    told: dict[str, list[dict[str, Any]]] = {}
    for total, (table_id, punter, banker) in tables.items():
        told.setdefault("operator", []).append(refusal(service, table_id, "stand", punter, Viewer(OPERATOR)))
        # the banker, with his own token, asks to stand: not his turn, and the message names whose turn it is
        told.setdefault("banker", []).append(
            refusal(service, table_id, "stand", banker, Viewer(PLAYER, banker), as_player=banker))
        told.setdefault("stranger", []).append(
            refusal(service, table_id, "stand", "zoe", Viewer(PLAYER, "zoe"), as_player="zoe"))
        told.setdefault("punter", []).append(
            refusal(service, table_id, "stand", punter, Viewer(PLAYER, punter), as_player=punter))
        told.setdefault("surveillance", []).append(refusal(service, table_id, "stand", punter, Viewer(SURVEILLANCE)))
    for who in ("operator", "banker", "stranger"):
        on_two, on_three = told[who]
        assert on_two == on_three, who
        assert "required" not in on_two and "2" not in on_two["message"] and "3" not in on_two["message"]
    operator = told["operator"][0]
    assert operator["class"] == "NotAllowedNow"
    assert operator["message"] == f"The rules do not allow stand by {tables[2][1]} now."
    assert {(e["command"], e["player"]) for e in operator["expects"]} == {("draw", tables[2][1]), ("stand", tables[2][1])}
    for who in ("banker", "stranger"):  # whose turn it is is public, the choice his hand forces is not
        assert f"the table waits for draw by {tables[2][1]}; stand by {tables[2][1]}" in told[who][0]["message"]
    # the punter and surveillance see the hand: they are told why, so the two tables differ
    for who in ("punter", "surveillance"):
        on_two, on_three = told[who]
        assert on_two["required"] == on_three["required"] == "draw"
        assert "on 2" in on_two["message"] and "on 3" in on_three["message"]


def test_a_refusal_that_reads_a_hidden_hand_says_only_that_the_rules_do_not_allow_it():
    """The mechanism on its own: a game's refusal naming the player whose cards it read (``about``)."""
    from domain.games import GAMES
    from domain.sight import Sight

    table = GAMES["chemin-de-fer"].open(PLAYERS, {}, _moment())
    ledger = ({"version": 5, "shoe": 2, "deck": "shoe", "card": "5c", "to": "anna", "over": False},)
    about_anna = IllegalPlay("5c is not in your hand.", about="anna")
    for viewer, generic in ((Viewer(OPERATOR), True), (Viewer(PLAYER, "boris"), True),
                            (Viewer(PLAYER, "anna"), False), (Viewer(SURVEILLANCE), False)):
        shown = table.refusal_seen(about_anna, "play", "anna", Sight(viewer, ledger, ledger, GAMES["chemin-de-fer"].secrets))
        if generic:
            assert isinstance(shown, NotAllowedNow) and shown.message == "The rules do not allow play by anna now."
        else:
            assert shown is about_anna


def _moment() -> Any:
    from datetime import datetime, timezone

    return datetime(2026, 12, 6, tzinfo=timezone.utc)
