"""Signing the inspector in: the one-time link ``mvu serve`` prints, the token form, and what a
cookie alone cannot do (change state without the page's anti-forgery header, or be used from
another origin), while the API keeps taking the bearer token."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, expect

from tests.http.support import MVU, Server
from tests.inspector.chat import Chat, card, register
from tests.inspector.support import signed_in

UPDATE = f"{MVU}/update"
POST = """([url, body, headers]) => fetch(url, {method: 'POST', body: JSON.stringify(body),
    headers: {'Content-Type': 'application/json', ...headers}}).then(async r => [r.status, await r.json()])"""
"""A script of the page posting JSON: its status and answer."""


@pytest.fixture(scope="module")
def link(server: Server) -> str:
    [line] = [line for line in server.lines if line.startswith("  inspector:")]
    found = re.search(r"(http://\S+/inspector/signin\?code=\S+)", line)
    assert found, line
    with server.client() as client:
        register(client, "plain", card("Plain", "hp: 10\n名字: 艾莉\n"))
        Chat.open(client, "solo", "plain").play(1, "_.set('hp', 9);//scratch")
    return found.group(1)


def test_the_printed_link_signs_in_once_with_a_cookie_no_script_can_read(browser: Browser, server: Server,
                                                                         link: str, fresh: BrowserContext) -> None:
    page = fresh.new_page()
    page.goto(link)
    expect(page.locator("nav button[data-session='solo']")).to_be_visible()
    assert page.url == f"{server.base}/inspector/"  # the code is not left in the address bar
    [cookie] = fresh.cookies()
    assert (cookie["name"], cookie["httpOnly"], cookie["sameSite"]) == ("mvu_inspector", True, "Strict")
    assert page.evaluate("document.cookie") == ""
    # The same link a second time, in another browser: spent.
    other = browser.new_context(base_url=server.base)
    try:
        again = other.new_page()
        again.goto(link)
        expect(again.locator("form.signin .alert")).to_have_text(
            "That sign-in link was already used or has expired (it works once, for 10 minutes).")
        assert other.cookies() == []
    finally:
        other.close()
    # Signing out ends the cookie's session on the server too.
    page.click("header button.signout")
    expect(page.locator("form.signin")).to_be_visible()
    answer = fresh.request.get(f"{MVU}/inspector/sessions", headers={"Cookie": f"mvu_inspector={cookie['value']}"})
    assert answer.status == 401


def test_the_token_form_signs_in_and_refuses_a_wrong_token(server: Server, link: str,
                                                          fresh: BrowserContext) -> None:
    page = fresh.new_page()
    page.goto("/inspector/")
    page.fill("form.signin input[name=token]", "not-the-token-at-all")
    page.click("form.signin button")
    expect(page.locator("form.signin .alert")).to_have_text("that is not the server's token")
    page.fill("form.signin input[name=token]", server.token)
    page.click("form.signin button")
    expect(page.locator("nav button[data-session='solo']")).to_be_visible()


def test_a_cookie_changes_state_only_with_the_page_header_and_only_from_the_page(browser: Browser, server: Server,
                                                                               link: str) -> None:
    context = signed_in(browser, server)
    try:
        page = context.new_page()
        page.goto("/inspector/")
        expect(page.locator("nav button[data-session='solo']")).to_be_visible()
        csrf = page.evaluate("fetch('/inspector/session').then(r => r.json()).then(b => b.csrf)")
        assert isinstance(csrf, str) and len(csrf) > 20
        body = {"id": "mvu:x", "scope": {"authority": "local", "sessionId": "solo"}, "content": {"stat_data": {}},
                "expectedRevision": 0, "operationId": "forged"}
        # A script of the page without the header, and a request with it but from another origin.
        status, _ = page.evaluate(POST, [UPDATE, body, {}])
        assert status == 401
        foreign = context.request.post(UPDATE, data=body, headers={"X-MVU-CSRF": csrf,
                                                                     "Origin": "http://evil.example"})
        assert foreign.status == 401
        cross_site = context.request.get(f"{MVU}/inspector/sessions", headers={"Sec-Fetch-Site": "cross-site"})
        assert cross_site.status == 401
        # With the header, from the page: the request reaches the route (which finds no such resource).
        status, answer = page.evaluate(POST, [UPDATE, body, {"X-MVU-CSRF": csrf}])
        assert (status, answer["code"]) == (404, "MVU_MISSING")
    finally:
        context.close()


def test_the_api_keeps_the_bearer_token_and_nothing_else_reads_state(server: Server, link: str) -> None:
    sessions = f"{server.base}{MVU}/inspector/sessions"
    assert [s["sessionId"] for s in httpx.get(sessions, headers=server.auth).json()] == ["solo"]
    assert httpx.get(sessions).status_code == 401
    turns = httpx.get(f"{server.base}{MVU}/inspector/sessions/solo/turns", headers=server.auth).json()
    assert turns["runningTurn"] is None
    assert [(t["turn"], t["end"], t["running"]) for t in turns["turns"]] == [(1, "completed", False)]
    assert httpx.get(f"{server.base}/inspector/signin?code=guess", follow_redirects=False).headers["location"] \
        == "/inspector/?signin=spent"
    assert httpx.post(f"{server.base}/inspector/signin", content=b"x" * 5000,
                      headers={"Origin": server.base}).status_code == 413
    # The page itself and its scripts are public: they hold no state.
    assert httpx.get(f"{server.base}/inspector/static/app.js").status_code == 200
