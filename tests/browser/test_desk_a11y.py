"""The desk for people who use it without a mouse or with a screen reader, in a real browser (Chromium driven by
Playwright) against the real server: axe-core's WCAG 2.1 A and AA rules find nothing serious or critical on any
page once it shows its content; keyboard focus stays on an element of the page when a button can no longer act
or a part of the page is drawn again; the croupier's panel is a skip link away.

axe-core is the script axe-playwright-python ships (axe.min.js, MPL-2.0), injected into the page as it is."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.browser.desk_world import AUDITOR, GAMES, Desk, open_desk, played_desk
from tests.helpers import pick

pytestmark = pytest.mark.e2e
WCAG_21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
BLOCKING = ("serious", "critical")
SKIP_TO_PANEL = "Skip to the croupier's panel"
WAIT = 30_000  # ms: a loaded machine may take long to verify a whole log in the browser
AXE = Axe()



@pytest.fixture(scope="module")
def desk(tmp_path_factory) -> Iterator[Desk]:  # type: ignore[no-untyped-def]
    with played_desk(tmp_path_factory.mktemp("desk-a11y")) as desk:
        yield desk



def blocking_violations(page: Any) -> list[dict[str, Any]]:
    """What axe-core's WCAG 2.1 A and AA rules find serious or critical on the page as it is now."""
    results = AXE.run(page, options={"runOnly": {"type": "tag", "values": WCAG_21_AA}, "resultTypes": ["violations"]})
    return [v for v in results.response["violations"] if v["impact"] in BLOCKING]


def described(violations: list[dict[str, Any]]) -> str:
    """Each violation with the elements it was found on and what axe says is wrong there."""
    lines = []
    for violation in violations:
        lines.append(f"{violation['id']} ({violation['impact']}): {violation['help']} <{violation['helpUrl']}>")
        for node in violation["nodes"]:
            target = " ".join(str(part) for part in node["target"])
            summary = " ".join((node.get("failureSummary") or "").split())
            lines.append(f"    {target}\n        {node['html'][:160]}\n        {summary}")
    return "\n".join(lines)


def assert_no_blocking_violations(page: Any) -> None:
    found = blocking_violations(page)
    assert not found, f"{sum(len(v['nodes']) for v in found)} element(s) fail WCAG 2.1 AA:\n{described(found)}"


def active(page: Any) -> dict[str, Any]:
    """The element that has keyboard focus, as the test reads it."""
    return page.evaluate("""() => {
        const e = document.activeElement;
        return {body: e === null || e === document.body, tag: e ? e.tagName.toLowerCase() : null,
                testid: e && e.dataset ? e.dataset.testid || null : null, text: e ? e.textContent.trim().slice(0, 60) : null,
                croupier: Boolean(e && e.closest && e.closest('[data-testid="croupier"]')),
                version: e && e.closest && e.closest('tr[data-version]') ? e.closest('tr[data-version]').dataset.version : null};
    }""")


def state_view(page: Any) -> Any:
    return page.locator('[data-testid="state"]')


# --- axe-core on every page, with its content ------------------------------------------------------------


def test_the_tables_page_has_no_serious_or_critical_wcag_violation(page, desk):
    open_desk(page, desk, "/desk")
    expect(page.locator('[data-testid="tables"] tbody tr')).to_have_count(len(desk.tables))
    assert_no_blocking_violations(page)


@pytest.mark.parametrize("game", GAMES)
def test_a_table_followed_live_with_the_croupiers_panel_has_no_serious_or_critical_wcag_violation(page, desk, game):
    table_id = desk.tables[game]
    head = desk.client.get(f"/tables/{table_id}")["version"]
    open_desk(page, desk, f"/desk/tables/{table_id}")
    expect(state_view(page)).to_have_attribute("data-version", str(head))
    expect(page.locator(f'[data-testid="log"] tr[data-version="{head}"]')).to_have_class("current")
    expect(page.locator('[data-testid="croupier"] form').first).to_be_visible()
    assert_no_blocking_violations(page)


@pytest.mark.parametrize("game", GAMES)
def test_a_table_at_a_version_has_no_serious_or_critical_wcag_violation(page, desk, game):
    """Half way: the log shows versions after the one shown (drawn fainter) as well as before."""
    table_id = desk.tables[game]
    version = desk.client.get(f"/tables/{table_id}")["version"] // 2
    open_desk(page, desk, f"/desk/tables/{table_id}?version={version}", token=AUDITOR)
    expect(state_view(page)).to_have_attribute("data-version", str(version))
    following = page.locator(f'[data-testid="log"] tr[data-version="{version + 1}"]')
    expect(following).to_have_class("future")
    following.scroll_into_view_if_needed()
    expect(following).to_be_in_viewport()  # in sight in the log's scroller, so that axe-core weighs its text
    assert_no_blocking_violations(page)


@pytest.mark.parametrize("game", GAMES)
def test_the_rounds_page_has_no_serious_or_critical_wcag_violation(page, desk, game):
    open_desk(page, desk, f"/desk/tables/{desk.tables[game]}/rounds")
    expect(page.locator('[data-testid="rounds"] tbody tr').first).to_be_visible()
    assert_no_blocking_violations(page)


@pytest.mark.parametrize("game", GAMES)
def test_a_round_audit_has_no_serious_or_critical_wcag_violation(page, desk, game):
    open_desk(page, desk, f"/desk/tables/{desk.tables[game]}/rounds/1")
    expect(page.locator(".badges .badge")).to_have_count(5)  # chain, cards, rules, money, read_model
    assert_no_blocking_violations(page)


@pytest.mark.parametrize("game", GAMES)
def test_verification_has_no_serious_or_critical_wcag_violation(page, desk, game):
    open_desk(page, desk, f"/desk/tables/{desk.tables[game]}/verify")
    expect(page.get_by_test_id("server-verdict")).to_have_attribute("data-verdict", "ok", timeout=WAIT)
    expect(page.get_by_test_id("verdict")).to_have_attribute("data-verdict", "ok", timeout=WAIT)
    assert_no_blocking_violations(page)


# --- keyboard focus is never dropped ----------------------------------------------------------------------


@pytest.mark.parametrize("button, start", [("back", "2"), ("first", "3"), ("forward", "head-1")])
def test_a_step_button_that_can_no_longer_step_keeps_the_keyboard_focus(page, desk, button, start):
    table_id = desk.tables["punto-banco"]
    head = desk.client.get(f"/tables/{table_id}")["version"]
    version = head - 1 if start == "head-1" else int(start)
    arrived = head if button == "forward" else 1
    open_desk(page, desk, f"/desk/tables/{table_id}?version={version}")
    expect(state_view(page)).to_have_attribute("data-version", str(version))
    step = page.get_by_test_id(button)

    step.focus()
    step.press("Enter")

    expect(state_view(page)).to_have_attribute("data-version", str(arrived))
    expect(step).to_have_attribute("aria-disabled", "true")  # a screen reader says it can no longer act
    assert active(page)["testid"] == button
    step.press("Enter")  # pressed again where it cannot step: nothing moves
    expect(state_view(page)).to_have_attribute("data-version", str(arrived))
    assert active(page)["testid"] == button


def test_a_version_chosen_in_the_event_log_by_keyboard_keeps_the_focus_on_its_link(page, desk):
    table_id = desk.tables["chemin-de-fer"]
    open_desk(page, desk, f"/desk/tables/{table_id}?version=10")
    expect(state_view(page)).to_have_attribute("data-version", "10")
    chosen = page.locator('[data-testid="log"] tr[data-version="7"] a')

    chosen.focus()
    chosen.press("Enter")

    expect(state_view(page)).to_have_attribute("data-version", "7")
    expect(page.locator('[data-testid="log"] tr[data-version="7"]')).to_have_class("current")
    focus = active(page)
    assert not focus["body"] and focus["tag"] == "a" and focus["version"] == "7", focus


def croupiers_panel(page: Any, desk: Desk) -> tuple[dict[str, Any], Any, Any]:
    """A Chemin de fer table opened now and shown at the desk: its state, the croupier's panel, and the
    panel's first command button, once it shows."""
    state = desk.client.open("chemin-de-fer")
    open_desk(page, desk, f"/desk/tables/{state['table_id']}")
    panel = page.get_by_test_id("croupier")
    button = panel.locator(f'form[data-version="{state["version"]}"] button[data-command]').first
    expect(button).to_be_visible()
    return state, panel, button


def test_a_command_sent_from_the_croupiers_panel_by_keyboard_keeps_the_focus_in_the_panel(page, desk):
    state, panel, button = croupiers_panel(page, desk)
    table_id, version = state["table_id"], state["version"]

    for _ in range(3):  # each command draws the panel again, with the forms of the next version
        button.focus()
        button.press("Enter")
        expect(panel.locator(f'form[data-version="{version}"]')).to_have_count(0)  # recorded, drawn anew
        version = desk.client.get(f"/tables/{table_id}")["version"]
        expect(panel.locator("form").first).to_have_attribute("data-version", str(version))
        focus = active(page)
        assert not focus["body"] and focus["croupier"], focus
        button = panel.locator(f'form[data-version="{version}"] button[data-command]').first


def test_a_command_another_client_posts_keeps_the_focus_in_the_croupiers_panel(page, desk):
    state, panel, first = croupiers_panel(page, desk)
    table_id = state["table_id"]
    first.focus()
    command, player, fields = pick(state, random.Random(1))

    result = desk.client.post(f"/tables/{table_id}/commands", {"command": command, "player": player, **fields})

    expect(panel.locator("form").first).to_have_attribute("data-version", str(result["version"]), timeout=15_000)
    focus = active(page)
    assert not focus["body"] and focus["croupier"], focus


def test_the_tables_list_drawn_again_live_keeps_the_focus_on_the_same_tables_link(page, desk):
    state = desk.client.open("punto-banco")
    table_id = state["table_id"]
    open_desk(page, desk, "/desk")
    row = page.locator(f'[data-testid="tables"] tr[data-table-id="{table_id}"]')
    row.locator("a").first.focus()
    command, player, fields = pick(state, random.Random(1))

    result = desk.client.post(f"/tables/{table_id}/commands", {"command": command, "player": player, **fields})

    expect(row.get_by_test_id("version")).to_have_text(str(result["version"]), timeout=15_000)
    assert page.evaluate("() => document.activeElement.closest('tr')?.dataset.tableId") == table_id


# --- skip links -------------------------------------------------------------------------------------------


def tab_stops(page: Any, count: int) -> list[dict[str, Any]]:
    """What the first ``count`` presses of Tab from the top of the page land on."""
    stops = []
    for _ in range(count):
        page.keyboard.press("Tab")
        stops.append(page.evaluate("() => ({text: document.activeElement.textContent.trim()})"))
    return stops


def test_the_croupiers_panel_is_a_skip_link_among_the_first_tab_stops_away(page, desk):
    table_id = desk.tables["punto-banco"]
    open_desk(page, desk, f"/desk/tables/{table_id}")
    expect(page.get_by_test_id("croupier").locator("form").first).to_be_visible()

    stops = [stop["text"] for stop in tab_stops(page, 3)]  # the page as loaded: nothing has the focus yet
    assert SKIP_TO_PANEL in stops, stops
    for _ in range(len(stops) - 1 - stops.index(SKIP_TO_PANEL)):
        page.keyboard.press("Shift+Tab")
    page.keyboard.press("Enter")

    panel = page.get_by_test_id("croupier")
    expect(panel).to_be_focused()
    expect(panel).to_be_in_viewport()
    page.keyboard.press("Tab")  # the next stop is the panel's first control
    assert active(page)["croupier"]


def test_the_first_tab_stop_skips_to_the_content_and_a_reader_without_a_panel_has_no_panels_skip_link(page, desk):
    table_id = desk.tables["punto-banco"]
    open_desk(page, desk, f"/desk/tables/{table_id}", token=AUDITOR)
    expect(state_view(page)).to_have_attribute("data-version", str(desk.client.get(f"/tables/{table_id}")["version"]))

    (first,) = tab_stops(page, 1)
    assert first["text"] == "Skip to the content"
    page.keyboard.press("Enter")
    expect(page.locator("#view")).to_be_focused()
    assert page.locator("a.skip", has_text="croupier").count() == 0


# --- the seat view: a player at his own table ------------------------------------------------------------


def seated(desk: Desk) -> tuple[str, str]:
    """A self-acting Chemin de fer table in its first coup, anna holding cards face down, and anna's token."""
    client = desk.client
    table_id = client.post("/tables", {"game": "chemin-de-fer", "players": ["anna", "boris", "vera"],
                                       "players_act": "self"})["table_id"]
    token = client.post("/players/anna/tokens", {"tables": [table_id]})["token"]
    return table_id, token


def test_a_players_seat_has_no_serious_or_critical_wcag_violation_and_shows_only_his_commands(page, desk):
    table_id, token = seated(desk)
    open_desk(page, desk, f"/desk/seat/tables/{table_id}", token=token)
    expect(page.get_by_test_id("seat").locator("form").first).to_be_visible()
    assert set(page.locator('[data-testid="seat"] form[data-command]').evaluate_all(
        "fs => fs.map(f => f.dataset.player)")) == {"anna"}
    assert_no_blocking_violations(page)


def test_a_players_rounds_page_has_no_serious_or_critical_wcag_violation(page, desk):
    _, token = seated(desk)
    open_desk(page, desk, "/desk/seat", token=token)
    expect(page.get_by_test_id("history-status")).not_to_be_empty()
    assert_no_blocking_violations(page)


def test_a_players_commands_are_a_skip_link_among_the_first_tab_stops_away(page, desk):
    table_id, token = seated(desk)
    open_desk(page, desk, f"/desk/seat/tables/{table_id}", token=token)
    expect(page.get_by_test_id("seat").locator("form").first).to_be_visible()

    stops = [stop["text"] for stop in tab_stops(page, 3)]
    assert "Skip to your commands" in stops, stops
    for _ in range(len(stops) - 1 - stops.index("Skip to your commands")):
        page.keyboard.press("Shift+Tab")
    page.keyboard.press("Enter")
    expect(page.get_by_test_id("seat")).to_be_focused()
    page.keyboard.press("Tab")
    assert page.evaluate("document.querySelector('[data-testid=seat]').contains(document.activeElement)")
