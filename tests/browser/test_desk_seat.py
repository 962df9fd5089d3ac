"""The desk's seat view in a real browser against the real server: a player signs in with his own token, sees his
table, posts his own commands from `expects` (with his token: the table takes them from no one else), keeps
the focus in his panel after each, and reads his rounds; an operator reads any player's rounds by name."""

from __future__ import annotations

from typing import Any

import pytest
import requests
from playwright.sync_api import expect

from tests.browser.desk_world import Client, desk_server, open_desk

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def server(tmp_path_factory):  # type: ignore[no-untyped-def]
    with desk_server(tmp_path_factory.mktemp("seat")) as running:
        yield running


@pytest.fixture
def house(server):  # type: ignore[no-untyped-def]
    client = Client(server)
    yield client
    client.close()


def token_of(house: Client, player: str, table_id: str) -> str:
    return house.post(f"/players/{player}/tokens", {"tables": [table_id]})["token"]


def self_acting_table(house: Client) -> str:
    """Punto banco, anna and boris staking for themselves; shuffled by the house, cut by anna."""
    table_id = house.post("/tables", {"game": "punto-banco", "players": ["marta", "anna", "boris"],
                                      "croupier": "marta", "players_act": "self"})["table_id"]
    house.post(f"/tables/{table_id}/commands", {"command": "shuffle", "player": "marta"})
    return table_id


def as_player(page: Any, base: str, token: str, path: str) -> Any:
    return open_desk(page, base, path, token)


def test_a_player_plays_his_own_seat_keeps_the_focus_and_reads_his_rounds(page, server, house):
    table_id = self_acting_table(house)
    anna = token_of(house, "anna", table_id)
    as_player(page, server, anna, f"/desk/seat/tables/{table_id}")
    expect(page.get_by_test_id("role")).to_contain_text("player anna")
    state = house.get(f"/tables/{table_id}")
    expect(page.get_by_test_id("state")).to_have_attribute("data-version", str(state["version"]))
    forms = page.locator('[data-testid="seat"] form[data-command]')
    expect(forms.first).to_be_visible()
    assert set(forms.evaluate_all("fs => fs.map(f => f.dataset.player)")) == {"anna"}  # only his own commands

    page.locator('[data-testid="seat"] form[data-command="cut"] button').click()
    expect(page.get_by_test_id("state")).not_to_have_attribute("data-version", str(state["version"]))
    assert page.evaluate("document.querySelector('[data-testid=seat]').contains(document.activeElement)")  # not the body
    stake = page.locator('[data-testid="seat"] form[data-command="place_stake"]').filter(
        has=page.locator('option[value="banker"]'))
    stake.locator('select[name="spot"]').select_option("banker")
    stake.locator('input[name="amount"]').fill("100")
    cut = page.get_by_test_id("state").get_attribute("data-version")
    stake.locator("button").click()
    expect(page.get_by_test_id("state")).not_to_have_attribute("data-version", cut)  # the page follows its command

    events = house.get(f"/tables/{table_id}/events?limit=1000")["events"]
    assert [(e["type"], e["data"].get("by")) for e in events if e["actor"] == "anna"][-1] == ("StakePlaced", "anna")
    for command in ("close_stakes", "deal"):
        house.post(f"/tables/{table_id}/commands", {"command": command, "player": "marta"})

    page.get_by_role("link", name="Your rounds").click()
    history = page.get_by_test_id("history")
    expect(history.locator(f'tr[data-table="{table_id}"][data-round="1"]')).to_be_visible()
    mine = requests.get(f"{server}/players/anna/rounds", headers={"Authorization": f"Bearer {anna}"}, timeout=10).json()
    row = history.locator(f'tr[data-table="{table_id}"][data-round="1"]')
    expect(row.locator("[data-balance]")).to_have_attribute("data-balance", str(mine["rounds"][0]["balance"]))
    assert mine["rounds"][0]["stakes"] == {"banker": 100}
    assert page.console_errors == [] or all(e.startswith("Failed to load resource") for e in page.console_errors)


def test_an_operator_reads_a_players_rounds_by_name(page, server, house):
    table_id = self_acting_table(house)
    anna = token_of(house, "anna", table_id)
    post = lambda command, player, token, **fields: requests.post(  # noqa: E731
        f"{server}/tables/{table_id}/commands", json={"command": command, "player": player, **fields},
        headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert post("cut", "anna", anna, position=200).status_code == 200
    assert post("place_stake", "anna", anna, spot="player", amount=40).status_code == 200
    assert post("place_stake", "anna", house.session.headers["Authorization"].split()[1], spot="player",
                amount=40).status_code == 403  # the house may not stake for her here
    for command in ("close_stakes", "deal"):
        house.post(f"/tables/{table_id}/commands", {"command": command, "player": "marta"})

    as_player(page, server, house.session.headers["Authorization"].split()[1], "/desk/seat")
    page.get_by_label("Player").fill("ANNA")
    page.get_by_role("button", name="Show his rounds").click()
    expect(page.get_by_test_id("history").locator(f'tr[data-table="{table_id}"]')).to_have_count(1)
    expect(page.get_by_test_id("history-status")).to_contain_text("round")


def test_a_seat_with_nothing_to_send_names_whose_turn_it_is_and_what_the_table_waits_for(page, server, house):
    """Chemin de fer, the players acting for themselves: once the seats are drawn the banker is to shuffle; the
    other player's seat says so instead of "expects no command", and shows him no form of his own."""
    table_id = house.post("/tables", {"game": "chemin-de-fer", "players": ["anna", "vera"],
                                      "players_act": "self"})["table_id"]
    tokens = {p: token_of(house, p, table_id) for p in ("anna", "vera")}
    requests.post(f"{server}/tables/{table_id}/commands", json={"command": "draw_seats", "player": "anna"},
                  headers={"Authorization": f"Bearer {tokens['anna']}"}, timeout=10).raise_for_status()
    banker = house.get(f"/tables/{table_id}")["waits_for"][0]["player"]
    other = "vera" if banker == "anna" else "anna"
    state = requests.get(f"{server}/tables/{table_id}", headers={"Authorization": f"Bearer {tokens[other]}"},
                         timeout=10).json()
    assert state["waits_for"] == [{"command": "shuffle", "player": banker}] and state["expects"] == []
    as_player(page, server, tokens[other], f"/desk/seat/tables/{table_id}")
    expect(page.get_by_test_id("waits-for")).to_have_text(f"The table waits for shuffle by {banker}. ")
    expect(page.locator('[data-testid="seat"] form[data-command]')).to_have_count(0)
    expect(page.locator('[data-testid="seat"] .none')).to_contain_text("None of the commands the table waits for")
