"""Views per viewer over the API: each role and each player sees the face-down cards it may see and no other
(docs/api.md "What each role sees"), in the state, the events page, the export, command responses and audits;
player tokens read their tables and post their own commands; ``players_act`` opens a self-acting table."""

from __future__ import annotations

import json

import pytest

from tests.viewing import HIDDEN, Oracle, check_events, drive, read_log

OP, AU, SV = "op-token-for-views", "au-token-for-views", "sv-token-for-views"
TOKENS = f"operator@cage:{OP},auditor@books:{AU},surveillance@eye:{SV}"
PLAYERS = ["anna", "boris", "vera"]


def bearer(token):
    return {"Authorization": f"Bearer {token}"} if token else {}


@pytest.fixture
def world(make_client):
    client = make_client(ZAMETANO_TOKENS=TOKENS)

    def read(path, token):
        response = client.get(path, headers=bearer(token))
        assert response.status_code == 200, (path, response.json)
        return response.json

    def post(path, player, token, body):
        response = client.post(path, json=body, headers=bearer(token or OP))
        assert response.status_code == 200, (player, body, response.json)
        return response.json

    tokens = {p: client.post(f"/players/{p}/tokens", json={}, headers=bearer(OP)).json["token"] for p in PLAYERS}
    return client, read, post, tokens


def open_table(client, game, **fields):
    response = client.post("/tables", json={"game": game, "players": PLAYERS, "players_act": "self", **fields},
                           headers=bearer(OP))
    assert response.status_code == 201, response.json
    return response.json["table_id"]


def test_players_act_is_an_opening_field_checked_with_what_is_allowed(world):
    client = world[0]
    refused = client.post("/tables", json={"game": "chemin-de-fer", "players": PLAYERS, "players_act": "anyone"},
                          headers=bearer(OP))
    assert refused.status_code == 422
    assert "croupier" in json.dumps(refused.json) and "self" in json.dumps(refused.json)


def test_at_a_self_table_each_player_sees_his_own_cards_and_nobody_elses_at_every_version(world):
    client, read, post, tokens = world
    table_id = open_table(client, "chemin-de-fer", rules={"decks": 2, "draw_rule": "free", "auto_forced": False})
    responses = []
    full = drive(post, table_id, tokens, SV, read,
                 lambda events: sum(e["type"] == "HandsShown" for e in events) >= 3 and any(
                     e["type"] == "HandStood" for e in events),  # a coup decided by its players, not a natural
                 lambda response, player: responses.append((response, player)))
    oracle = Oracle(full)
    by_version = {e["version"]: e for e in full}
    seen_hidden = 0
    for response, player in responses:  # each command's response, as its player got it
        seen_hidden += check_events(oracle, response["events"], by_version, player, response["version"])
        assert all(e["player"] == player for e in response["state"]["expects"])
    head = full[-1]["version"]
    for viewer, token in [*((p, tokens[p]) for p in PLAYERS), ("operator", OP)]:
        seen_hidden += check_events(oracle, read_log(read, table_id, token), by_version, viewer, head)
        lines = client.get(f"/tables/{table_id}/events", headers={**bearer(token), "Accept": "application/x-ndjson"})
        check_events(oracle, [json.loads(line) for line in lines.data.splitlines()], by_version, viewer, head)
    assert seen_hidden > 0  # the play went through face-down cards still hidden from someone


def test_a_state_at_each_version_hides_the_others_cards_until_the_hands_are_shown(world):
    client, read, post, tokens = world
    table_id = open_table(client, "chemin-de-fer", rules={"decks": 2})
    full = drive(post, table_id, tokens, SV, read, lambda events: any(e["type"] == "HandsShown" for e in events),
                 lambda response, player: None)
    dealt = [e for e in full if e["type"] == "CardDealt" and not e["data"]["face_up"]]
    shown_at = next(e["version"] for e in full if e["type"] == "HandsShown")
    at = dealt[-1]["version"]  # the four cards dealt, the hands not shown yet
    assert at < shown_at
    for player in PLAYERS:
        state = read(f"/tables/{table_id}/state?version={at}", tokens[player])
        own = [e["data"]["card"] for e in dealt if e["data"]["to"] == player]
        hands = state["hands"]["punter"] + state["hands"]["banker"]
        assert sorted(c for c in hands if c != HIDDEN) == sorted(own)
        assert hands.count(HIDDEN) == 4 - len(own)
    # the auditor reads a round that is over now: all its cards, even in a state from before it ended
    for token, hidden in ((OP, 4), (AU, 0), (SV, 0)):
        state = read(f"/tables/{table_id}/state?version={at}", token)
        assert (state["hands"]["punter"] + state["hands"]["banker"]).count(HIDDEN) == hidden
    assert HIDDEN not in str(read(f"/tables/{table_id}/state?version={shown_at}", OP)["hands"])


def test_an_operator_acting_for_a_player_at_a_self_table_is_refused_and_each_command_records_its_by(world):
    client, read, post, tokens = world
    table_id = open_table(client, "chemin-de-fer")
    refused = client.post(f"/tables/{table_id}/commands", json={"command": "draw_seats", "player": "anna"},
                          headers=bearer(OP))
    assert refused.status_code == 403
    wrong = client.post(f"/tables/{table_id}/commands", json={"command": "draw_seats", "player": "anna"},
                        headers=bearer(tokens["boris"]))
    assert wrong.status_code == 403
    done = client.post(f"/tables/{table_id}/commands", json={"command": "draw_seats", "player": "anna"},
                       headers=bearer(tokens["anna"]))
    assert done.status_code == 200
    assert {e["data"]["by"] for e in done.json["events"]} == {"anna"}


@pytest.mark.parametrize(("method", "path"), [
    ("POST", "/tables"), ("GET", "/tables"), ("POST", "/players/anna/tokens"), ("GET", "/tables/{id}/decisions"),
    ("GET", "/heads"),
])
def test_a_players_token_is_refused_what_is_the_houses(world, method, path):
    client, read, post, tokens = world
    table_id = open_table(client, "chemin-de-fer")
    response = client.open(path.replace("{id}", table_id), method=method, json={}, headers=bearer(tokens["anna"]))
    assert response.status_code == 403


def test_a_players_token_limited_to_some_tables_reads_those_only(world):
    client, read, post, tokens = world
    mine, other = open_table(client, "chemin-de-fer"), open_table(client, "chemin-de-fer")
    token = client.post("/players/anna/tokens", json={"tables": [mine]}, headers=bearer(OP)).json["token"]
    assert client.get(f"/tables/{mine}", headers=bearer(token)).status_code == 200
    refused = client.get(f"/tables/{other}/events", headers=bearer(token))
    assert refused.status_code == 403 and mine in refused.json["message"]


def test_surveillance_reads_but_may_not_command(world):
    client, read, post, tokens = world
    table_id = open_table(client, "chemin-de-fer")
    assert client.get(f"/me", headers=bearer(SV)).json == {"role": "surveillance", "name": "eye"}
    refused = client.post(f"/tables/{table_id}/commands", json={"command": "draw_seats", "player": "anna"},
                          headers=bearer(SV))
    assert refused.status_code == 403


def test_card_lottery_hands_piles_and_expects_bounds_are_each_holders_own(world):
    client, read, post, tokens = world
    table_id = open_table(client, "card-lottery", banker="anna", dealer="boris",
                          rules={"banker_plays": True, "dealer_plays": True})
    full = drive(post, table_id, tokens, SV, read, lambda events: any(e["type"] == "Stage2Began" for e in events),
                 lambda response, player: None)
    oracle = Oracle(full)
    by_version = {e["version"]: e for e in full}
    head = full[-1]["version"]
    for player in PLAYERS:
        state = read(f"/tables/{table_id}", tokens[player])
        for holder, cards in state["hands"].items():
            assert (HIDDEN in cards) == (holder != player and bool(cards)), (player, state["hands"])
        assert all(e["player"] == player for e in state["expects"])
        check_events(oracle, read_log(read, table_id, tokens[player]), by_version, player, head)
    operator = read(f"/tables/{table_id}", OP)
    for expect in operator["expects"]:
        for spec in expect["fields"].values():
            assert "cards" not in spec and "sets" not in spec  # no bounds drawn from a hidden hand
    # the auditor sees the cards of the rounds that are over (set aside), not those still in play
    check_events(oracle, read_log(read, table_id, AU), by_version, "auditor", head, auditor_now=head)
    audit = read(f"/tables/{table_id}/rounds/1", tokens["vera"])
    check_events(oracle, audit["events"], by_version, "vera", head)
    assert audit["checks"]["chain"] is True


def test_a_refused_command_lists_what_is_expected_as_its_issuer_may_see_it(world):
    client, read, post, tokens = world
    table_id = open_table(client, "card-lottery", banker="anna", dealer="boris",
                          rules={"banker_plays": True, "dealer_plays": True})
    drive(post, table_id, tokens, SV, read, lambda events: any(e["type"] == "Stage2Began" for e in events),
          lambda response, player: None)
    expected = read(f"/tables/{table_id}", SV)["expects"][0]
    other = next(p for p in PLAYERS if p != expected["player"])
    refused = client.post(f"/tables/{table_id}/commands", json={"command": "take", "player": other},
                          headers=bearer(tokens[other]))
    assert refused.status_code == 422
    assert refused.json["expects"] == []  # the holder to play is another: nothing of his hand
