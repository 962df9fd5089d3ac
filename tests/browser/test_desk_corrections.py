"""The desk's corrections in a real browser against the real server: one supervisor requests a coup's void from
the table's page, a second one approves it there (the first may not: the service's refusal is shown in its own
words), and the rounds list and the round's audit then show the coup as void with its reason."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.desk_world import OPERATOR, Client, open_desk
from tests.e2e.servers import running_server

pytestmark = pytest.mark.e2e

SARA, SIMON = "desk-supervisor-sara-token", "desk-supervisor-simon-token"


@pytest.fixture(scope="module")
def server(tmp_path_factory):  # type: ignore[no-untyped-def]
    folder = tmp_path_factory.mktemp("corrections")
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(folder / "desk.sqlite"),
           "ZAMETANO_DATA_DIR": str(folder / "data"),
           "ZAMETANO_TOKENS": f"operator:{OPERATOR},supervisor@sara:{SARA},supervisor@simon:{SIMON}"}
    with running_server(env, folder / "server.log") as running:
        yield running


def staked_coup(house: Client) -> str:
    """A punto banco table whose first coup has its stakes closed."""
    table_id = house.post("/tables", {"game": "punto-banco", "players": ["marta", "anna", "boris"],
                                      "croupier": "marta"})["table_id"]
    for body in ({"command": "shuffle", "player": "marta"}, {"command": "cut", "player": "anna", "position": 100},
                 {"command": "place_stake", "player": "anna", "spot": "player", "amount": 50},
                 {"command": "close_stakes", "player": "marta"}):
        house.post(f"/tables/{table_id}/commands", body)
    return table_id


def test_two_supervisors_void_a_coup_from_the_desk_and_the_rounds_show_it_void(page, server):
    house = Client(server)
    table_id = staked_coup(house)
    open_desk(page, server, f"/desk/tables/{table_id}", SARA)
    panel = page.get_by_test_id("corrections")
    expect(page.get_by_test_id("role")).to_contain_text("supervisor")
    expect(panel.locator("#supervisor-name")).to_have_value("sara")
    expect(panel.locator("#void-round")).to_have_value("1")
    panel.locator("#void-reason").select_option("misdeal")
    panel.locator("#void-note").fill("the player's cards were dealt to the banker")
    panel.get_by_role("button", name="request_correction").click()
    pending = page.get_by_test_id("pending-corrections")
    expect(pending).to_contain_text("Request 1: round 1 void (misdeal")
    pending.get_by_role("button", name="Approve").click()
    expect(page.get_by_test_id("correction-refusal")).to_contain_text("a second supervisor must approve it")

    second = page.context.new_page()
    open_desk(second, server, f"/desk/tables/{table_id}", SIMON)
    second.get_by_test_id("pending-corrections").get_by_role("button", name="Approve").click()
    expect(second.get_by_test_id("pending-corrections")).to_contain_text("none")
    assert house.get(f"/tables/{table_id}")["voided"][0]["reason"] == "misdeal"

    open_desk(second, server, f"/desk/tables/{table_id}/rounds", SIMON)
    expect(second.locator('[data-round="1"] [data-testid="void"]')).to_contain_text("void: misdeal")
    open_desk(second, server, f"/desk/tables/{table_id}/rounds/1", SIMON)
    expect(second.get_by_test_id("void")).to_contain_text("stakes returned")
    house.close()
