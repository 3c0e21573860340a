"""What the inspector's browser tests share: where Chromium is, how long a wait may take, a
signed-in browser context."""

from __future__ import annotations

import os
from collections.abc import Iterator

from playwright.sync_api import Browser, BrowserContext, Locator, Page, expect

from tests.http.support import Server

CHROMIUM = os.environ.get("MVU_CHROMIUM", "/usr/bin/chromium")
DEADLINE_MS = 60_000
"""How long a wait for a selector may take before the test fails: a bound on waiting for an
event on a loaded machine, never a pause."""
expect.set_options(timeout=DEADLINE_MS)


def signed_in(browser: Browser, server: Server) -> BrowserContext:
    """A browser context signed in through the page's token form (the one-time link is kept for
    the test of it)."""
    context = browser.new_context(base_url=server.base, locale="zh-CN", viewport={"width": 1280, "height": 900})
    context.set_default_timeout(DEADLINE_MS)
    answer = context.request.post("/inspector/signin", data={"token": server.token},
                                  headers={"Origin": server.base})
    assert answer.ok, answer.text()
    return context


def inspector_page(browser: Browser, server: Server) -> Iterator[Page]:
    """The inspector opened signed in, for a fixture to yield; the page's own script errors fail
    the test when it ends."""
    context = signed_in(browser, server)
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.goto("/inspector/")
    try:
        yield opened
    finally:
        context.close()
    assert errors == []


def open_turn(page: Page, session_id: str, turn: int, ready: str = "tr[data-path]") -> Locator:
    """Open ``turn`` of ``session_id`` in the page: its article, once ``ready`` shows in it."""
    page.click(f"nav button[data-session='{session_id}']")
    article = page.locator(f"article.turn[data-turn='{turn}']")
    article.locator("summary").click()
    expect(article.locator(ready).first).to_be_visible(timeout=DEADLINE_MS)
    return article
