"""The bubble client (``/inspector/static/binding.js``) in Chromium.

Most tests answer the snapshot route it reads (``GET /mvu/snapshot?scope=``) with a test double,
``page.route`` in the test, in the snapshot shape the route documents (``{version: 1, scope,
revision, currentRevision, status, variables}``), to put the route in states a real chat reaches
only by chance; the last test reads the real route of a real chat. The module itself is
served by a real ``mvu serve``. The scripted-client tests drive the binding through a client
object written in the test, to hold a read or a write open at the moment a rule is about.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Browser, Page, Route

from tests.cards.card_support import HP_CARD_JSON
from tests.cards.wire import append, ok, register, select, session, turn
from tests.http.support import MVU, Server
from tests.inspector.support import DEADLINE_MS

SCOPE = {"playthroughId": "p1", "sessionId": "s1", "nodeId": "n1", "variantId": "v1", "endEventId": 7}
SETUP = """async ({scope, pollMs}) => {
  const m = await import('/inspector/static/binding.js');
  window.notes = [];
  window.binding = await m.createMvuCardBinding({ client: m.createHttpSnapshotClient(), scope, pollMs });
  window.binding.subscribe((s) => window.notes.push(s));
  return window.binding.getSnapshot();
}"""


def snapshot(revision: int, variables: Any, session_id: str = "s1") -> dict[str, Any]:
    return {"version": 1, "scope": {**SCOPE, "sessionId": session_id}, "revision": revision,
            "currentRevision": revision, "status": "available", "variables": variables}


class StubRoute:
    """The test double of the snapshot route: answers by ``mode`` and counts what it was asked."""

    def __init__(self) -> None:
        self.mode = "r1"
        self.asked: list[tuple[str, str | None]] = []

    def __call__(self, route: Route) -> None:
        request = route.request
        asked_scope = json.loads(parse_qs(urlsplit(request.url).query)["scope"][0])
        assert asked_scope == SCOPE
        tag = request.headers.get("if-none-match")
        self.asked.append((self.mode, tag))
        if self.mode == "down":
            route.fulfill(status=503, content_type="application/problem+json", body='{"code":"MVU_BUSY"}')
        elif self.mode == "denied":
            route.fulfill(status=403, content_type="application/problem+json", body='{"code":"MVU_SCOPE"}')
        elif self.mode == "foreign":
            route.fulfill(status=200, content_type="application/json", body=json.dumps(snapshot(1, {}, "other")))
        else:
            revision = int(self.mode[1:])
            etag = f'"r{revision}"'
            if tag == etag:
                route.fulfill(status=304, headers={"ETag": etag})
            else:
                route.fulfill(status=200, content_type="application/json", headers={"ETag": etag},
                              body=json.dumps(snapshot(revision, {"hp": 10 * revision, "名字": "艾莉"})))


@pytest.fixture
def page(browser: Browser, server: Server) -> Iterator[Page]:
    context = browser.new_context(base_url=server.base)
    context.set_default_timeout(DEADLINE_MS)
    opened = context.new_page()
    opened.goto("/inspector/static/binding.js")  # an origin to run in; the module loads from it
    try:
        yield opened
    finally:
        context.close()


def next_poll(page: Page, etag: str | None) -> None:
    """Wait for the binding's next read of the snapshot route. Reads never overlap, so once it is
    sent, the one before it has been answered and handled."""
    with page.expect_request(lambda r: "/snapshot?" in r.url and r.headers.get("if-none-match") == etag):
        pass


def notes(page: Page) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = page.evaluate("window.notes")
    return found


def test_polls_with_304_keeps_its_data_through_read_failures_and_clears_it_on_a_refusal(page: Page) -> None:
    stub = StubRoute()
    page.route(f"**{MVU}/snapshot?*", stub)
    first = page.evaluate(SETUP, {"scope": SCOPE, "pollMs": 250})
    assert (first["revision"], first["variables"], first["readState"], first["error"]) == \
        (1, {"hp": 10, "名字": "艾莉"}, "ok", None)
    # A copy each time: changing what getSnapshot gave changes nothing inside.
    assert page.evaluate("() => { window.binding.getSnapshot().variables.hp = 99; "
                         "return window.binding.getSnapshot().variables.hp; }") == 10
    for _ in range(3):
        next_poll(page, '"r1"')
    assert notes(page) == []  # unchanged answers (304) notify nobody
    stub.mode = "down"
    page.wait_for_function("() => window.notes.length === 1")
    failed = notes(page)[0]
    assert (failed["readState"], failed["error"], failed["variables"]) == ("failed", "MVU_READ_FAILED",
                                                                          {"hp": 10, "名字": "艾莉"})
    for _ in range(3):
        next_poll(page, '"r1"')  # the data kept, its ETag too
    assert len(notes(page)) == 1  # the same failure again: no second notice
    stub.mode = "r2"
    page.wait_for_function("() => window.notes.length === 2")
    assert (notes(page)[1]["revision"], notes(page)[1]["readState"]) == (2, "ok")
    stub.mode = "denied"
    page.wait_for_function("() => window.notes.length === 3")
    denied = notes(page)[2]
    assert (denied["readState"], denied["error"], denied["variables"], denied["status"]) == \
        ("failed", "MVU_SCOPE", None, "unavailable")
    page.evaluate("window.binding.dispose()")
    message = page.evaluate("() => { try { window.binding.getSnapshot(); } catch (e) { return e.message; } }")
    assert "disposed" in message


def test_a_snapshot_of_another_scope_is_refused_at_creation(page: Page) -> None:
    stub = StubRoute()
    stub.mode = "foreign"
    page.route(f"**{MVU}/snapshot?*", stub)
    message = page.evaluate("""async (scope) => {
      const m = await import('/inspector/static/binding.js');
      try { await m.createMvuCardBinding({ client: m.createHttpSnapshotClient(), scope }); return 'created'; }
      catch (e) { return e.message; }
    }""", SCOPE)
    assert "scope mismatch" in message


# A client whose every read and write waits until the test settles it: window.reads / window.writes
# hold {request, resolve, reject} in the order the binding asked.
SCRIPTED = """
window.reads = []; window.writes = []; window.notes = [];
window.scripted = {
  snapshot: (scope, { signal }) => new Promise((resolve, reject) => {
    window.reads.push({ resolve, reject, signal });
    signal?.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError')));
  }),
  write: (request, { signal }) => new Promise((resolve, reject) => window.writes.push({ request, resolve, reject })),
};
window.snap = (revision, hp, sessionId = 's1') => ({ version: 1, scope: { ...window.scope, sessionId }, revision,
  currentRevision: revision, status: 'available', variables: { hp } });
"""


def scripted(page: Page) -> None:
    page.evaluate(f"scope => {{ window.scope = scope; {SCRIPTED} }}", SCOPE)
    page.evaluate("""async () => {
      const m = await import('/inspector/static/binding.js');
      window.created = m.createMvuCardBinding({ client: window.scripted, scope: window.scope, pollMs: 250 });
    }""")
    page.wait_for_function("() => window.reads.length === 1")
    page.evaluate("""async () => {
      window.reads[0].resolve({ snapshot: window.snap(1, 10), etag: '"r1"' });
      window.binding = await window.created;
      window.binding.subscribe((s) => window.notes.push(s.revision));
    }""")


def test_an_abort_during_the_first_read_stops_it_and_gives_no_binding(page: Page) -> None:
    page.evaluate(f"scope => {{ window.scope = scope; {SCRIPTED} }}", SCOPE)
    outcome = page.evaluate("""async () => {
      const m = await import('/inspector/static/binding.js');
      const controller = new AbortController();
      const created = m.createMvuCardBinding({ client: window.scripted, scope: window.scope,
        signal: controller.signal });
      await new Promise((r) => setTimeout(r, 0));
      controller.abort();
      try { await created; return 'created'; } catch (e) { return [e.name, window.reads[0].signal.aborted]; }
    }""")
    assert outcome == ["AbortError", True]


def test_a_failed_poll_sent_before_a_write_cannot_erase_the_newer_snapshot(page: Page) -> None:
    scripted(page)
    page.wait_for_function("() => window.reads.length === 2")  # a poll is out
    receipt = page.evaluate("""async () => {
      const writing = window.binding.write({ operation: 'patch', value: { hp: 20 }, operationId: 'w1' });
      window.writes[0].resolve(window.snap(2, 20));
      const receipt = await writing;
      window.reads[1].reject(new TypeError('network down'));
      await new Promise((r) => setTimeout(r, 0));
      return receipt;
    }""")
    assert (receipt["operationId"], receipt["result"]["revision"]) == ("w1", 2)
    snapshot = page.evaluate("window.binding.getSnapshot()")
    assert (snapshot["revision"], snapshot["readState"], snapshot["status"]) == (2, "ok", "available")
    assert page.evaluate("window.notes") == [2]


def test_a_write_receipt_stays_its_own_when_a_poll_went_further(page: Page) -> None:
    scripted(page)
    page.wait_for_function("() => window.reads.length === 2")
    receipt = page.evaluate("""async () => {
      const writing = window.binding.write({ operation: 'patch', value: { hp: 20 }, operationId: 'exact-op' });
      window.reads[1].resolve({ snapshot: window.snap(3, 30), etag: '"r3"' });
      await new Promise((r) => setTimeout(r, 0));
      window.writes[0].resolve(window.snap(2, 20));
      const receipt = await writing;
      return { receipt, frozen: Object.isFrozen(receipt.result.variables) };
    }""")
    assert (receipt["receipt"]["operationId"], receipt["receipt"]["result"]["revision"], receipt["frozen"]) == \
        ("exact-op", 2, True)
    assert page.evaluate("window.binding.getSnapshot().revision") == 3
    assert page.evaluate("window.notes") == [3]


def test_writes_wait_while_reads_fail_and_go_again_once_a_read_succeeds(page: Page) -> None:
    scripted(page)
    page.wait_for_function("() => window.reads.length === 2")
    page.evaluate("window.reads[1].reject(new TypeError('network down'))")
    page.wait_for_function("() => window.notes.length === 1")
    refused = page.evaluate("""() => window.binding.write({ operation: 'patch', value: {}, operationId: 'w' })
      .then(() => 'written', (e) => e.code)""")
    assert refused == "MVU_READ_FAILED"
    assert page.evaluate("window.binding.getSnapshot().variables") == {"hp": 10}  # its own data, kept
    page.wait_for_function("() => window.reads.length === 3")
    page.evaluate("window.reads[2].resolve({ snapshot: window.snap(2, 15), etag: '\"r2\"' })")
    page.wait_for_function("() => window.notes.length === 2")
    assert page.evaluate("window.binding.getSnapshot().readState") == "ok"
    page.evaluate("() => { window.binding.write({ operation: 'patch', value: {}, operationId: 'w2' }); }")
    page.wait_for_function("() => window.writes.length === 1")


def test_the_binding_follows_the_real_snapshot_route_through_a_write_and_a_refusal(page: Page, server: Server) -> None:
    """No test double: a real ``mvu serve``, a card registered and selected over the host routes,
    the empty session's initial scope read by the binding, a card write, then the first turn,
    after which the initial scope can no longer be read."""
    scope = {"mode": "initial", "playthroughId": "pb", "sessionId": "b1", "characterId": "hpb"}
    identity = {"version": 1, "sha256": "b" * 64, "scope": scope}
    with server.client() as client:
        register(client, "hpb", HP_CARD_JSON)
        session(client, "b1")
        ok(select(client, "b1", "hpb"))
        ok(client.put(f"{MVU}/playthroughs/pb", json={"characterId": "hpb", "rootSessionId": "b1"}))
        ok(client.put(f"{MVU}/card-grants/gb", json={"sourceIdentity": identity, "scope": scope}))
        capability = ok(client.post(f"{MVU}/card-binding", json={"scope": scope, "grantId": "gb",
                                                                 "sourceIdentity": identity}))["capability"]
        first = page.evaluate("""async ({scope, headers}) => {
          const m = await import('/inspector/static/binding.js');
          window.notes = [];
          window.binding = await m.createMvuCardBinding({ client: m.createHttpSnapshotClient({ headers }), scope,
                                                          pollMs: 250 });
          window.binding.subscribe((s) => window.notes.push(s));
          return window.binding.getSnapshot();
        }""", {"scope": scope, "headers": server.auth})
        assert (first["revision"], first["variables"]["stat_data"], first["readState"]) == (0, {"hp": 10}, "ok")
        tag = client.get(f"{MVU}/snapshot", params={"scope": json.dumps(scope)}).headers["ETag"]
        next_poll(page, tag)
        next_poll(page, tag)  # the route answered 304 to the read before: nothing to tell
        assert notes(page) == []
        ok(client.post(f"{MVU}/card-write", json={
            "capability": capability, "operation": "replace", "value": {"stat_data": {"hp": 4}},
            "expectedRevision": 0, "operationId": "four", "cause": "user-interaction"}))
        page.wait_for_function("() => window.notes.length === 1")
        assert (notes(page)[0]["revision"], notes(page)[0]["variables"]["stat_data"]) == (1, {"hp": 4})
        append(client, "b1", turn(0, 1, "_.add('hp', -1);", "m1"))
        page.wait_for_function("() => window.notes.length === 2")
        refused = notes(page)[1]
        assert (refused["readState"], refused["error"], refused["variables"]) == ("failed", "MVU_READ_ONLY", None)
