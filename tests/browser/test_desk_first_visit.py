"""The desk as a new user meets it: the server as `./scripts/run` starts it (no tokens, SQLite), a shoe played by
`./scripts/demo`, then only the browser: the table found in the list, the shoe replayed with the slider, a
round opened and seen verified, the whole table verified. Then the same table with one stored event altered
behind the service's back: the browser's own check fails, at the version scripts/audit names."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import requests
from playwright.sync_api import expect

from tests.e2e.servers import ROOT, running_server
from tests.tampering import Rows

pytestmark = pytest.mark.e2e
WAIT = 30_000  # ms


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory):  # type: ignore[no-untyped-def]
    folder = tmp_path_factory.mktemp("first-visit")
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(folder / "zametano.sqlite"),
           "ZAMETANO_DATA_DIR": str(folder / "data")}
    with running_server(env, folder / "server.log") as server:
        demo = subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "demo"), "--url", server, "--decks", "2", "--players",
             "anna,boris", "--seed", "5"], capture_output=True, text=True, timeout=300, check=False)
        assert demo.returncode == 0, demo.stderr
        yield server


def only_table(base: str) -> dict[str, Any]:
    (table,) = requests.get(f"{base}/tables", timeout=30).json()["tables"]
    return requests.get(f"{base}/tables/{table['table_id']}", timeout=30).json()  # type: ignore[no-any-return]


def test_a_new_user_replays_the_demos_shoe_opens_a_round_and_sees_it_verified_without_reading_json(page, demo_server):
    state = only_table(demo_server)
    table_id, head = state["table_id"], state["version"]

    page.goto(f"{demo_server}/desk")
    page.locator(f'tr[data-table-id="{table_id}"] a').first.click()

    slider = page.locator('input[type="range"][data-testid="timeline"]')
    shown = page.get_by_test_id("state")
    expect(shown).to_have_attribute("data-version", str(head), timeout=WAIT)
    slider.focus()
    slider.press("Home")
    expect(shown).to_have_attribute("data-version", "1")
    for _ in range(5):
        page.get_by_test_id("forward").click()
    expect(shown).to_have_attribute("data-version", "6")  # the shoe replayed from its opening, step by step
    slider.press("End")
    expect(shown).to_have_attribute("data-version", str(head))

    page.goto(f"{demo_server}/desk/tables/{table_id}/rounds")
    page.get_by_role("link", name="Round 1", exact=True).click()
    for check in ("chain", "cards", "rules", "money"):  # the demo played the shoe to its reveal
        expect(page.locator(f'[data-check="{check}"]')).to_have_attribute("data-ok", "true", timeout=WAIT)

    page.goto(f"{demo_server}/desk/tables/{table_id}/verify")
    expect(page.get_by_test_id("verdict")).to_have_attribute("data-verdict", "ok", timeout=WAIT)
    expect(page.get_by_test_id("server-verdict")).to_have_attribute("data-verdict", "ok", timeout=WAIT)
    assert [e for e in page.console_errors if not e.startswith("Failed to load resource")] == []


def test_a_dealt_card_altered_in_the_store_is_shown_failed_at_the_version_the_audit_names(page, tmp_path):
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "zametano.sqlite"),
           "ZAMETANO_DATA_DIR": str(tmp_path / "data")}
    with running_server(env, tmp_path / "server.log") as base:
        demo = subprocess.run([sys.executable, str(ROOT / "scripts" / "demo"), "--url", base, "--decks", "2",
                               "--players", "anna,boris", "--seed", "6"], capture_output=True, text=True, timeout=300,
                              check=False)
        assert demo.returncode == 0, demo.stderr
        table_id = only_table(base)["table_id"]
        rows = Rows(env, table_id)
        dealt = [v for v, kind, _ in rows.rows() if kind == "CardDealt"]
        altered = dealt[len(dealt) // 2]
        event = rows.state(altered)
        event["card"] = "As" if event["card"] != "As" else "Kd"  # a card the shoe did not hold there, chain untouched
        rows.write(altered, event)

        audit = subprocess.run([sys.executable, str(ROOT / "scripts" / "audit"), base, "--all"], capture_output=True,
                               text=True, timeout=300, check=False)
        assert audit.returncode == 1 and f"version {altered}" in audit.stdout + audit.stderr, audit.stdout

        page.goto(f"{base}/desk/tables/{table_id}/verify")
        verdict = page.get_by_test_id("verdict")
        expect(verdict).to_have_attribute("data-verdict", "failed", timeout=WAIT)
        expect(verdict).to_have_attribute("data-failed-version", str(altered))
        page.get_by_test_id("failed-version").click()
        expect(page.get_by_test_id("state")).to_have_attribute("data-version", str(altered), timeout=WAIT)
