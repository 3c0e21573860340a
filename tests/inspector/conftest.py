"""One real ``mvu serve`` on a fresh ledger and one Chromium for each inspector test module.

The browser is Debian's Chromium (``/usr/bin/chromium``, which ``make install-browser`` puts
there) driven by Playwright; Playwright's own browser download is never used. Without the
browser the tests are skipped, except under ``CI=true``, where that is a failure.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, BrowserContext, sync_playwright

from tests.http.support import Server, served
from tests.inspector.support import CHROMIUM, DEADLINE_MS


def _missing(what: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} is required under CI=true (make install-browser)")
    pytest.skip(f"{what} is not installed (make install-browser)")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with served(f"sqlite:///{tmp_path_factory.mktemp('inspector') / 'mvu.sqlite3'}") as running:
        yield running


@pytest.fixture
def fresh(browser: Browser, server: Server) -> Iterator[BrowserContext]:
    """A new browser context, signed in nowhere."""
    context = browser.new_context(base_url=server.base)
    context.set_default_timeout(DEADLINE_MS)
    try:
        yield context
    finally:
        context.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if shutil.which(CHROMIUM) is None:
        _missing(CHROMIUM)
    with sync_playwright() as playwright:
        # --no-sandbox: the tests may run as root, where Chromium's sandbox refuses to start.
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()
