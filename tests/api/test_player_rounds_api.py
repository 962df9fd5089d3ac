"""GET /players/{player}/rounds over HTTP: a player reads his own history with his own token, never another's;
auditors and operators read anyone's; pages follow next_cursor; a bad cursor or limit is a 422."""

from __future__ import annotations

import pytest

OPERATOR, AUDITOR = "op-secret-0f3a9c2e", "au-secret-7b1d4e86"


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def secured(make_client):
    return make_client(ZAMETANO_TOKENS="operator@cage:op-secret-0f3a9c2e,auditor:au-secret-7b1d4e86")


def token_of(client, player):
    minted = client.post(f"/players/{player}/tokens", json={}, headers=bearer(OPERATOR))
    assert minted.status_code == 201
    return minted.json["token"]


def command(client, table_id, token, command, player, **fields):
    return client.post(f"/tables/{table_id}/commands", json={"command": command, "player": player, **fields},
                       headers=bearer(token))


def play_coups(client, coups, tokens):
    """A punto banco table whose players act for themselves: anna and boris stake with their own tokens, the
    croupier's commands come from the operator."""
    opened = client.post("/tables", headers=bearer(OPERATOR), json={
        "game": "punto-banco", "players": ["marta", "anna", "boris"], "croupier": "marta", "players_act": "self"})
    assert opened.status_code == 201, opened.json
    table_id = opened.json["table_id"]
    assert command(client, table_id, OPERATOR, "shuffle", "marta").status_code == 200
    assert command(client, table_id, tokens["anna"], "cut", "anna", position=200).status_code == 200
    for coup in range(coups):
        assert command(client, table_id, tokens["anna"], "place_stake", "anna", spot="banker",
                       amount=100 + 20 * coup).status_code == 200
        assert command(client, table_id, tokens["boris"], "place_stake", "boris", spot="player",
                       amount=50).status_code == 200
        assert command(client, table_id, OPERATOR, "close_stakes", "marta").status_code == 200
        assert command(client, table_id, OPERATOR, "deal", "marta").status_code == 200
    return table_id


def test_a_player_reads_his_own_rounds_with_his_own_token_newest_first(secured):
    tokens = {p: token_of(secured, p) for p in ("anna", "boris")}
    table_id = play_coups(secured, 3, tokens)
    page = secured.get("/players/anna/rounds", headers=bearer(tokens["anna"]))
    assert page.status_code == 200
    assert page.json["player"] == "anna" and page.json["next_cursor"] is None
    rounds = page.json["rounds"]
    assert [r["round"] for r in rounds] == [3, 2, 1]
    assert {r["table_id"] for r in rounds} == {table_id} and {r["game"] for r in rounds} == {"punto-banco"}
    assert [r["stakes"] for r in rounds] == [{"banker": 140}, {"banker": 120}, {"banker": 100}]
    state = secured.get(f"/tables/{table_id}", headers=bearer(OPERATOR)).json
    assert rounds[0]["balance"] == state["balances"]["anna"]
    assert sum(r["result"] for r in rounds) == state["balances"]["anna"]
    assert all(r["theoretical_loss"] > 0 for r in rounds)  # the banker spot's edge, after commission


def test_a_player_asking_for_another_players_rounds_is_refused(secured):
    tokens = {p: token_of(secured, p) for p in ("anna", "boris")}
    play_coups(secured, 1, tokens)
    refused = secured.get("/players/boris/rounds", headers=bearer(tokens["anna"]))
    assert refused.status_code == 403 and "anna's" in refused.json["message"]
    assert secured.get("/players/ANNA/rounds", headers=bearer(tokens["anna"])).status_code == 200  # his, folded


def test_auditors_and_operators_read_anyones_rounds_and_page_with_next_cursor(secured):
    tokens = {p: token_of(secured, p) for p in ("anna", "boris")}
    play_coups(secured, 3, tokens)
    whole = secured.get("/players/boris/rounds", headers=bearer(AUDITOR)).json["rounds"]
    assert len(whole) == 3
    paged, cursor = [], None
    while True:
        query = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = secured.get("/players/boris/rounds", query_string=query, headers=bearer(OPERATOR)).json
        paged += page["rounds"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert paged == whole


def test_an_operator_acting_for_a_player_at_a_self_acting_table_is_refused(secured):
    tokens = {p: token_of(secured, p) for p in ("anna", "boris")}
    table_id = play_coups(secured, 1, tokens)
    refused = command(secured, table_id, OPERATOR, "place_stake", "anna", spot="banker", amount=100)
    assert refused.status_code == 403 and "own credential" in refused.json["message"]
    refused = command(secured, table_id, tokens["boris"], "place_stake", "anna", spot="banker", amount=100)
    assert refused.status_code == 403


@pytest.mark.parametrize("query, field", [({"cursor": "x"}, "cursor"), ({"limit": 0}, "limit"),
                                          ({"limit": 1001}, "limit")])
def test_a_bad_cursor_or_limit_is_a_422_naming_it(secured, query, field):
    refused = secured.get("/players/anna/rounds", query_string=query, headers=bearer(AUDITOR))
    assert refused.status_code == 422 and field in refused.json["errors"]


def test_a_name_no_table_could_seat_is_a_422_and_an_unknown_player_has_no_rounds(secured):
    assert secured.get("/players/%20anna/rounds", headers=bearer(AUDITOR)).status_code == 422
    page = secured.get("/players/nobody/rounds", headers=bearer(AUDITOR))
    assert page.status_code == 200 and page.json == {"player": "nobody", "rounds": [], "next_cursor": None}


def test_players_act_is_an_opening_field_of_croupier_or_self_and_nothing_else(secured):
    body = {"game": "punto-banco", "players": ["marta", "anna"], "croupier": "marta", "players_act": "anyone"}
    refused = secured.post("/tables", json=body, headers=bearer(OPERATOR))
    assert refused.status_code == 422 and "players_act" in refused.json["errors"]
    opened = secured.post("/tables", json={**body, "players_act": "self"}, headers=bearer(OPERATOR))
    assert opened.status_code == 201
    events = secured.get(f"/tables/{opened.json['table_id']}/events", headers=bearer(OPERATOR)).json["events"]
    assert events[0]["data"]["players_act"] == "self"


def test_a_token_limited_to_one_table_reads_only_that_tables_rounds_in_his_history(secured):
    tokens = {p: token_of(secured, p) for p in ("anna", "boris")}
    first, other = play_coups(secured, 2, tokens), play_coups(secured, 1, tokens)
    minted = secured.post("/players/anna/tokens", json={"tables": [first.upper()]}, headers=bearer(OPERATOR))
    limited = minted.json["token"]
    everywhere = secured.get("/players/anna/rounds", headers=bearer(tokens["anna"])).json["rounds"]
    assert {r["table_id"] for r in everywhere} == {first, other}
    page = secured.get("/players/anna/rounds?limit=1", headers=bearer(limited))
    assert page.status_code == 200
    seen, cursor = page.json["rounds"], page.json["next_cursor"]
    while cursor is not None:  # the pages too: a page never ends where another table's round would have been
        page = secured.get(f"/players/anna/rounds?limit=1&cursor={cursor}", headers=bearer(limited))
        seen, cursor = seen + page.json["rounds"], page.json["next_cursor"]
    assert [r["table_id"] for r in seen] == [first, first]
    assert secured.get(f"/tables/{other}/rounds", headers=bearer(limited)).status_code == 403
