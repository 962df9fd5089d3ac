"""A real browser for the desk's tests: Playwright for Python driving the system's Chromium.

Playwright's own browser download is not used: the tests launch the Chromium the machine has (Debian's
package, /usr/bin/chromium, or ZAMETANO_CHROMIUM). Without one they skip, saying why; under CI=true they
fail instead, since .ci/run installs it."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ON_CI

CANDIDATES = ("chromium", "chromium-browser", "google-chrome")


def find_chromium(env: dict[str, str] | None = None) -> str | None:
    """ZAMETANO_CHROMIUM if set (and executable), else the first Chromium on PATH."""
    env = os.environ if env is None else env
    named = env.get("ZAMETANO_CHROMIUM")
    if named:
        return named if Path(named).is_file() and os.access(named, os.X_OK) else None
    for name in CANDIDATES:
        found = shutil.which(name, path=env.get("PATH"))
        if found:
            return found
    return None


def unavailable(reason: str) -> None:
    if ON_CI:
        pytest.fail(f"browser tests are mandatory under CI=true: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = find_chromium()
    if path is None:
        unavailable("no Chromium found (apt-get install chromium, or set ZAMETANO_CHROMIUM)")
    assert path is not None
    return path


@pytest.fixture(scope="session")
def browser(chromium_path: str) -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # pragma: no cover - the dev extra installs it
        unavailable("playwright is not installed (pip install -e '.[dev]')")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium_path, headless=True,
                                              args=["--no-sandbox", "--disable-dev-shm-usage"])
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh context (no storage shared between tests); console errors fail the test."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.console_errors = errors
    try:
        yield page
    finally:
        context.close()
