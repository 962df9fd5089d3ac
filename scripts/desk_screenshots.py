"""The desk's screenshots (see scripts/desk-screenshots), made from the desk as it is: the tables, a table at a
version in the middle of a coup, a round's audit, the verification, the croupier's panel at a punto banco table
taking stakes, and that table on a phone's 360 px."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts._args import Parser  # noqa: E402

from tests.browser.conftest import find_chromium  # noqa: E402
from tests.browser.desk_world import OPERATOR, Client, desk_server, played_tables  # noqa: E402

TOKEN_KEY = "zametano.desk.token"
VIEWPORT = {"width": 1400, "height": 900}
PHONE = {"width": 360, "height": 780}


def operators_page(browser: Any, viewport: dict[str, int]) -> Any:
    """A page of a new browser context of that size, holding the operator's token as if it had been given."""
    page = browser.new_context(viewport=viewport).new_page()
    page.add_init_script(f"sessionStorage.setItem({json.dumps(TOKEN_KEY)}, {json.dumps(OPERATOR)})")
    return page


def shoot(page: Any, base: str, path: str, ready: str, out: Path, full: bool = False, top: str | None = None) -> None:
    """The page at ``path`` once ``ready`` shows, whole (``full``) or as the screen shows it, scrolled so that
    ``top`` (a selector) is at its top."""
    page.goto(base + path)
    page.wait_for_selector(ready)
    if top:
        page.locator(top).evaluate("e => e.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(300)  # the last fonts and layout
    page.screenshot(path=str(out), full_page=full)
    print(f"{out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}: {path}", file=sys.stderr)


def taking_stakes(client: Client) -> str:
    """A punto banco table past a few coups, taking the stakes of the next: anna's already on the felt."""
    state = client.open("punto-banco")
    table_id = state["table_id"]
    state = client.play(table_id, state, lambda s: s["phase"] == "stakes" and s["round"] >= 3 and not s["stakes"],
                        seed=7)
    client.post(f"/tables/{table_id}/commands", {"command": "place_stake", "player": "anna", "spot": "banker",
                                                 "amount": 100})
    return table_id


def first_version_of(client: Client, table_id: str, event_type: str) -> int:
    events = client.get(f"/tables/{table_id}/events?limit=1000")["events"]
    return next(e["version"] for e in events if e["type"] == event_type)


def main(argv: list[str] | None = None) -> int:
    parser = Parser(description=__doc__)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "desk", help="folder of the PNG files")
    args = parser.parse_args(argv)
    existing = next((p for p in (args.out, *args.out.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        parser.error(f"--out {args.out}: {existing} is a file, not a folder to write the pictures in")
    chromium = find_chromium()
    if chromium is None:
        print("desk-screenshots: no Chromium found (apt-get install chromium, or set ZAMETANO_CHROMIUM)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder, desk_server(Path(folder)) as base, sync_playwright() as playwright:
        client = Client(base)
        tables = played_tables(client)
        staking = taking_stakes(client)
        coup = tables["chemin-de-fer"]
        shown = first_version_of(client, coup, "HandsShown")
        lottery = tables["card-lottery"]
        browser = playwright.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        try:
            page = operators_page(browser, VIEWPORT)
            shoot(page, base, "/desk", "[data-table-id]", args.out / "tables.png")
            shoot(page, base, f"/desk/tables/{coup}?version={shown}", f'[data-testid="state"][data-version="{shown}"]',
                  args.out / "table.png")
            shoot(page, base, f"/desk/tables/{lottery}/rounds/1", "[data-check]", args.out / "round.png")
            shoot(page, base, f"/desk/tables/{lottery}/verify", '[data-testid="verdict"][data-verdict]',
                  args.out / "verify.png")
            ready = '[data-testid="croupier"] form'
            shoot(page, base, f"/desk/tables/{staking}", ready, args.out / "croupier.png", full=True)
            shoot(operators_page(browser, PHONE), base, f"/desk/tables/{staking}", ready, args.out / "phone.png",
                  top='[data-testid="state"]')
        finally:
            browser.close()
            client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
