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

import httpx
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


def granted_opening(client: httpx.Client, tag: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """An empty session ``<tag>1`` of playthrough ``p<tag>`` that selected card ``hp<tag>``, and the
    host's write grant ``g<tag>`` for a script of that card: its initial scope and the identity
    (``<tag>`` a hex digit: the identity's sha256 repeats it)."""
    scope = {"mode": "initial", "playthroughId": f"p{tag}", "sessionId": f"{tag}1", "characterId": f"hp{tag}"}
    identity = {"version": 1, "sha256": tag * 64, "scope": scope}
    register(client, f"hp{tag}", HP_CARD_JSON)
    session(client, f"{tag}1")
    ok(select(client, f"{tag}1", f"hp{tag}"))
    ok(client.put(f"{MVU}/playthroughs/p{tag}", json={"characterId": f"hp{tag}", "rootSessionId": f"{tag}1"}))
    ok(client.put(f"{MVU}/card-grants/g{tag}", json={"sourceIdentity": identity, "scope": scope}))
    return scope, identity


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
      const writing = window.binding.writeOperation({ operation: 'patch', value: { hp: 20 }, operationId: 'w1' });
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
      const writing = window.binding.writeOperation({ operation: 'patch', value: { hp: 20 }, operationId: 'exact-op' });
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
    with server.client() as client:
        scope, identity = granted_opening(client, "b")
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


# A client that also binds, writes and revokes as the test says: window.binds / window.revokes
# record what the binding sent; window.revokeFails makes the next revokes fail.
WRITER = """
window.binds = []; window.revokes = []; window.revokeFails = 0;
window.scripted.bind = (body, { signal }) => new Promise((resolve, reject) => {
  window.binds.push({ body, resolve, reject });
  signal?.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError')));
});
window.scripted.revoke = async (capability) => {
  window.revokes.push(capability);
  if (window.revokeFails > 0) { window.revokeFails -= 1; throw new TypeError('network down'); }
  return { ok: true };
};
window.grant = { grantId: 'g', sourceIdentity: { version: 1, sha256: 'a'.repeat(64), scope: window.scope } };
"""
UUID = r"/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/"


def bound(page: Page) -> None:
    """A binding created with a write grant, its bind answered with the id it made."""
    page.evaluate(f"scope => {{ window.scope = scope; {SCRIPTED} {WRITER} }}", SCOPE)
    page.evaluate("""async () => {
      const m = await import('/inspector/static/binding.js');
      window.created = m.createMvuCardBinding({ client: window.scripted, scope: window.scope, pollMs: 60000,
                                                writeGrant: window.grant });
    }""")
    page.wait_for_function("() => window.reads.length === 1")
    page.evaluate("window.reads[0].resolve({ snapshot: window.snap(1, 10), etag: '\"r1\"' })")
    page.wait_for_function("() => window.binds.length === 1")
    page.evaluate("""async () => {
      const { bindingId } = window.binds[0].body;
      window.binds[0].resolve({ capability: bindingId, snapshot: window.snap(1, 10) });
      window.binding = await window.created;
    }""")


def test_a_granted_binding_binds_with_its_own_id_and_writes_at_the_observed_revision(page: Page) -> None:
    bound(page)
    body = page.evaluate("window.binds[0].body")
    assert page.evaluate(f"{UUID}.test(window.binds[0].body.bindingId)")
    assert (body["grantId"], body["scope"], body["sourceIdentity"]["sha256"]) == ("g", SCOPE, "a" * 64)
    seen = page.evaluate("window.binding.getSnapshot()")
    assert seen["writable"] is True and "capability" not in json.dumps(seen)
    first = page.evaluate("""async () => {
      const writing = window.binding.write({ operation: 'patch', value: [{ op: 'delta', path: '/hp', value: 1 }] });
      window.writes[0].resolve(window.snap(2, 11));
      return { snapshot: await writing, request: window.writes[0].request };
    }""")
    request = first["request"]
    assert request["capability"] == body["bindingId"] and request["expectedRevision"] == 1
    assert (request["operation"], request["cause"], first["snapshot"]["revision"]) == ("patch", "script", 2)
    second = page.evaluate("""async () => {
      const writing = window.binding.writeOperation({ operation: 'replace', value: { hp: 3 } });
      window.writes[1].resolve(window.snap(3, 3));
      return { receipt: await writing, request: window.writes[1].request };
    }""")
    # The revision observed after the first write, and a fresh operation id, returned in the receipt.
    assert second["request"]["expectedRevision"] == 2
    assert second["request"]["operationId"] not in (None, request["operationId"])
    assert second["receipt"]["operationId"] == second["request"]["operationId"]


def test_an_abort_that_lands_after_the_save_keeps_the_operation_receipt(page: Page) -> None:
    bound(page)
    outcome = page.evaluate("""async () => {
      const controller = new AbortController();
      const writing = window.binding.writeOperation({ operation: 'replace', value: { hp: 5 } },
                                                    { signal: controller.signal });
      controller.abort();
      window.writes[0].resolve(window.snap(2, 5));
      try { await writing; return 'returned'; } catch (e) { return { name: e.name, receipt: e.operationReceipt }; }
    }""")
    assert outcome["name"] == "AbortError"
    assert (outcome["receipt"]["result"]["revision"], outcome["receipt"]["operationId"]) == \
        (2, page.evaluate("window.writes[0].request.operationId"))
    assert page.evaluate("window.binding.getSnapshot().revision") == 2  # the saved state is shown


def test_dispose_revokes_and_a_failed_revoke_can_be_retried(page: Page) -> None:
    bound(page)
    page.evaluate("window.revokeFails = 1")
    failed = page.evaluate("window.binding.dispose()")
    capability = page.evaluate("window.binds[0].body.bindingId")
    assert failed["revoked"] is False and page.evaluate("window.revokes") == [capability]
    assert page.evaluate("window.binding.retryCleanup()") == {"revoked": True}
    assert page.evaluate("window.revokes") == [capability, capability]
    assert page.evaluate("window.binding.retryCleanup()") == {"revoked": True}  # nothing left to do
    assert len(page.evaluate("window.revokes")) == 2


def test_a_bind_whose_answer_is_lost_revokes_the_id_it_made(page: Page) -> None:
    page.evaluate(f"scope => {{ window.scope = scope; {SCRIPTED} {WRITER} }}", SCOPE)
    page.evaluate("""async () => {
      const m = await import('/inspector/static/binding.js');
      window.created = m.createMvuCardBinding({ client: window.scripted, scope: window.scope,
                                                writeGrant: window.grant }).then(() => 'created', (e) => e.message);
    }""")
    page.wait_for_function("() => window.reads.length === 1")
    page.evaluate("window.reads[0].resolve({ snapshot: window.snap(1, 10), etag: '\"r1\"' })")
    page.wait_for_function("() => window.binds.length === 1")
    outcome = page.evaluate("""async () => {
      window.binds[0].reject(new TypeError('connection reset'));
      return await window.created;
    }""")
    assert outcome == "connection reset"
    assert page.evaluate("window.revokes") == [page.evaluate("window.binds[0].body.bindingId")]


def test_a_granted_binding_writes_and_revokes_through_a_real_server(page: Page, server: Server) -> None:
    """A real ``mvu serve``: the card's initial scope bound by the browser with a client-made id,
    a write at the observed revision, then dispose revokes it and the server refuses the
    capability from then on."""
    with server.client() as client:
        scope, identity = granted_opening(client, "d")
        outcome = page.evaluate("""async ({scope, identity, headers}) => {
          const m = await import('/inspector/static/binding.js');
          const sent = [];
          const fetcher = (url, options = {}) => { sent.push(options.body ?? null); return fetch(url, options); };
          const binding = await m.createMvuCardBinding({ client: m.createHttpSnapshotClient({ headers, fetcher }),
            scope, pollMs: 60000, writeGrant: { grantId: 'gd', sourceIdentity: identity } });
          const capability = JSON.parse(sent.find((body) => body && body.includes('bindingId'))).bindingId;
          const before = binding.getSnapshot();
          const receipt = await binding.writeOperation({ operation: 'replace', value: { stat_data: { hp: 6 } },
                                                         cause: 'user-interaction' });
          const after = binding.getSnapshot();
          const cleanup = await binding.dispose();
          return { before, receipt, after, cleanup, capability };
        }""", {"scope": scope, "identity": identity, "headers": server.auth})
        assert (outcome["before"]["revision"], outcome["before"]["writable"]) == (0, True)
        assert (outcome["receipt"]["result"]["revision"], outcome["after"]["variables"]["stat_data"]) == (1, {"hp": 6})
        assert outcome["cleanup"] == {"revoked": True}
        state = client.get(f"{MVU}/snapshot", params={"scope": json.dumps(scope)}).json()
        assert (state["revision"], state["variables"]["stat_data"]) == (1, {"hp": 6})
        # The capability the browser made is revoked: the server refuses it now.
        refused = client.post(f"{MVU}/card-write", json={
            "capability": outcome["capability"], "operation": "replace",
            "value": {"stat_data": {"hp": 1}}, "expectedRevision": 1, "operationId": "late", "cause": "script"})
        assert (refused.status_code, refused.json()["code"]) == (403, "MVU_WRITE_DENIED")
