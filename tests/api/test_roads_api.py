"""GET /tables/{id}/roads over HTTP: a baccarat table's roads now, at a moment, at a version, for a shoe; the
Card lottery and bad queries answered with a clear 4xx."""

from __future__ import annotations


OPERATOR = "roads-operator-token-0f3a9c2e"


def open_punto_banco(client, headers=None):
    opened = client.post("/tables", json={"game": "punto-banco", "players": ["marta", "anna"], "croupier": "marta"},
                         headers=headers or {})
    assert opened.status_code == 201, opened.json
    return opened.json["table_id"]


def command(client, table_id, name, player, headers=None, **fields):
    answer = client.post(f"/tables/{table_id}/commands", json={"command": name, "player": player, **fields},
                         headers=headers or {})
    assert answer.status_code == 200, answer.json
    return answer.json


def play(client, table_id, coups, headers=None):
    """Shuffles, cuts, then stakes and deals ``coups`` coups; the CoupDecided events, in order."""
    command(client, table_id, "shuffle", "marta", headers)
    command(client, table_id, "cut", "anna", headers, position=150)
    decided = []
    for _ in range(coups):
        command(client, table_id, "place_stake", "anna", headers, spot="player", amount=20)
        command(client, table_id, "close_stakes", "marta", headers)
        dealt = command(client, table_id, "deal", "marta", headers)
        decided += [e for e in dealt["events"] if e["type"] == "CoupDecided"]
    return decided


def test_the_roads_of_a_played_shoe_show_each_coup_decided_in_order(client):
    table_id = open_punto_banco(client)
    decided = play(client, table_id, 8)
    answer = client.get(f"/tables/{table_id}/roads")
    assert answer.status_code == 200
    roads = answer.json
    assert roads["table_id"] == table_id and roads["game"] == "punto-banco" and roads["rows"] == 6
    assert roads["shoe"] == 1 and roads["shoes"] == [1] and roads["coups"] == 8
    assert [c["outcome"] for c in roads["bead_plate"]] == [e["data"]["outcome"] for e in decided]
    assert [c["natural"] for c in roads["bead_plate"]] == [e["data"]["natural"] for e in decided]
    assert [(c["column"], c["row"]) for c in roads["bead_plate"]] == [(1, r) for r in range(1, 7)] + [(2, 1), (2, 2)]
    wins = [e for e in decided if e["data"]["outcome"] != "tie"]
    assert [c["coup"] for c in roads["big_road"]] == [decided.index(e) + 1 for e in wins]
    assert all(set(c) == {"column", "row", "coup", "colour"} for c in roads["big_eye_boy"])
    assert roads["as_of"]["version"] == client.get(f"/tables/{table_id}").json["version"]


def test_the_roads_at_a_moment_or_a_version_are_those_of_the_coups_decided_by_then(client):
    table_id = open_punto_banco(client)
    decided = play(client, table_id, 5)
    third = decided[2]
    at_version = client.get(f"/tables/{table_id}/roads", query_string={"version": third["version"]}).json
    at_moment = client.get(f"/tables/{table_id}/roads", query_string={"at": third["timestamp"]}).json
    assert at_version == at_moment
    assert at_version["coups"] == 3 and at_version["as_of"]["version"] == third["version"]
    assert client.get(f"/tables/{table_id}/roads", query_string={"shoe": 1}).json["coups"] == 5


def test_a_card_lottery_table_has_no_roads_and_says_which_tables_do(client):
    opened = client.post("/tables", json={"game": "card-lottery", "players": ["olga", "ivan", "anna"],
                                          "banker": "olga", "dealer": "ivan"})
    answer = client.get(f"/tables/{opened.json['table_id']}/roads")
    assert answer.status_code == 404
    assert answer.json["message"] == (f"Table '{opened.json['table_id']}' is a Card lottery table, which has no "
                                      "roads; roads are kept for baccarat tables: Chemin de fer and Punto banco.")


def test_bad_queries_are_refused_saying_what_is_allowed(client):
    table_id = open_punto_banco(client)
    play(client, table_id, 1)
    url = f"/tables/{table_id}/roads"
    missing = client.get(url, query_string={"shoe": 2})
    assert missing.status_code == 404 and "its shoes: 1" in missing.json["message"]
    both = client.get(url, query_string={"version": 3, "at": "2026-01-01T00:00:00+00:00"})
    assert both.status_code == 422 and "at most one" in both.json["message"]
    assert client.get(url, query_string={"shoe": 0}).status_code == 422
    assert client.get(url, query_string={"at": "2026-01-01T00:00:00"}).status_code == 422
    assert client.get(url, query_string={"at": "1999-01-01T00:00:00+00:00"}).status_code == 404
    assert client.get("/tables/no-such-table-here/roads").status_code == 404


def test_a_players_token_reads_the_same_roads_as_the_house(make_client):
    client = make_client(ZAMETANO_TOKENS=f"operator:{OPERATOR}")
    house = {"Authorization": f"Bearer {OPERATOR}"}
    table_id = open_punto_banco(client, house)
    play(client, table_id, 3, house)
    token = client.post("/players/anna/tokens", json={}, headers=house).json["token"]
    mine = client.get(f"/tables/{table_id}/roads", headers={"Authorization": f"Bearer {token}"})
    assert mine.status_code == 200 and mine.json["coups"] == 3
    assert mine.json == client.get(f"/tables/{table_id}/roads", headers=house).json
