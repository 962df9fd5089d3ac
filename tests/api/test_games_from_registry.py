"""The API reads every game from the registry: the JSON it returns is the service's own state, key for key,
and the OpenAPI document lists each game's roles, options, commands and fields."""

from __future__ import annotations

import json
import random

import pytest

from domain.games import GAMES
from tests.helpers import pick


def opening(name):
    game = GAMES[name]
    players = [f"p{i}" for i in range(max(game.players[0], len(game.roles) + 2, 3))]
    return {"game": name, "players": players, **dict(zip(game.roles, players))}


def as_json(value):
    return json.loads(json.dumps(value))


@pytest.mark.parametrize("name", sorted(GAMES))
def test_the_state_the_api_returns_is_the_services_own_dict_for_every_game(app, client, name):
    service = app.extensions["zametano"]
    rng = random.Random(5)
    state = client.post("/tables", json=opening(name)).json
    table_id = state["table_id"]
    for step in range(120):
        command, player, fields = pick(state, rng)
        response = client.post(f"/tables/{table_id}/commands", json={"command": command, "player": player, **fields})
        assert response.status_code == 200, response.json
        state = response.json["state"]
        assert state == as_json(service.current_state(table_id))
        if step % 30 == 0:
            version = state["version"] - 1
            historic = client.get(f"/tables/{table_id}/state", query_string={"version": version}).json
            assert historic == as_json(service.historic_state(table_id, version=version))
    assert client.get(f"/tables/{table_id}").json == as_json(service.current_state(table_id))


def test_the_openapi_document_lists_every_game_with_its_roles_options_commands_and_fields(client):
    spec = client.get("/openapi.json").json
    assert set(spec["x-games"]) == set(GAMES)
    opening_fields = spec["components"]["schemas"]["OpenTableArgs"]["properties"]
    assert opening_fields["game"]["enum"] == list(GAMES)
    command_fields = spec["components"]["schemas"]["CommandArgs"]["properties"]
    for name, game in GAMES.items():
        listed = spec["x-games"][name]
        assert listed["roles"] == dict(game.roles) and listed["accounts"] == list(game.accounts)
        assert listed["roads"] == (game.roads is not None)
        assert list(listed["options"]) == [o.name for o in game.options]
        assert list(listed["commands"]) == list(game.commands)
        for role in game.roles:
            assert game.title in opening_fields[role]["description"]
        for command in game.commands.values():
            shown = listed["commands"][command.name]
            assert shown["seeded"] == command.seeded and shown["description"] == command.doc
            for field, spec_ in command.fields.items():
                assert shown["fields"][field]["optional"] == spec_.optional
                assert f"{game.title}, {command.name}" in command_fields[field]["description"]
    assert spec["components"]["schemas"]["TableState"]["additionalProperties"] is True
