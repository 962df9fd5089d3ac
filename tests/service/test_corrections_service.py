"""Rounds voided through the service on memory, SQLite and PostgreSQL, on each game: before its payments and
after them, the money back as it stood before the round (house, pot and kitty included), every version replaying,
the table verifying and the round's audit passing; what may not be voided refused, with nothing recorded."""

from __future__ import annotations

import pytest

from domain.errors import BadArgument, NotYourSeat
from tests.voiding import TABLES, Driver, money, void


def opened(service, game):
    body = dict(TABLES[game])
    roles = {k: body.pop(k) for k in ("croupier", "banker", "dealer") if k in body}
    state = service.open_table(body["game"], body["players"], body.get("rules"), **roles)
    table_id = state["table_id"]

    def send(command, player, fields):
        result = service.execute(table_id, command, player, fields)
        return result["state"], result["events"]

    def send_as(supervisor, command, fields):
        return service.execute(table_id, command, supervisor, fields)

    return table_id, Driver(send, state), send_as


def finished(service, table_id):
    return service.list_rounds(table_id, limit=1000)["rounds"]


def assert_whole(service, table_id):
    """Every check of the table and of each round passes, and every version replays."""
    verified = service.verify(table_id)
    assert verified["ok"], verified["problems"]
    for row in finished(service, table_id):
        audit = service.round_audit(table_id, row["round"])
        assert not audit["problems"], (row["round"], audit["problems"])


@pytest.mark.parametrize("game", ["punto-banco", "chemin-de-fer"])
def test_a_coup_voided_before_and_after_its_payments_puts_the_money_back(service, game):
    table_id, driver, send_as = opened(service, game)
    driver.to_open_round(game)
    before = driver.money_before_round
    number = len(finished(service, table_id)) + 1
    approved = void(send_as, number)
    assert [e["type"] for e in approved["events"]][-1] == "RoundVoided"
    assert any(e["type"] == "StakeReturned" for e in approved["events"])
    assert money(approved["state"]) == before and approved["state"]["voided"][-1]["round"] == number
    assert finished(service, table_id)[-1]["void"]["settled"] is False
    driver.state = approved["state"]
    driver.to_settled_round(game)
    before = driver.money_before_round
    assert money(driver.state) != before
    number = len(finished(service, table_id))
    approved = void(send_as, number, reason="card-exposed")
    assert money(approved["state"]) == before
    assert approved["events"][0]["data"]["before"] != approved["events"][0]["data"]["after"] == before
    driver.state = approved["state"]
    driver.to_settled_round(game)  # the game plays on
    assert_whole(service, table_id)
    assert service.round_audit(table_id, number)["void"]["reason"] == "card-exposed"


def test_a_card_lottery_round_voided_before_its_reveal_returns_its_contributions(service):
    table_id, driver, send_as = opened(service, "card-lottery")
    driver.to_open_round("card-lottery")
    before = driver.money_before_round
    assert money(driver.state) != before  # the contributions are in the pot
    number = len(finished(service, table_id)) + 1
    approved = void(send_as, number, reason="shoe-fault")
    assert {e["type"] for e in approved["events"]} >= {"PaymentReversed", "RoundVoided"}
    assert money(approved["state"]) == before and approved["state"]["phase"] == "collect"
    driver.state = approved["state"]
    driver.to_settled_round("card-lottery")
    assert_whole(service, table_id)
    with pytest.raises(BadArgument, match="between its collect and its reveal"):
        send_as("sara", "request_correction", {"kind": "void_round", "round": len(finished(service, table_id)),
                                               "reason": "other", "note": ""})


def test_what_may_not_be_voided_is_refused_and_nothing_is_recorded(service):
    table_id, driver, send_as = opened(service, "punto-banco")
    with pytest.raises(BadArgument, match="No round has begun"):
        send_as("sara", "request_correction", {"kind": "void_round", "round": 1, "reason": "other"})
    driver.to_settled_round("punto-banco")
    driver.to_settled_round("punto-banco")
    latest = len(finished(service, table_id))
    version = service.current_state(table_id)["version"]
    with pytest.raises(BadArgument, match="latest round"):
        send_as("sara", "request_correction", {"kind": "void_round", "round": latest - 1, "reason": "other"})
    with pytest.raises(NotYourSeat, match="supervisors"):
        send_as("anna", "request_correction", {"kind": "void_round", "round": latest, "reason": "other"})
    assert service.current_state(table_id)["version"] == version
    void(send_as, latest)
    with pytest.raises(BadArgument, match="already void"):
        send_as("sara", "request_correction", {"kind": "void_round", "round": latest, "reason": "other"})
