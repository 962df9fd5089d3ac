"""Baccarat's roads on the desk, in Chromium against the real server: a played punto banco shoe's five roads drawn
as GET /tables/{id}/roads gives them, following the version the page shows, with nothing axe-core finds serious;
a Card lottery table has no panel."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.desk_world import Client, desk_server, open_desk
from tests.browser.test_desk_a11y import assert_no_blocking_violations

pytestmark = pytest.mark.e2e
ROADS = ("bead_plate", "big_road", "big_eye_boy", "small_road", "cockroach_pig")
COUPS = 14


@pytest.fixture(scope="module")
def served(tmp_path_factory):  # type: ignore[no-untyped-def]
    """The server with a punto banco table played for COUPS coups and a Card lottery table just opened."""
    with desk_server(tmp_path_factory.mktemp("roads")) as server:
        client = Client(server)
        try:
            table_id = client.open("punto-banco")["table_id"]
            command = lambda name, player, **fields: client.post(  # noqa: E731
                f"/tables/{table_id}/commands", {"command": name, "player": player, **fields})
            command("shuffle", "marta")
            command("cut", "anna", position=150)
            decided = []
            for coup in range(COUPS):
                command("place_stake", "anna", spot="banker" if coup % 2 else "player", amount=100)
                command("close_stakes", "marta")
                dealt = command("deal", "marta")
                decided += [e["version"] for e in dealt["events"] if e["type"] == "CoupDecided"]
            lottery = client.open("card-lottery")["table_id"]
            yield server, client, table_id, decided, lottery
        finally:
            client.close()


def drawn(page: Any) -> dict[str, int]:
    """How many cells each road's picture holds, by road."""
    return page.eval_on_selector_all('[data-testid="roads"] svg[data-road]',
                                     "els => Object.fromEntries(els.map(e => [e.dataset.road, Number(e.dataset.cells)]))")


def test_the_roads_of_a_played_shoe_are_drawn_as_the_api_gives_them_and_follow_the_version_shown(page, served):
    server, client, table_id, decided, _ = served
    open_desk(page, server, f"/desk/tables/{table_id}")
    panel = page.locator('[data-testid="roads"]')
    head = client.get(f"/tables/{table_id}")["version"]
    expect(panel).to_have_attribute("data-version", str(head))
    roads = client.get(f"/tables/{table_id}/roads")
    assert roads["coups"] == COUPS
    assert drawn(page) == {name: len(roads[name]) for name in ROADS}
    # the shoe is the server's own (fresh seeds): how far the derived roads reach is its chance; each is drawn as
    # the API gives it (above), and the bead plate has a mark for every coup
    assert drawn(page)["bead_plate"] == COUPS and drawn(page)["big_road"] > 0
    expect(page.locator('[data-testid="roads-totals"]')).to_contain_text(f"Shoe 1, {COUPS} coups")
    beads = page.locator('svg[data-road="bead_plate"] circle')
    expect(beads).to_have_count(COUPS)
    assert page.locator('svg[data-road="bead_plate"]').get_attribute("aria-label").startswith("Bead plate: 14 marks")
    assert_no_blocking_violations(page)

    fifth = decided[4]
    open_desk(page, server, f"/desk/tables/{table_id}?version={fifth}")
    expect(panel).to_have_attribute("data-version", str(fifth))
    expect(panel).to_have_attribute("data-coups", "5")
    then = client.get(f"/tables/{table_id}/roads?version={fifth}")
    assert drawn(page) == {name: len(then[name]) for name in ROADS}
    failures = [e for e in page.console_errors if not e.startswith("Failed to load resource")]
    assert failures == []


def test_a_card_lottery_table_has_no_roads_panel(page, served):
    server, client, _, _, lottery = served
    open_desk(page, server, f"/desk/tables/{lottery}")
    head = client.get(f"/tables/{lottery}")["version"]
    expect(page.locator('[data-testid="state"]')).to_have_attribute("data-version", str(head))
    assert page.locator('[data-testid="roads"]').count() == 0
