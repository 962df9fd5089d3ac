"""Corrections over the API: a round voided under two supervisors' signatures, before and after its payments;
every refusal (its own requester, a player's or an operator's token, twice) with a message and no money moved;
the adjustments log listing each one, and the table still verifying."""

from __future__ import annotations

import pytest

SARA, SIMON = "sara-supervisor-token-0001", "simon-supervisor-token-0002"
CAGE, AUDREY = "cage-operator-token-00003", "audrey-auditor-token-0004"
TOKENS = f"operator@cage:{CAGE},supervisor@sara:{SARA},supervisor@simon:{SIMON},auditor@audrey:{AUDREY}"


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


class Table:
    def __init__(self, client, game="punto-banco"):
        self.client = client
        opened = client.post("/tables", json={"game": game, "players": ["marta", "anna", "boris"], "croupier": "marta"},
                             headers=bearer(CAGE))
        assert opened.status_code == 201, opened.json
        self.id = opened.json["table_id"]

    def command(self, command, player, token=CAGE, **fields):
        return self.client.post(f"/tables/{self.id}/commands", json={"command": command, "player": player, **fields},
                                headers=bearer(token))

    def ok(self, command, player, token=CAGE, **fields):
        answer = self.command(command, player, token, **fields)
        assert answer.status_code == 200, answer.json
        return answer.json

    def state(self):
        return self.client.get(f"/tables/{self.id}", headers=bearer(AUDREY)).json

    def money(self):
        state = self.state()
        return {**state["balances"], "house": state["house"]}

    def stake_a_coup(self):
        self.ok("place_stake", "anna", spot="banker", amount=100)
        self.ok("place_stake", "boris", spot="player", amount=60)
        return self.state()["round"]

    def void(self, number, reason="misdeal", note="a card fell face up"):
        asked = self.ok("request_correction", "sara", SARA, kind="void_round", round=number, reason=reason, note=note)
        request = asked["state"]["corrections"][-1]["request"]
        return self.ok("approve_correction", "simon", SIMON, request=request)


@pytest.fixture
def client(make_client):
    return make_client(ZAMETANO_TOKENS=TOKENS)


@pytest.fixture
def table(client):
    table = Table(client)
    table.ok("shuffle", "marta")
    table.ok("cut", "anna", position=200)
    return table


def test_a_coup_voided_before_its_deal_returns_every_stake_and_the_table_takes_stakes_again(table):
    before = table.money()
    number = table.stake_a_coup()
    table.ok("close_stakes", "marta")
    approved = table.void(number)
    types = [e["type"] for e in approved["events"]]
    assert types == ["CorrectionApproved", "StakeReturned", "StakeReturned", "RoundVoided"]
    assert approved["events"][0]["data"]["requested_by"] == "sara" and approved["events"][0]["actor"] == "simon"
    state = approved["state"]
    assert state["phase"] == "stakes" and state["stakes"] == {} and table.money() == before
    assert state["voided"][0]["round"] == number and "corrections" not in state
    rounds = table.client.get(f"/tables/{table.id}/rounds", headers=bearer(AUDREY)).json["rounds"]
    assert rounds[-1]["round"] == number and rounds[-1]["void"]["reason"] == "misdeal"
    audit = table.client.get(f"/tables/{table.id}/rounds/{number}", headers=bearer(AUDREY)).json
    assert audit["void"]["settled"] is False and all(v is not False for v in audit["checks"].values()), audit["problems"]


def test_a_coup_voided_after_its_payments_puts_every_balance_back_house_included(table):
    before = table.money()
    number = table.stake_a_coup()
    table.ok("close_stakes", "marta")
    table.ok("deal", "marta")
    assert table.money() != before
    approved = table.void(number, reason="dealt-before-close")
    assert {e["type"] for e in approved["events"]} >= {"CorrectionApproved", "PaymentReversed", "RoundVoided"}
    assert table.money() == before
    head = approved["events"][0]["data"]
    assert head["after"] == before and head["requested_by"] == "sara" and head["approved_by"] == "simon"
    verified = table.client.get(f"/tables/{table.id}/verify", headers=bearer(AUDREY)).json
    assert verified["ok"], verified["problems"]
    audit = table.client.get(f"/tables/{table.id}/rounds/{number}", headers=bearer(AUDREY)).json
    assert audit["void"]["settled"] is True and not audit["problems"]
    # The next coup is played as ever.
    table.stake_a_coup()
    table.ok("close_stakes", "marta")
    table.ok("deal", "marta")


def test_a_request_is_refused_to_its_own_requester_to_other_tokens_and_a_second_time(table, client):
    before = table.money()
    number = table.stake_a_coup()
    asked = table.ok("request_correction", "sara", SARA, kind="void_round", round=number, reason="other")
    request = asked["state"]["corrections"][0]["request"]
    own = table.command("approve_correction", "sara", SARA, request=request)
    assert own.status_code == 403 and "second supervisor" in own.json["message"]
    operator = table.command("approve_correction", "cage", CAGE, request=request)
    assert operator.status_code == 403 and "supervisor's token" in operator.json["message"]
    minted = client.post("/players/anna/tokens", json={}, headers=bearer(CAGE)).json["token"]
    player = table.command("approve_correction", "anna", minted, request=request)
    assert player.status_code == 403
    other_name = table.command("approve_correction", "sara", SIMON, request=request)
    assert other_name.status_code == 403 and "own name" in other_name.json["message"]
    game = table.command("close_stakes", "marta", SIMON)
    assert game.status_code == 403 and "corrections only" in game.json["message"]
    table.ok("approve_correction", "simon", SIMON, request=request)
    twice = table.command("approve_correction", "simon", SIMON, request=request)
    assert twice.status_code == 422 and "decided once" in twice.json["message"]
    assert table.money() == before


def test_a_refused_request_moves_no_money_and_is_logged_with_both_names(table, client):
    number = table.stake_a_coup()
    table.ok("close_stakes", "marta")
    table.ok("deal", "marta")
    after_deal = table.money()
    asked = table.ok("request_correction", "sara", SARA, kind="void_round", round=number, reason="card-exposed")
    refused = table.ok("refuse_correction", "simon", SIMON, request=asked["state"]["corrections"][0]["request"],
                       note="the camera shows the card was not exposed")
    assert [e["type"] for e in refused["events"]] == ["CorrectionRefused"] and table.money() == after_deal
    listed = client.get("/adjustments", headers=bearer(AUDREY)).json["adjustments"]
    assert [(a["status"], a["requested_by"], a["decided_by"], a["reason"]) for a in listed] == [
        ("refused", "sara", "simon", "card-exposed")]


def test_every_correction_is_in_the_adjustments_log_filtered_paged_and_exported(table, client):
    first = table.stake_a_coup()
    table.void(first, reason="misdeal")
    second = table.stake_a_coup()
    table.ok("close_stakes", "marta")
    table.ok("deal", "marta")
    table.void(second, reason="shoe-fault")
    events = client.get(f"/tables/{table.id}/events?limit=1000", headers=bearer(AUDREY)).json["events"]
    voided = [(e["data"]["round"], e["data"]["reason"]) for e in events if e["type"] == "RoundVoided"]
    listed = client.get("/adjustments", headers=bearer(AUDREY)).json
    assert [(a["round"], a["reason"]) for a in listed["adjustments"]] == voided == [(first, "misdeal"), (second, "shoe-fault")]
    assert all(a["requested_by"] != a["decided_by"] and a["status"] == "approved" for a in listed["adjustments"])
    assert all(a["before"] and sum(a["after"].values()) == 0 for a in listed["adjustments"])
    page = client.get("/adjustments?limit=1", headers=bearer(CAGE)).json
    assert len(page["adjustments"]) == 1 and page["next_cursor"]
    rest = client.get(f"/adjustments?cursor={page['next_cursor']}", headers=bearer(CAGE)).json
    assert [a["round"] for a in rest["adjustments"]] == [second] and rest["next_cursor"] is None
    assert [a["round"] for a in client.get("/adjustments?reason=shoe-fault", headers=bearer(SARA)).json["adjustments"]] == [second]
    assert client.get("/adjustments?player=anna", headers=bearer(AUDREY)).json["adjustments"][0]["round"] == first
    assert client.get(f"/adjustments?table={table.id}&to=2000-01-01T00:00:00Z", headers=bearer(AUDREY)).json["adjustments"] == []
    lines = client.get("/adjustments", headers={**bearer(AUDREY), "Accept": "application/x-ndjson"}).data.decode().splitlines()
    assert len(lines) == 2
    minted = client.post("/players/anna/tokens", json={}, headers=bearer(CAGE)).json["token"]
    assert client.get("/adjustments", headers=bearer(minted)).status_code == 403
    assert client.get("/adjustments?reason=bribery", headers=bearer(AUDREY)).status_code == 422
    history = client.get("/players/anna/rounds", headers=bearer(minted)).json["rounds"]
    assert {r["round"]: r.get("void", {}).get("reason") for r in history} == {second: "shoe-fault", first: "misdeal"}


def test_a_stake_recorded_for_the_wrong_player_is_corrected_under_two_signatures_and_logged(table, client):
    table.ok("place_stake", "anna", spot="banker", amount=100)
    number = table.state()["round"]
    asked = table.ok("request_correction", "sara", SARA, kind="correct_stake", round=number, reason="wrong-stake",
                     note="boris's chips", stake_player="anna", stake_spot="banker", stake_amount=100, stake_to="boris")
    assert asked["state"]["stakes"] == {"anna": {"banker": 100}}  # nothing changes before the approval
    request = asked["state"]["corrections"][0]
    assert request["stake"] == {"player": "anna", "spot": "banker", "amount": 100, "to": "boris"}
    approved = table.ok("approve_correction", "simon", SIMON, request=request["request"])
    assert approved["state"]["stakes"] == {"boris": {"banker": 100}}
    assert [e["type"] for e in approved["events"]] == ["CorrectionApproved", "StakeCorrected", "StakeCorrected"]
    table.ok("close_stakes", "marta")
    table.ok("deal", "marta")
    [entry] = client.get("/adjustments", headers=bearer(AUDREY)).json["adjustments"]
    assert entry["kind"] == "correct_stake" and entry["stake"]["to"] == "boris" and entry["before"] == entry["after"]
    assert entry["players"] == ["anna", "boris"]
    verified = client.get(f"/tables/{table.id}/verify", headers=bearer(AUDREY)).json
    assert verified["ok"], verified["problems"]
    void_with_stake = table.command("request_correction", "sara", SARA, kind="void_round", round=number,
                                    reason="other", stake_amount=5)
    assert void_with_stake.status_code == 422 and "no stake fields" in void_with_stake.json["message"]


def test_a_coup_voided_after_its_settlement_leaves_the_roads(table, client):
    table.stake_a_coup()
    table.ok("close_stakes", "marta")
    table.ok("deal", "marta")
    roads = client.get(f"/tables/{table.id}/roads", headers=bearer(AUDREY)).json
    number = table.state()["round"]
    table.void(number)
    after = client.get(f"/tables/{table.id}/roads", headers=bearer(AUDREY)).json
    assert roads["bead_plate"] and not after["bead_plate"], (roads, after)
