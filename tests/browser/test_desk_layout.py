"""The desk holds from a phone to a wall screen, in a real browser (Chromium driven by Playwright) against the real
server with played tables: at 360, 768 and 1920 px wide no page scrolls sideways and nothing is cut at the edge
or inside a part of the page; the event log breaks an event's name between words only; on a phone's width
axe-core's WCAG 2.1 A and AA rules find nothing serious or critical."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.desk_world import Desk, open_desk, played_desk
from tests.browser.test_desk_a11y import assert_no_blocking_violations

pytestmark = pytest.mark.e2e
WIDTHS = (360, 768, 1920)
WAIT = 30_000  # ms: a loaded machine may take long to verify a whole log in the browser

# What the page shows once it is drawn whole, by page.
PAGES = ("tables", "table chemin-de-fer", "table card-lottery", "table punto-banco", "rounds", "round", "verify",
         "seat", "seat table")

# Every element the page shows that lies past the viewport's left or right edge, and every part of the page whose
# content is wider than the part (cut, or scrolled sideways inside it). What is hidden on purpose (skip links until
# focused, text for screen readers alone, a heading row kept for them) is left out.
CUT = """() => {
    const width = document.documentElement.clientWidth;
    const hiding = [...document.querySelectorAll('body *')].filter((e) => {
        const style = getComputedStyle(e);
        return style.clip !== 'auto' || e.matches('.skip, .sr');
    });
    const hidden = (e) => hiding.some((h) => h.contains(e));
    const name = (e) => `${e.tagName.toLowerCase()}${e.className && typeof e.className === 'string' ? '.' + e.className.trim().replace(/\\s+/g, '.') : ''}`
        + ` "${(e.textContent || '').trim().slice(0, 40)}"`;
    const found = [];
    for (const e of document.querySelectorAll('body *')) {
        const r = e.getBoundingClientRect();
        if (r.width === 0 || r.height === 0 || hidden(e)) continue;
        if (r.right > width + 1 || r.left < -1) found.push(`${name(e)}: from ${Math.round(r.left)} to ${Math.round(r.right)} px`);
        const style = getComputedStyle(e);
        if (style.overflowX !== 'visible' && e.scrollWidth > e.clientWidth + 1 && e.tagName !== 'INPUT')
            found.push(`${name(e)}: ${e.scrollWidth} px of content in ${e.clientWidth} px`);
    }
    return {scroll: document.documentElement.scrollWidth, width, found: found.slice(0, 20)};
}"""

# Every word of every event's name in the log that the line breaks in two (a word on two lines has two boxes).
BROKEN_WORDS = """() => {
    const broken = [];
    for (const cell of document.querySelectorAll('[data-testid="log"] td.type')) {
        const text = cell.firstChild;
        if (!text || text.nodeType !== Node.TEXT_NODE) continue;
        for (const m of text.data.matchAll(/\\S+/g)) {
            const range = document.createRange();
            range.setStart(text, m.index);
            range.setEnd(text, m.index + m[0].length);
            const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
            if (lines.size > 1) broken.push(m[0]);
        }
    }
    return broken;
}"""


@pytest.fixture(scope="module")
def desk(tmp_path_factory) -> Iterator[Desk]:  # type: ignore[no-untyped-def]
    with played_desk(tmp_path_factory.mktemp("desk-layout")) as desk:
        yield desk


@pytest.fixture(scope="module")
def seat(desk: Desk) -> tuple[str, str]:
    """A self-acting punto banco table, anna to stake, and anna's token."""
    client = desk.client
    table_id = client.post("/tables", {"game": "punto-banco", "players": ["marta", "anna", "boris"],
                                       "croupier": "marta", "players_act": "self"})["table_id"]
    client.post(f"/tables/{table_id}/commands", {"command": "shuffle", "player": "marta"})
    return table_id, client.post("/players/anna/tokens", {"tables": [table_id]})["token"]


def show(page: Any, desk: Desk, seat: tuple[str, str], name: str) -> None:
    """Opens the page ``name`` and waits until it is drawn whole."""
    kind, _, game = name.partition(" ")
    tables = desk.tables
    if kind == "tables":
        open_desk(page, desk, "/desk")
        expect(page.locator('[data-testid="tables"] tbody tr')).to_have_count(len(tables) + 1)
    elif kind == "table":
        table_id = tables[game]
        head = desk.client.get(f"/tables/{table_id}")["version"]
        open_desk(page, desk, f"/desk/tables/{table_id}")
        expect(page.locator('[data-testid="state"]')).to_have_attribute("data-version", str(head))
        expect(page.locator(f'[data-testid="log"] tr[data-version="{head}"]')).to_have_class("current")
        expect(page.locator('[data-testid="croupier"] form').first).to_be_visible()
    elif kind == "rounds":
        open_desk(page, desk, f"/desk/tables/{tables['punto-banco']}/rounds")
        expect(page.locator('[data-testid="rounds"] tbody tr').first).to_be_visible()
    elif kind == "round":
        open_desk(page, desk, f"/desk/tables/{tables['card-lottery']}/rounds/1")
        expect(page.locator(".badges .badge")).to_have_count(5)
    elif kind == "verify":
        open_desk(page, desk, f"/desk/tables/{tables['chemin-de-fer']}/verify")
        expect(page.get_by_test_id("verdict")).to_have_attribute("data-verdict", "ok", timeout=WAIT)
        expect(page.get_by_test_id("server-verdict")).to_have_attribute("data-verdict", "ok", timeout=WAIT)
    elif name == "seat":
        open_desk(page, desk, "/desk/seat", token=seat[1])
        expect(page.get_by_test_id("history-status")).not_to_be_empty()
    else:
        open_desk(page, desk, f"/desk/seat/tables/{seat[0]}", token=seat[1])
        expect(page.get_by_test_id("seat").locator("form").first).to_be_visible()


@pytest.mark.parametrize("width", WIDTHS)
def test_no_desk_page_scrolls_sideways_or_cuts_anything(browser, desk, seat, width):
    context = browser.new_context(viewport={"width": width, "height": 900})
    try:
        cut = {}
        for name in PAGES:
            page = context.new_page()
            show(page, desk, seat, name)
            measured = page.evaluate(CUT)
            if measured["scroll"] > measured["width"] or measured["found"]:
                cut[name] = measured
            if width == WIDTHS[0]:
                assert_no_blocking_violations(page)
            page.close()
        assert not cut, cut
    finally:
        context.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_event_log_breaks_an_events_name_between_words_only(browser, desk, width):
    context = browser.new_context(viewport={"width": width, "height": 900})
    try:
        page = context.new_page()
        table_id = desk.tables["card-lottery"]  # "LotteryCardsRevealed", "PenaltyCardsCollected", ...
        open_desk(page, desk, f"/desk/tables/{table_id}?version=40")
        expect(page.locator('[data-testid="log"] tr.current')).to_be_visible()
        assert page.locator('[data-testid="log"] td.type').count() > 20
        assert page.evaluate(BROKEN_WORDS) == []
    finally:
        context.close()
