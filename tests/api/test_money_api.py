"""Money over the API (docs/api.md "Money: purses and a wallet"): who may deposit, who reads which purse, a
cashier's key answered once, the purse's log paged, the transactions filtered, paged and exported, a table's
movements; and a service that keeps no money says so."""

from __future__ import annotations

import json

import pytest

CASHIER, OPERATOR, AUDITOR = "cash-cashier-token-0035", "cage-operator-token-035", "audrey-auditor-token-035"
TOKENS = f"cashier@cash:{CASHIER},operator@cage:{OPERATOR},auditor@audrey:{AUDITOR}"


def bearer(token, **more):
    return {"Authorization": f"Bearer {token}", **more}


@pytest.fixture
def client(make_client):
    return make_client(ZAMETANO_TOKENS=TOKENS, ZAMETANO_MONEY="purses")


def deposit(client, player, amount, token=CASHIER, **headers):
    return client.post(f"/players/{player}/purse", json={"command": "deposit", "amount": amount, "note": "till 3"},
                       headers=bearer(token, **headers))


def staked_table(client):
    table_id = client.post("/tables", json={"game": "punto-banco", "players": ["marta", "anna", "boris"],
                                            "croupier": "marta"}, headers=bearer(OPERATOR)).json["table_id"]
    for body in ({"command": "shuffle", "player": "marta"}, {"command": "cut", "player": "anna", "position": 100},
                 {"command": "place_stake", "player": "anna", "spot": "banker", "amount": 100},
                 {"command": "place_stake", "player": "boris", "spot": "player", "amount": 50}):
        answer = client.post(f"/tables/{table_id}/commands", json=body, headers=bearer(OPERATOR))
        assert answer.status_code == 200, answer.json
    return table_id


def test_only_a_cashier_deposits_and_the_deposit_is_recorded_in_his_name(client):
    refused = deposit(client, "anna", 100, token=OPERATOR)
    assert refused.status_code == 403 and "cashier" in refused.json["message"]
    assert deposit(client, "anna", 100, token=AUDITOR).status_code == 403
    done = deposit(client, "anna", 100)
    assert done.status_code == 200
    assert done.json["balance"] == 100 and done.json["movements"][-1]["actor"] == "cash"
    assert done.json["movements"][-1]["data"] == {"amount": 100, "note": "till 3", "balance": 100}


def test_a_repeated_idempotency_key_answers_as_the_first_deposit_and_records_nothing(client):
    first = deposit(client, "anna", 100, **{"Idempotency-Key": "till-3-0001"})
    again = deposit(client, "anna", 100, **{"Idempotency-Key": "till-3-0001"})
    assert again.status_code == 200 and again.json == first.json
    assert client.get("/players/anna/purse", headers=bearer(AUDITOR)).json["balance"] == 100


def test_a_withdrawal_above_the_balance_is_refused_naming_the_balance(client):
    deposit(client, "anna", 80)
    refused = client.post("/players/anna/purse", json={"command": "withdraw", "amount": 81}, headers=bearer(CASHIER))
    assert refused.status_code == 422 and refused.json["holds"] == 80 and "holds 80" in refused.json["message"]
    done = client.post("/players/anna/purse", json={"command": "withdraw", "amount": 80}, headers=bearer(CASHIER))
    assert done.json["balance"] == 0 and done.json["withdrawals"] == 80


def test_a_player_reads_his_own_purse_and_no_other(client):
    deposit(client, "anna", 100)
    token = client.post("/players/anna/tokens", json={}, headers=bearer(OPERATOR)).json["token"]
    assert client.get("/players/anna/purse", headers=bearer(token)).json["balance"] == 100
    other = client.get("/players/boris/purse", headers=bearer(token))
    assert other.status_code == 403 and "own purse" in other.json["message"]
    assert client.post("/players/anna/purse", json={"command": "deposit", "amount": 5},
                       headers=bearer(token)).status_code == 403


def test_a_purses_log_is_paged_by_version_and_its_head_is_signed(client):
    for amount in range(1, 6):
        deposit(client, "anna", amount)
    first = client.get("/players/anna/purse?limit=2", headers=bearer(AUDITOR)).json
    assert [e["version"] for e in first["movements"]] == [1, 2] and first["next_cursor"] == "2"
    rest = client.get(f"/players/anna/purse?limit=10&cursor={first['next_cursor']}", headers=bearer(AUDITOR)).json
    assert [e["version"] for e in rest["movements"]] == [3, 4, 5, 6] and rest["next_cursor"] is None
    receipt = first["receipt"]
    assert (receipt["version"], receipt["digest"]) == (6, rest["movements"][-1]["digest"]) == (6, first["head"])


def test_a_purse_nobody_used_is_empty_and_a_reserved_name_is_refused(client):
    assert client.get("/players/nobody/purse", headers=bearer(AUDITOR)).json["balance"] == 0
    assert client.get("/players/house/purse", headers=bearer(AUDITOR)).status_code == 422


def test_the_transactions_are_filtered_paged_and_exported_and_match_the_tables_movements(client):
    deposit(client, "anna", 1000)
    deposit(client, "boris", 1000)
    table_id = staked_table(client)
    page = client.get("/wallet/transactions?limit=1", headers=bearer(AUDITOR)).json
    assert len(page["transactions"]) == 1 and page["next_cursor"]
    rest = client.get(f"/wallet/transactions?cursor={page['next_cursor']}", headers=bearer(AUDITOR)).json
    listed = page["transactions"] + rest["transactions"]
    assert [(t["player"], t["operation"], t["amount"], t["state"]) for t in listed] == [
        ("anna", "debit", 100, "counted"), ("boris", "debit", 50, "counted")]
    only_boris = client.get("/wallet/transactions?player=boris", headers=bearer(AUDITOR)).json["transactions"]
    assert [t["player"] for t in only_boris] == ["boris"]
    assert client.get("/wallet/transactions?state=due", headers=bearer(AUDITOR)).json["transactions"] == []
    later = client.get("/wallet/transactions", query_string={"from": "2999-01-01T00:00:00Z"},
                       headers=bearer(AUDITOR)).json["transactions"]
    assert later == []
    lines = client.get("/wallet/transactions", headers=bearer(AUDITOR, Accept="application/x-ndjson"))
    assert [json.loads(line)["transaction"] for line in lines.get_data(as_text=True).splitlines()] == [
        t["transaction"] for t in listed]
    moved = client.get(f"/tables/{table_id}/movements", headers=bearer(AUDITOR)).json["movements"]
    assert [(m["transaction"], m["operation"], m["amount"]) for m in moved] == [
        (t["transaction"], t["operation"], t["amount"]) for t in listed]


def test_a_service_without_money_says_so_and_a_player_may_not_list_transactions(make_client):
    client = make_client(ZAMETANO_TOKENS=TOKENS)
    answer = client.get("/players/anna/purse", headers=bearer(AUDITOR))
    assert answer.status_code == 404 and "ZAMETANO_MONEY=none" in answer.json["message"]
    assert client.get("/wallet/transactions", headers=bearer(AUDITOR)).status_code == 404
    token = client.post("/players/anna/tokens", json={}, headers=bearer(OPERATOR)).json["token"]
    assert client.get("/wallet/transactions", headers=bearer(token)).status_code == 403
