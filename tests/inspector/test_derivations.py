"""The trace view's derivations (``/inspector/static/trace.js``) run in Chromium on the inputs of
the original trace view's own tests, checked against what those tests assert: JSON-pointer rows,
edits of a copy, a turn's last recorded state, changes with removals, and the trigger rows of
retried, replayed and inherited attempts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page

from tests.http.support import Server
from tests.inspector.support import DEADLINE_MS


@pytest.fixture(scope="module")
def page(browser: Browser, server: Server) -> Iterator[Page]:
    context = browser.new_context(base_url=server.base)
    context.set_default_timeout(DEADLINE_MS)
    opened = context.new_page()
    opened.goto("/inspector/static/trace.js")
    try:
        yield opened
    finally:
        context.close()


def run(page: Page, body: str, arg: Any = None) -> Any:
    """``body`` run with the module as ``t`` and ``arg``; what it returns, as JSON."""
    return page.evaluate(f"async (arg) => {{ const t = await import('/inspector/static/trace.js'); {body} }}", arg)


def test_rows_are_json_pointers_with_escaped_keys_and_json_types(page: Page) -> None:
    rows = run(page, "return t.flattenVariables({'a/b': {'~x': [null, false, 'x']}, empty: {}})"
                     ".map(r => [r.path, r.type]);")
    assert rows == [["/stat_data/a~1b/~0x/0", "null"], ["/stat_data/a~1b/~0x/1", "boolean"],
                    ["/stat_data/a~1b/~0x/2", "string"], ["/stat_data/empty", "object"]]


def test_an_edit_changes_a_copy_keeps_the_schema_and_refuses_prototype_parts(page: Page) -> None:
    outcome = run(page, """
      const content = { stat_data: { 'a/b': { '~x': [null, false, 'x'] } }, mvu_schema: { source: 'z' } };
      const edited = t.editVariable(content, ['a/b', '~x', '0'], '2');
      let proto = null, moved = null, json = null;
      try { t.editVariable(content, ['__proto__', 'x'], '1'); } catch (e) { proto = e.message; }
      try { t.editVariable(content, ['gone', '0'], '1'); } catch (e) { moved = e.message; }
      try { t.editVariable(content, ['a/b'], '{oops'); } catch (e) { json = e.name; }
      return { edited, original: content, proto, moved, json };
    """)
    assert outcome["edited"] == {"stat_data": {"a/b": {"~x": [2, False, "x"]}}, "mvu_schema": {"source": "z"}}
    assert outcome["original"]["stat_data"]["a/b"]["~x"][0] is None
    assert "unsafe" in outcome["proto"] and outcome["moved"] == "Variable path changed"
    assert outcome["json"] == "SyntaxError"


def test_a_turns_state_is_its_last_version_never_the_current_one(page: Page) -> None:
    found = run(page, """
      const versions = [{ key: 'a0', source: { turn: 1 } }, { key: 'a', source: { turn: 1 } },
                        { key: 'b', source: { turn: 2 } }, { key: 'm', action: { turn: 2 }, source: { turn: 9 } }];
      return [t.roundSnapshot(versions, 1)?.key, t.roundSnapshot(versions, 2)?.key, t.roundSnapshot(versions, 3)];
    """)
    assert found == ["a", "m", None]


def test_changes_list_removals_and_the_last_update_turn_and_unknown_before_stays_unknown(page: Page) -> None:
    found = run(page, """
      const changes = t.variableChanges({ hp: 10, bag: ['a'] }, { hp: 9, bag: [] });
      const versions = [{ key: 'k1', revision: 1, source: { turn: 1 }, beforeAvailable: true,
                          before: { hp: 10, bag: ['a'] }, variables: { stat_data: { hp: 9, bag: [] } } }];
      const rows = t.rowsAt({ stat_data: { hp: 9, bag: [] } }, versions, versions[0]);
      const unknown = t.roundEvents([{ ...versions[0], beforeAvailable: false }], [], 1)[0];
      return { paths: changes.map(c => c.path), present: changes.map(c => [c.beforePresent, c.afterPresent]),
               turn: rows[0].updated.turn, untouched: rows[1].updated?.turn ?? null,
               comparison: unknown.comparisonAvailable, unknownChanges: unknown.changes };
    """)
    assert found["paths"] == ["/stat_data/hp", "/stat_data/bag/0", "/stat_data/bag"]
    assert found["present"] == [[True, True], [True, False], [False, True]]
    assert found["turn"] == 1 and found["untouched"] == 1  # bag became [] in turn 1 as well
    assert (found["comparison"], found["unknownChanges"]) == (False, [])


def test_retried_attempts_stay_apart_and_a_replay_is_no_new_commit(page: Page) -> None:
    rows = run(page, """
      const fact = (phase, extra = {}) => ({ eventId: 'e1', on: 'assistant_message_committed', turn: 1, phase,
                                             ...extra });
      const facts = [fact('started'), fact('failed', { detail: 'MVU_USAGE_CANCELLED' }),
        fact('started'), fact('triggered'), fact('applied', { revision: 1, detail: 'state-committed' }),
        fact('completed', { revision: 1, detail: 'state-committed' }),
        fact('started'), fact('completed', { revision: 1, detail: 'idempotent-replay' })];
      const versions = [{ key: 'e1', kind: 'reply', revision: 1, source: { turn: 1 }, beforeAvailable: true,
                          before: { hp: 10 }, variables: { stat_data: { hp: 9 } } }];
      return t.roundEvents(versions, facts, 1).map(r => ({ status: t.rowStatus(r), failed: r.phases.has('failed'),
        changes: r.changes.length, reason: r.reason ?? null, committed: Boolean(r.version),
        detail: r.detail ?? null }));
    """)
    # Newest first: the replay, the success, the cancelled first try.
    assert rows == [
        {"status": "completed", "failed": False, "changes": 0, "reason": None, "committed": False,
         "detail": "idempotent-replay"},
        {"status": "applied", "failed": False, "changes": 1, "reason": None, "committed": True,
         "detail": "state-committed"},
        {"status": "failed", "failed": True, "changes": 0, "reason": "MVU_USAGE_CANCELLED", "committed": False,
         "detail": "MVU_USAGE_CANCELLED"},
    ]


def test_an_inherited_version_is_a_snapshot_without_trigger_or_before(page: Page) -> None:
    row = run(page, """
      const versions = [{ key: 'i1', kind: 'inherited', inherited: true, revision: 1, source: { turn: 1 },
                          beforeAvailable: false, variables: { stat_data: { hp: 9 } } }];
      const [r] = t.roundEvents(versions, [], 1);
      return { on: r.on, changes: r.changes.length, phases: r.phases.size, status: t.rowStatus(r) };
    """)
    assert row == {"on": "inherited_snapshot", "changes": 0, "phases": 0, "status": "inherited"}


def test_a_skip_reads_as_skipped_with_its_reason_and_an_opening_write_belongs_to_turn_one(page: Page) -> None:
    found = run(page, """
      const facts = [{ eventId: 'x', turn: 1, phase: 'started' }, { eventId: 'x', turn: 1, phase: 'skipped',
                      detail: 'MVU_WRITE_DENIED' }, { eventId: 'o', turn: 0, phase: 'started' }];
      return t.roundEvents([], facts, 1).map(r => [r.eventId, t.rowStatus(r), r.reason ?? null]);
    """)
    assert found == [["o", "started", None], ["x", "skipped", "MVU_WRITE_DENIED"]]
