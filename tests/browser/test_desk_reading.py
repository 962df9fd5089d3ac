"""The desk a pit boss reads without training, in a real browser (Chromium driven by Playwright) against the real
server with played tables: it holds from a phone to a wall screen (at 360, 768 and 1920 px wide no page scrolls
sideways and nothing is cut at the edge or inside a part of the page; on a phone's width axe-core's WCAG 2.1 A
and AA rules find nothing serious or critical); the event log breaks an event's name between words only; times
are shown to the second with the whole timestamp on hover, and words instead of the service's field names; the
newest tables come first; punto banco's stakes are one form and stay on the felt until they are paid; the Card
lottery shows each stage's keys only in that stage."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import re

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


# A name as the service spells it (first_broken_version, read_model, place_stake) or a JSON object, in the text
# a page shows.
FIELD_NAME = re.compile(r"\b[a-z]+(?:_[a-z]+)+\b|\{\s*\"")


def test_no_desk_page_shows_a_field_name_or_a_json_object_and_every_time_is_to_the_second(page, desk, seat):
    for name in PAGES:
        show(page, desk, seat, name)
        text = page.locator("#view").inner_text()
        assert not FIELD_NAME.findall(text), (name, FIELD_NAME.findall(text)[:5])
        times = page.locator("#view time").evaluate_all("ts => ts.map(t => [t.textContent, t.title, t.dateTime])")
        assert times or name in ("verify", "seat", "seat table"), name  # pages without a moment to show
        for shown, title, stamp in times:
            assert re.fullmatch(r"(\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d( UTC)?", shown), (name, shown)
            assert stamp.startswith(stamp[:19]) and re.search(r"\d\d:\d\d:\d\d\.\d{6} UTC$", title), (name, title)


def test_the_tables_are_listed_the_newest_first(page, desk, seat):
    show(page, desk, seat, "tables")
    shown = page.locator('[data-testid="tables"] tbody tr').evaluate_all("rows => rows.map(r => r.dataset.tableId)")
    listed = desk.client.get("/tables")["tables"]
    assert shown == [t["table_id"] for t in sorted(listed, key=lambda t: t["opened_at"], reverse=True)]


def test_punto_bancos_stakes_are_one_form_of_player_spot_and_amount_whose_spots_are_the_players_own(page, desk):
    table_id = desk.client.open("punto-banco")["table_id"]
    desk.client.post(f"/tables/{table_id}/commands", {"command": "shuffle", "player": "marta"})
    desk.client.post(f"/tables/{table_id}/commands", {"command": "cut", "player": "anna", "position": 100})
    desk.client.post(f"/tables/{table_id}/commands", {"command": "place_stake", "player": "anna", "spot": "banker",
                                                      "amount": 100})
    open_desk(page, desk, f"/desk/tables/{table_id}")
    form = page.locator('[data-testid="croupier"] form[data-command="place_stake"]')
    expect(form).to_have_count(1)
    spots = form.locator('select[name="spot"] option')

    form.locator('select[name="player"]').select_option("anna")
    expect(spots).to_have_text(["banker", "tie"])  # anna backs the banker: never the player as well
    form.locator('select[name="player"]').select_option("boris")
    expect(spots).to_have_text(["player", "banker", "tie"])
    form.locator('select[name="spot"]').select_option("tie")
    form.locator('input[name="amount"]').fill("40")
    form.locator("button").click()

    expect(page.locator('[data-testid="state"] [data-testid="stakes"] li[data-player="boris"]')).to_have_text(
        "boris 40 on tie")
    assert desk.client.get(f"/tables/{table_id}")["stakes"] == {"anna": {"banker": 100}, "boris": {"tie": 40}}


def test_punto_bancos_stakes_stay_on_the_felt_from_the_coups_decision_until_they_are_paid(page, desk):
    table_id = desk.tables["punto-banco"]
    events = desk.client.get(f"/tables/{table_id}/events?limit=1000")["events"]
    decided = next(e["version"] for e in events if e["type"] == "CoupDecided")
    closed = [e for e in events if e["type"] == "StakesClosed" and e["version"] < decided][-1]["data"]["stakes"]
    open_desk(page, desk, f"/desk/tables/{table_id}?version={decided}")
    expect(page.locator('[data-testid="state"]')).to_have_attribute("data-version", str(decided))

    shown = page.locator('[data-testid="stakes"] li').evaluate_all("ls => ls.map(l => l.dataset.player)")
    assert shown == list(closed) and desk.client.get(f"/tables/{table_id}/state?version={decided}")["stakes"] == closed


def test_the_card_lottery_shows_the_keys_of_stage_two_only_in_stage_two(page, desk):
    table_id = desk.tables["card-lottery"]
    events = desk.client.get(f"/tables/{table_id}/events?limit=1000")["events"]
    began = next(e["version"] for e in events if e["type"] == "Stage2Began")
    keys = '[data-testid="state"] dd[data-key]'

    open_desk(page, desk, f"/desk/tables/{table_id}?version={began - 1}")
    expect(page.locator('[data-testid="state"]')).to_have_attribute("data-version", str(began - 1))
    in_stage_one = set(page.locator(keys).evaluate_all("ds => ds.map(d => d.dataset.key)"))
    page.get_by_test_id("forward").click()
    expect(page.locator('[data-testid="state"]')).to_have_attribute("data-version", str(began))
    in_stage_two = set(page.locator(keys).evaluate_all("ds => ds.map(d => d.dataset.key)"))

    stage_two = {"table", "leader", "to_beat", "turn", "penalty_piles"}
    assert "lottery_cards" in in_stage_one and not stage_two & in_stage_one, in_stage_one
    assert {"leader", "turn"} <= in_stage_two and "lottery_cards" not in in_stage_two, in_stage_two
