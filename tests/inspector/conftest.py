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
from playwright.sync_api import Browser, BrowserContext, expect, sync_playwright

from tests.http.support import Server

CHROMIUM = os.environ.get("MVU_CHROMIUM", "/usr/bin/chromium")
DEADLINE_MS = 60_000
"""How long a wait for a selector may take before the test fails: a bound on waiting for an
event on a loaded machine, never a pause."""
expect.set_options(timeout=DEADLINE_MS)


def _missing(what: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} is required under CI=true (make install-browser)")
    pytest.skip(f"{what} is not installed (make install-browser)")


def signed_in(browser: Browser, server: Server) -> BrowserContext:
    """A browser context signed in through the page's token form (the one-time link is kept for
    the test of it)."""
    context = browser.new_context(base_url=server.base, locale="zh-CN", viewport={"width": 1280, "height": 900})
    context.set_default_timeout(DEADLINE_MS)
    answer = context.request.post("/inspector/signin", data={"token": server.token},
                                  headers={"Origin": server.base})
    assert answer.ok, answer.text()
    return context


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = Server.start(f"sqlite:///{tmp_path_factory.mktemp('inspector') / 'mvu.sqlite3'}")
    try:
        yield running
    finally:
        code, _, err = running.stop()
        assert code == 0, err[-2000:]


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
