"""The desk in a real browser (Chromium driven by Playwright) against the real server (gunicorn on SQLite), with a
table of every game played over HTTP: what the page shows is what the API gives, every view has its own link,
the croupier's panel plays a table, a second client's command shows up live, and an auditor reads without a
panel. The page's test hooks are those docs/desk.md lists."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from playwright.sync_api import expect

from tests.browser.desk_world import AUDITOR, GAMES, OPERATOR, TOKEN_KEY, Desk, open_desk, played_desk, rounds_finished

pytestmark = pytest.mark.e2e
LIVE = 15_000  # ms: the page learns of a command by its stream, or by polling every 2 s where there is none


@pytest.fixture(scope="module")
def desk(tmp_path_factory):  # type: ignore[no-untyped-def]
    with played_desk(tmp_path_factory.mktemp("desk")) as desk:
        yield desk


@pytest.fixture
def browser_page(page):  # type: ignore[no-untyped-def]
    """The page; after the test, no script of the desk may have failed (a refused request the page shows in
    words is not a failure)."""
    yield page
    failures = [e for e in page.console_errors if not e.startswith("Failed to load resource")]
    assert failures == []



def state_view(page: Any) -> Any:
    return page.locator('[data-testid="state"]')


def shown_money(page: Any) -> tuple[dict[str, int], dict[str, int]]:
    """The balances and the accounts the state view shows, by name."""
    read = "els => Object.fromEntries(els.map(e => [e.dataset.{0}, Number(e.dataset.amount)]))"
    balances = page.eval_on_selector_all('[data-testid="state"] [data-testid="balance"]', read.format("player"))
    accounts = page.eval_on_selector_all('[data-testid="state"] [data-testid="account"]', read.format("account"))
    return balances, accounts


def assert_shows(page: Any, desk: Desk, table_id: str, version: int) -> None:
    """The state view shows version ``version`` as GET /state?version=N gives it: phase, balances, accounts,
    every hand's cards."""
    expect(state_view(page)).to_have_attribute("data-version", str(version))
    state = desk.client.get(f"/tables/{table_id}/state?version={version}")
    balances, accounts = shown_money(page)
    assert balances == state["balances"]
    assert accounts and all(state[name] == amount for name, amount in accounts.items())
    phase = page.locator('[data-testid="state"] .phase strong')
    assert phase.get_attribute("data-phase") == state["phase"]
    assert phase.inner_text() == state["phase"].replace("_", " ")  # in words
    for hand, cards in state.get("hands", {}).items():
        drawn = page.eval_on_selector_all(f'[data-testid="state"] [data-hand="{hand}"] [data-card]',
                                          "els => els.map(e => e.dataset.card)")
        assert drawn == cards, hand


def fresh_table(desk: Desk, game: str = "chemin-de-fer") -> dict[str, Any]:
    return desk.client.open(game)


# --- a table at a version ------------------------------------------------------------------------------


@pytest.mark.parametrize("game", GAMES)
def test_a_link_with_a_version_opens_the_table_at_that_version_showing_the_state_the_api_gives(
        browser_page, desk, game):
    table_id = desk.tables[game]
    version = desk.client.get(f"/tables/{table_id}")["version"] // 2

    open_desk(browser_page, desk, f"/desk/tables/{table_id}?version={version}")

    assert_shows(browser_page, desk, table_id, version)
    expect(browser_page.locator('input[type="range"][data-testid="timeline"]')).to_have_value(str(version))
    expect(browser_page.locator(f'[data-testid="log"] tr[data-version="{version}"]')).to_have_class("current")


def test_the_slider_moves_by_keyboard_and_the_buttons_step_and_each_version_shown_is_the_apis(browser_page, desk):
    table_id = desk.tables["punto-banco"]
    head = desk.client.get(f"/tables/{table_id}")["version"]
    page = open_desk(browser_page, desk, f"/desk/tables/{table_id}?version=20")
    expect(state_view(page)).to_have_attribute("data-version", "20")
    slider = page.locator('input[type="range"][data-testid="timeline"]')

    slider.focus()
    for _ in range(3):
        slider.press("ArrowLeft")
    assert_shows(page, desk, table_id, 17)
    slider.press("End")
    assert_shows(page, desk, table_id, head)
    slider.press("Home")
    assert_shows(page, desk, table_id, 1)
    page.get_by_test_id("forward").click()
    assert_shows(page, desk, table_id, 2)
    page.get_by_test_id("back").click()
    assert_shows(page, desk, table_id, 1)
    assert page.url.endswith(f"/desk/tables/{table_id}?version=1")  # the address names the version shown


def test_play_steps_through_the_versions_by_itself(browser_page, desk):
    table_id = desk.tables["chemin-de-fer"]
    page = open_desk(browser_page, desk, f"/desk/tables/{table_id}?version=1")
    expect(state_view(page)).to_have_attribute("data-version", "1")

    page.get_by_test_id("play").click()

    expect(state_view(page)).to_have_attribute("data-version", "4", timeout=10_000)
    page.get_by_test_id("play").click()  # pause
    assert_shows(page, desk, table_id, int(state_view(page).get_attribute("data-version")))


def test_a_link_with_a_moment_opens_the_version_of_that_moment(browser_page, desk):
    table_id = desk.tables["card-lottery"]
    event = desk.client.get(f"/tables/{table_id}/events?after=9&limit=1")["events"][0]

    open_desk(browser_page, desk, f"/desk/tables/{table_id}?at={quote(event['timestamp'])}")

    assert_shows(browser_page, desk, table_id, event["version"])


def test_a_version_the_table_does_not_have_is_said_in_the_services_words(browser_page, desk):
    table_id = desk.tables["chemin-de-fer"]
    head = desk.client.get(f"/tables/{table_id}")["version"]

    page = open_desk(browser_page, desk, f"/desk/tables/{table_id}?version=99999")

    expect(page.locator(".timeline .status")).to_contain_text(f"has versions 1 to {head}; there is no version 99999")
    expect(state_view(page)).to_have_attribute("data-version", str(head))


@pytest.mark.parametrize("view, api", [
    ("/desk/tables/{t}/rounds/999", "/tables/{t}/rounds/999"),
    ("/desk/tables/00000000-0000-4000-8000-000000000000", "/tables/00000000-0000-4000-8000-000000000000"),
])
def test_a_view_of_what_is_not_there_says_so_in_the_services_words(browser_page, desk, view, api):
    table_id = desk.tables["chemin-de-fer"]
    answer = desk.client.session.get(desk.base + api.format(t=table_id), timeout=30)
    assert answer.status_code == 404

    page = open_desk(browser_page, desk, view.format(t=table_id))

    expect(page.locator(".notice.error")).to_have_text(answer.json()["message"])


# --- rounds and verification -----------------------------------------------------------------------------


def test_a_round_audit_shows_its_checks_as_badges_its_cards_and_payments(browser_page, desk):
    table_id = desk.tables["card-lottery"]
    audit = desk.client.get(f"/tables/{table_id}/rounds/1")

    page = open_desk(browser_page, desk, f"/desk/tables/{table_id}/rounds/1")

    for check in ("chain", "cards", "rules", "money"):  # the game was played to its end: its decks are revealed
        expect(page.locator(f'[data-check="{check}"]')).to_have_attribute("data-ok", "true")
    cards = page.eval_on_selector_all('section[aria-label="Cards"] [data-card]', "els => els.map(e => e.dataset.card)")
    assert cards == [c["card"] for c in audit["cards"]]
    expect(page.locator('section[aria-label="Payments"] tbody tr')).to_have_count(len(audit["payments"]))


def test_a_round_whose_shoe_is_unrevealed_shows_its_card_check_pending(browser_page, desk):
    table_id = desk.tables["chemin-de-fer"]
    assert desk.client.get(f"/tables/{table_id}/rounds/1")["checks"]["cards"] is None

    page = open_desk(browser_page, desk, f"/desk/tables/{table_id}/rounds/1")

    expect(page.locator('[data-check="cards"]')).to_have_attribute("data-ok", "pending")
    expect(page.locator('[data-check="chain"]')).to_have_attribute("data-ok", "true")


def test_the_rounds_list_links_each_rounds_audit(browser_page, desk):
    table_id = desk.tables["punto-banco"]
    rounds = desk.client.get(f"/tables/{table_id}/rounds")["rounds"]
    page = open_desk(browser_page, desk, f"/desk/tables/{table_id}/rounds")

    expect(page.locator('[data-testid="rounds"] tbody tr')).to_have_count(len(rounds))
    page.get_by_role("link", name="Round 2", exact=True).click()

    expect(page.locator("[data-check]")).to_have_count(5)  # chain, cards, rules, money, read_model
    assert page.url.endswith(f"/desk/tables/{table_id}/rounds/2")


@pytest.mark.parametrize("game", GAMES)
def test_verification_shows_the_services_verdict_and_the_browsers_own(browser_page, desk, game):
    page = open_desk(browser_page, desk, f"/desk/tables/{desk.tables[game]}/verify")

    expect(page.get_by_test_id("server-verdict")).to_have_attribute("data-verdict", "ok")
    expect(page.get_by_test_id("verdict")).to_have_attribute("data-verdict", "ok")


def test_a_log_the_browser_finds_broken_is_shown_failed_at_its_first_failing_version_and_linked(browser_page, desk):
    table_id = desk.tables["chemin-de-fer"]
    events = desk.client.get(f"/tables/{table_id}/events?limit=1000")["events"]
    doctored = [e for e in events if e["version"] != 5]  # a version gone from the log the browser is given

    def without_version_5(route: Any) -> None:
        route.fulfill(status=200, content_type="application/json",
                      body=json.dumps({"events": doctored, "next_after": None}))

    browser_page.route(f"**/tables/{table_id}/events?after=0&limit=1000", without_version_5)
    page = open_desk(browser_page, desk, f"/desk/tables/{table_id}/verify")

    verdict = page.get_by_test_id("verdict")
    expect(verdict).to_have_attribute("data-verdict", "failed")
    expected = page.evaluate(
        """async (material) => (await (await import("/desk/static/verify.js")).verifyTable(material)).failedVersion""",
        {"events": doctored, "keys": desk.client.get("/keys"), "head": desk.client.get(f"/tables/{table_id}/head")})
    expect(verdict).to_have_attribute("data-failed-version", str(expected))
    page.get_by_test_id("failed-version").click()
    expect(state_view(page)).to_have_attribute("data-version", str(expected))  # the link opens that version


# --- free decisions weighed --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def free_table(desk):  # type: ignore[no-untyped-def]
    """A Chemin de fer table under the `free` rule (both sides choose on 0-7), played until one of its rounds
    has a costly free decision and its players' costs differ, so that a ranking has an order to show."""
    state = desk.client.post("/tables", {"game": "chemin-de-fer", "players": ["anna", "boris", "vera"],
                                         "rules": {"decks": 2, "draw_rule": "free"}})
    table_id = state["table_id"]
    for rounds in range(2, 30):
        state = desk.client.play(table_id, state, rounds_finished(rounds), seed=rounds)
        players = desk.client.get(f"/tables/{table_id}/decisions?limit=1")["players"]
        if len({p["cost_amount"] for p in players.values()}) == len(players) and any(
                d["cost"] > 0 for d in desk.client.get(f"/tables/{table_id}/rounds/{rounds}")["free_decisions"]):
            return table_id, rounds
    raise AssertionError("no costly free decision in 30 rounds")


def test_a_chemin_de_fer_round_shows_its_free_decisions_with_the_cost_the_api_gives(browser_page, desk, free_table):
    table_id, number = free_table
    weighed = desk.client.get(f"/tables/{table_id}/rounds/{number}")["free_decisions"]

    page = open_desk(browser_page, desk, f"/desk/tables/{table_id}/rounds/{number}")

    rows = page.locator('[data-testid="free-decisions"] tbody tr')
    expect(rows).to_have_count(len(weighed))
    expect(page.locator('[data-testid="free-decisions"] caption')).to_contain_text("weighed against the exact solution")
    for row, d in zip(rows.all(), weighed):
        assert row.get_attribute("data-version") == str(d["version"])
        assert row.locator("th").inner_text() == d["player"]
        assert row.get_by_test_id("chosen").inner_text() == d["chosen"]
        assert row.get_by_test_id("best").inner_text() == d["best"]
        assert float(row.get_attribute("data-cost")) == d["cost"]
        assert float(row.get_attribute("data-cost-amount")) == d["cost_amount"]
        assert row.get_by_test_id("cost").inner_text() == f"{d['cost']:.6f}"
        assert row.get_by_test_id("cost-amount").inner_text() == f"{d['cost_amount']:,.4f}"
    assert any(d["cost"] > 0 for d in weighed)


def test_the_table_ranks_its_players_by_the_cost_of_their_decisions_read_only_when_opened(
        browser_page, desk, free_table):
    table_id, _ = free_table
    asked: list[str] = []
    browser_page.on("request", lambda r: asked.append(r.url) if f"/tables/{table_id}/decisions" in r.url else None)
    players = desk.client.get(f"/tables/{table_id}/decisions")["players"]
    page = open_desk(browser_page, desk, f"/desk/tables/{table_id}", token=AUDITOR)
    expect(state_view(page)).to_have_attribute("data-version", str(desk.client.get(f"/tables/{table_id}")["version"]))
    assert asked == []  # nothing read while the section is closed

    page.get_by_role("button", name="Players ranked by cost").click()

    rows = page.locator('[data-testid="cost-ranking"] tbody tr')
    expect(rows).to_have_count(len(players))
    shown = [(r.get_attribute("data-player"), r.get_by_test_id("cost-amount").inner_text()) for r in rows.all()]
    ranked = sorted(players, key=lambda name: (-players[name]["cost_amount"], name))
    assert shown == [(name, f"{players[name]['cost_amount']:,.4f}") for name in ranked]
    assert len({p["cost_amount"] for p in players.values()}) == len(players)  # the order is the costs', not names'
    expect(page.get_by_test_id("show-cost-ranking")).to_have_attribute("aria-expanded", "true")
    assert len(asked) == 1


@pytest.mark.parametrize("game", ["punto-banco", "card-lottery"])
def test_a_round_of_a_game_without_free_decisions_says_it_has_none(browser_page, desk, game):
    table_id = desk.tables[game]
    assert desk.client.get(f"/tables/{table_id}/rounds/1")["free_decisions"] == []

    page = open_desk(browser_page, desk, f"/desk/tables/{table_id}/rounds/1")

    expect(page.get_by_test_id("free-decisions")).to_contain_text(
        "No free decision: only Chemin de fer has free decisions")
    expect(page.locator('[data-testid="free-decisions"] table')).to_have_count(0)


# --- exports -----------------------------------------------------------------------------------------------


def test_the_log_and_the_signed_head_download_for_an_auditor_to_keep(browser_page, desk):
    table_id = desk.tables["punto-banco"]
    page = open_desk(browser_page, desk, f"/desk/tables/{table_id}", token=AUDITOR)
    expect(state_view(page)).to_have_attribute("data-version", str(desk.client.get(f"/tables/{table_id}")["version"]))

    with page.expect_download() as log:
        page.get_by_test_id("export-log").click()
    with page.expect_download() as head:
        page.get_by_test_id("export-head").click()

    lines = [json.loads(line) for line in Path(log.value.path()).read_text().splitlines()]
    signed = json.loads(Path(head.value.path()).read_text())
    assert signed == desk.client.get(f"/tables/{table_id}/head")
    assert [e["version"] for e in lines] == list(range(1, signed["version"] + 1))
    assert lines[-1]["digest"] == signed["receipt"]["digest"]
    assert log.value.suggested_filename == f"{table_id}.ndjson"


# --- the croupier's panel and the table live ---------------------------------------------------------


# Which of the panel's buttons to press, so that a round ends: Chemin de fer's first entry stakes (its last
# passes, and a coup where all pass goes on), punto banco's last closes the stakes and deals.
PRESS = {"chemin-de-fer": "first", "card-lottery": "last", "punto-banco": "last"}


@pytest.mark.parametrize("game", GAMES)
def test_the_operator_plays_a_round_from_the_croupiers_panel_with_if_match_and_idempotency_keys(
        browser_page, desk, game):
    table_id = fresh_table(desk, game)["table_id"]
    posted: list[dict[str, str]] = []
    browser_page.on("request", lambda r: posted.append(r.headers) if r.method == "POST" else None)
    page = open_desk(browser_page, desk, f"/desk/tables/{table_id}")
    version = desk.client.get(f"/tables/{table_id}")["version"]
    expect(state_view(page)).to_have_attribute("data-version", str(version))

    while not desk.client.get(f"/tables/{table_id}/rounds")["rounds"]:
        assert len(posted) < 40, "no round was finished from the panel"
        buttons = page.locator(f'[data-testid="croupier"] form[data-version="{version}"] button[data-command]')
        getattr(buttons, PRESS[game]).click()
        expect(state_view(page)).not_to_have_attribute("data-version", str(version))  # the page follows its command
        version = int(state_view(page).get_attribute("data-version"))
        assert version == desk.client.get(f"/tables/{table_id}")["version"]

    expect(page.locator(f'[data-testid="log"] tr[data-version="{version}"]')).to_be_visible()
    assert_shows(page, desk, table_id, version)
    assert posted and all(h.get("if-match", "").strip('"').isdigit() and h.get("idempotency-key") for h in posted)
    assert len({h["idempotency-key"] for h in posted}) == len(posted)


def test_a_refused_command_is_shown_in_the_services_words_and_changes_nothing(browser_page, desk):
    state = fresh_table(desk)
    table_id = state["table_id"]
    state = desk.client.play(table_id, state, lambda s: s["phase"] == "stakes", seed=3)
    bank = state["bank"]
    page = open_desk(browser_page, desk, f"/desk/tables/{table_id}")
    form = page.locator('[data-testid="croupier"] form[data-command="place_stake"]').first

    form.locator('input[name="amount"]').fill(str(bank + 1))
    form.locator("button").click()

    expect(page.get_by_test_id("refusal")).to_contain_text(f"the largest stake allowed is {bank}")
    assert desk.client.get(f"/tables/{table_id}")["version"] == state["version"]
    expect(state_view(page)).to_have_attribute("data-version", str(state["version"]))


def test_a_command_another_client_posts_shows_up_live(browser_page, desk):
    table_id = fresh_table(desk)["table_id"]
    page = open_desk(browser_page, desk, f"/desk/tables/{table_id}")
    expect(state_view(page)).to_have_attribute("data-version", "1")

    result = desk.client.post(f"/tables/{table_id}/commands", {"command": "draw_seats", "player": "anna"})

    expect(state_view(page)).to_have_attribute("data-version", str(result["version"]), timeout=LIVE)
    expect(page.locator(f'[data-testid="log"] tr[data-version="{result["version"]}"]')).to_be_visible()
    expect(page.locator('[data-testid="croupier"] form').first).to_have_attribute("data-version", str(result["version"]))


def test_the_auditor_reads_every_view_but_has_no_croupiers_panel(browser_page, desk):
    table_id = desk.tables["chemin-de-fer"]
    head = desk.client.get(f"/tables/{table_id}")["version"]

    page = open_desk(browser_page, desk, f"/desk/tables/{table_id}", token=AUDITOR)

    expect(state_view(page)).to_have_attribute("data-version", str(head))
    expect(page.get_by_test_id("role")).to_contain_text("auditor")
    expect(page.get_by_test_id("croupier")).to_have_count(0)
    expect(page.locator("[data-command]")).to_have_count(0)


# --- the tables --------------------------------------------------------------------------------------------


def test_the_tables_filter_by_game_and_player_and_a_new_table_shows_up_live(browser_page, desk):
    page = open_desk(browser_page, desk, "/desk")
    rows = page.locator('[data-testid="tables"] tbody tr')
    expect(rows.first).to_be_visible()

    page.get_by_label("Game").select_option("punto-banco")
    expect(page.locator('[data-testid="tables"] tbody tr:not([data-game="punto-banco"])')).to_have_count(0)
    expect(page.locator(f'tr[data-table-id="{desk.tables["punto-banco"]}"]')).to_be_visible()
    assert "game=punto-banco" in page.url
    page.get_by_label("Game").select_option("")
    page.get_by_label("Player").fill("olg")
    expect(page.locator('[data-testid="tables"] tbody tr[data-game="card-lottery"]').first).to_be_visible()
    assert set(page.eval_on_selector_all('[data-testid="tables"] tbody tr', "els => els.map(e => e.dataset.game)")) == {
        "card-lottery"}
    page.get_by_label("Player").fill("")

    opened = fresh_table(desk, "punto-banco")["table_id"]
    expect(page.locator(f'tr[data-table-id="{opened}"]')).to_be_visible(timeout=LIVE)


def test_a_table_opened_before_the_heads_stream_connects_is_listed_once_it_connects(browser_page, desk):
    held: list[Any] = []

    def hold_the_first(route: Any) -> None:
        # the heads stream's first request, held until the table is opened; any later one (the browser
        # connecting again on a loaded machine) goes through, or the page would never see a stream
        if held:
            route.continue_()
        else:
            held.append(route)

    browser_page.route("**/events", hold_the_first)
    page = open_desk(browser_page, desk, "/desk")
    expect(page.locator('[data-testid="tables"] tbody tr').first).to_be_visible()
    while not held:
        page.wait_for_timeout(50)

    opened = fresh_table(desk, "punto-banco")["table_id"]  # after the list was read, before the stream starts
    held[0].continue_()

    expect(page.locator('[data-mode="stream"]')).to_have_count(1, timeout=LIVE)
    expect(page.locator(f'tr[data-table-id="{opened}"]')).to_be_visible(timeout=LIVE)


def test_without_a_token_the_desk_asks_for_one_and_takes_it_from_its_field(browser_page, desk):
    page = open_desk(browser_page, desk, "/desk", token=None)
    expect(page.get_by_test_id("role")).to_contain_text("no token")
    expect(page.get_by_text("This page needs a token")).to_be_visible()

    page.get_by_label("Token").fill(OPERATOR)
    page.get_by_role("button", name="Use").click()

    expect(page.get_by_test_id("role")).to_contain_text("operator")
    expect(page.locator(f'tr[data-table-id="{desk.tables["card-lottery"]}"]')).to_be_visible()
    assert page.evaluate(f"sessionStorage.getItem({json.dumps(TOKEN_KEY)})") == OPERATOR


# --- following a table ---------------------------------------------------------------------------------------

STREAM_TEXT = (": heartbeat\r\n\r\nid: 7\nevent: table-event\ndata: {\"player\": \"Zoë\"}\n\n"
               "id: 8\r\nevent: table-event\r\ndata: line one\r\ndata: line two\r\n\r\n"
               ": heartbeat\n\ndata: no event name\n\nevent: head\n\n")


def test_the_stream_reader_reads_every_message_however_its_bytes_are_split(browser_page, desk):
    page = open_desk(browser_page, desk, "/desk")
    expect(page.get_by_test_id("role")).to_contain_text("operator")
    script = """async ([text, cuts]) => {
        const { readEvents } = await import("/desk/static/live.js");
        const bytes = new TextEncoder().encode(text);
        const edges = [0, ...cuts, bytes.length];
        const body = new ReadableStream({ start(c) {
            edges.slice(1).forEach((end, i) => c.enqueue(bytes.slice(edges[i], end)));
            c.close();
        } });
        const messages = [];
        let chunks = 0;
        await readEvents(body, (m) => messages.push(m), () => chunks++);
        return { messages, chunks };
    }"""
    where = len(STREAM_TEXT[:STREAM_TEXT.index("ë")].encode()) + 1  # inside the two bytes of the ë
    crlf = len(STREAM_TEXT[:STREAM_TEXT.index("line one\r\n")].encode()) + len("line one\r")  # a \r | its \n
    for cuts in ([], [where, crlf], [crlf], list(range(1, len(STREAM_TEXT.encode())))):
        read = page.evaluate(script, [STREAM_TEXT, sorted(cuts)])
        assert read["messages"] == [
            {"id": "7", "event": "table-event", "data": '{"player": "Zoë"}'},
            {"id": "8", "event": "table-event", "data": "line one\nline two"},
            {"id": "8", "event": "message", "data": "no event name"},  # the last id stays, as EventSource keeps it
        ], cuts
        assert read["chunks"] >= 1


def test_a_table_is_followed_by_its_stream_with_the_token_and_last_event_id_when_the_service_streams(
        browser_page, desk):
    """The service's side of the stream is stood in for here: each request for the stream is answered with the
    events after its Last-Event-ID, read from the service, as Server-Sent Events."""
    table_id = fresh_table(desk)["table_id"]
    asked: list[dict[str, str]] = []

    def stream(route: Any) -> None:
        request = route.request
        if "text/event-stream" not in request.headers.get("accept", ""):
            route.continue_()
            return
        asked.append(request.headers)
        after = int(request.headers.get("last-event-id", "0"))
        events = desk.client.get(f"/tables/{table_id}/events?after={after}")["events"]
        body = ": heartbeat\n\n" + "".join(
            f"id: {e['version']}\nevent: table-event\ndata: {json.dumps(e, separators=(',', ':'))}\n\n" for e in events)
        route.fulfill(status=200, headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}, body=body)

    browser_page.route(f"**/tables/{table_id}/events", stream)
    page = open_desk(browser_page, desk, f"/desk/tables/{table_id}")
    expect(state_view(page)).to_have_attribute("data-version", "1")
    expect(page.get_by_test_id("live")).to_have_attribute("data-mode", "stream")

    result = desk.client.post(f"/tables/{table_id}/commands", {"command": "draw_seats", "player": "anna"})

    expect(state_view(page)).to_have_attribute("data-version", str(result["version"]), timeout=LIVE)
    assert asked[0]["last-event-id"] == "1" and asked[0]["authorization"] == f"Bearer {OPERATOR}"
    for _ in range(50):  # the stream stood in for ends at once: the page asks again, after what it has
        if any(h.get("last-event-id") == str(result["version"]) for h in asked):
            break
        page.wait_for_timeout(100)
    assert any(h.get("last-event-id") == str(result["version"]) for h in asked)
    rows = page.eval_on_selector_all('[data-testid="log"] tbody tr', "els => els.map(e => Number(e.dataset.version))")
    assert rows == list(range(1, result["version"] + 1))  # each event once, in order


def test_a_timed_tables_window_shows_its_deadline_and_counts_down(browser_page, desk):
    opened = desk.client.post("/tables", {"game": "punto-banco", "players": ["marta"], "croupier": "marta",
                                          "rules": {"open_seats": True, "min_window": 5, "max_window": 60}})
    table_id = opened["table_id"]
    for body in ({"command": "shuffle"}, {"command": "cut", "position": 40}, {"command": "open_stakes", "seconds": 60}):
        desk.client.post(f"/tables/{table_id}/commands", {"player": "marta", **body})
    closes_at = desk.client.get(f"/tables/{table_id}")["window"]["closes_at"]
    page = open_desk(browser_page, desk, f"/desk/tables/{table_id}")
    window = page.locator('[data-testid="window"]')
    expect(window).to_have_attribute("data-closes-at", closes_at)
    expect(window).to_contain_text("60 s, closes at")
    expect(window.locator(".left")).to_have_text(re.compile(r"^\d+ s left$"))
