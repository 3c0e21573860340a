"""The API explorer in the real browser: opened from the index and from the signed-in inspector,
it lists the OpenAPI document's operations and sends them as the signed-in browser, loading
nothing from another origin; the OpenAPI link opened without the token explains the token."""

from __future__ import annotations

import json

from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.http.support import API, Server
from tests.inspector.support import signed_in


def _requests_stay_home(page: Page) -> list[str]:
    """Every URL the page asks for, to check none leaves this server (no CDN)."""
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    return asked


def _send(page: Page, operation: str, body: object | None = None) -> dict[str, object]:
    section = page.locator(f"details.operation[data-operation='{operation}']")
    section.locator("summary").click()
    if body is not None:
        section.locator("textarea[name=body]").fill(json.dumps(body))
    section.locator("button[type=submit]").click()
    answer = section.locator(".answer")
    expect(answer).to_be_visible()
    return {"status": int(answer.get_attribute("data-status") or 0), "body": answer.locator("pre.body").inner_text()}


def test_the_index_opens_the_explorer_which_signs_in_and_sends_operations(server: Server,
                                                                          fresh: BrowserContext) -> None:
    page = fresh.new_page()
    asked = _requests_stay_home(page)
    page.goto(f"{API}/", wait_until="domcontentloaded")
    page.click("a[href='/explorer/']")
    page.fill("form.signin input[name=token]", server.token)
    page.click("form.signin button")
    expect(page.locator("details.operation[data-operation='listResources']")).to_have_count(1)
    # Every operation of the document is listed.
    with server.client() as client:
        document = client.get(f"{API}/openapi.json").json()
    listed = page.locator("details.operation").evaluate_all("nodes => nodes.map(n => n.dataset.operation)")
    assert sorted(listed) == sorted(op["operationId"] for ops in document["paths"].values() for op in ops.values())
    # A write (the anti-forgery header goes with it), then a read that sees it.
    created = _send(page, "createSession", {"sessionId": "explored", "createdAt": 1767225600000})
    assert created["status"] == 201 and '"sessionId": "explored"' in str(created["body"])
    listed_sessions = _send(page, "inspectorSessions")
    assert listed_sessions["status"] == 200 and '"explored"' in str(listed_sessions["body"])
    # A query parameter (the scope, as JSON) goes out encoded.
    resources = page.locator("details.operation[data-operation='listResources']")
    resources.locator("summary").click()
    resources.locator("input[name=scope]").fill('{"authority":"local","sessionId":"explored"}')
    resources.locator("button[type=submit]").click()
    expect(resources.locator(".answer[data-status='200'] pre.body")).to_have_text("[]")
    # A refusal is shown as the server answered it.
    missing = page.locator("details.operation[data-operation='readSession']")
    missing.locator("summary").click()
    missing.locator("input[name=sessionId]").fill("nobody")
    missing.locator("button[type=submit]").click()
    expect(missing.locator(".answer[data-status='404'] pre.body")).to_contain_text("POST /mvu/sessions")
    assert asked and all(url.startswith(server.base) for url in asked), asked


def test_the_signed_in_inspector_links_the_explorer(browser: Browser, server: Server) -> None:
    context = signed_in(browser, server)
    try:
        page = context.new_page()
        page.goto("/inspector/")
        page.click("header a.explorer")
        expect(page.locator("details.operation[data-operation='registerCard']")).to_have_count(1)
        assert page.url == f"{server.base}/explorer/"
        expect(page.locator("form.signin")).to_have_count(0)  # no second sign-in
    finally:
        context.close()


def test_the_openapi_link_opened_without_the_token_explains_it(server: Server, fresh: BrowserContext) -> None:
    page = fresh.new_page()
    page.goto(f"{API}/", wait_until="domcontentloaded")
    with page.expect_navigation():
        page.click(f"a[href='{API}/openapi.json']")
    expect(page.locator("h1")).to_have_text("This needs the server's token")
    expect(page.locator("body")).to_contain_text("var/mvu.sqlite3.token")
    page.click("a[href='/explorer/']")
    expect(page.locator("form.signin")).to_be_visible()
