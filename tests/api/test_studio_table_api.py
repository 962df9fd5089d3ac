"""A studio's punto banco table over the API: bettors of an open table stake with their own tokens, unnamed at
the opening; a late stake, a stake past a spot's limit or past the table's exposure is a 422 naming what is left;
each bettor's state is his own; his history lists the coup."""

from __future__ import annotations

import pytest

OPERATOR = "op-secret-0f3a9c2e"


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def studio(make_client):
    client = make_client(ZAMETANO_TOKENS=f"operator@cage:{OPERATOR}")
    opened = client.post("/tables", headers=bearer(OPERATOR), json={
        "game": "punto-banco", "players": ["marta"], "croupier": "marta", "players_act": "self",
        "rules": {"open_seats": True, "min_window": 5, "max_window": 30, "max_tie_stake": 100,
                  "max_exposure": 5000}})
    assert opened.status_code == 201, opened.json
    table_id = opened.json["table_id"]
    for command, fields in (("shuffle", {}), ("cut", {"position": 40}), ("open_stakes", {"seconds": 30})):
        done = client.post(f"/tables/{table_id}/commands", headers=bearer(OPERATOR),
                           json={"command": command, "player": "marta", **fields})
        assert done.status_code == 200, done.json
    return client, table_id


def token(client, player):
    minted = client.post(f"/players/{player}/tokens", headers=bearer(OPERATOR), json={})
    assert minted.status_code == 201
    return minted.json["token"]


def stake(client, table_id, player, spot, amount, as_token):
    return client.post(f"/tables/{table_id}/commands", headers=bearer(as_token),
                       json={"command": "place_stake", "player": player, "spot": spot, "amount": amount})


def test_bettors_stake_with_their_own_tokens_and_see_their_own_view(studio):
    client, table_id = studio
    anna, boris = token(client, "anna"), token(client, "boris")
    first = stake(client, table_id, "anna", "player", 100, anna)
    assert first.status_code == 200, first.json
    assert [e["type"] for e in first.json["events"]] == ["BettorJoined", "StakePlaced"]
    assert stake(client, table_id, "boris", "banker", 100, anna).status_code == 403  # anna's token, boris' stake
    assert stake(client, table_id, "boris", "banker", 100, boris).status_code == 200
    seen = client.get(f"/tables/{table_id}", headers=bearer(anna)).json
    assert seen["players"] == ["marta", "anna", "boris"] and {e["player"] for e in seen["expects"]} == {"anna"}
    assert seen["window"]["seconds"] == 30 and seen["exposure"] == {"now": 0, "limit": 5000}  # one pays the other, less the commission


def test_a_stake_past_the_tie_limit_or_the_exposure_is_a_422_naming_what_is_left(studio):
    client, table_id = studio
    anna = token(client, "anna")
    tie = stake(client, table_id, "anna", "tie", 120, anna)
    assert tie.status_code == 422 and tie.json["max_allowed"] == 100 and "100" in tie.json["message"]
    assert stake(client, table_id, "anna", "player", 5000, anna).status_code == 200
    past = stake(client, table_id, "zoe", "player", 20, token(client, "zoe"))
    assert past.status_code == 422 and past.json["max_exposure"] == 5000 and past.json["max_allowed"] == 0
    assert "zoe" not in client.get(f"/tables/{table_id}", headers=bearer(OPERATOR)).json["players"]


def test_the_croupier_deals_after_the_deadline_and_the_bettor_finds_the_coup_in_his_history(studio):
    client, table_id = studio
    anna = token(client, "anna")
    assert stake(client, table_id, "anna", "player", 100, anna).status_code == 200
    closed = client.post(f"/tables/{table_id}/commands", headers=bearer(OPERATOR),
                         json={"command": "close_stakes", "player": "marta"})
    assert closed.status_code == 200
    assert client.post(f"/tables/{table_id}/commands", headers=bearer(OPERATOR),
                       json={"command": "deal", "player": "marta"}).status_code == 200
    rounds = client.get("/players/anna/rounds", headers=bearer(anna)).json["rounds"]
    assert [(r["table_id"], r["round"], r["staked"]) for r in rounds] == [(table_id, 1, 100)]
