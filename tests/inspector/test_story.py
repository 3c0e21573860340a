"""The inspector tells a turn's story, in Chromium against a real ``mvu serve``: the reply with
each command marked by its outcome (a colour and a word), the reason on a click, the commands that
did not apply listed with their messages, values set by the opening and by a manual edit labelled
as such, and trigger events in words.

The expected outcomes follow from the card's declaration and the replies the chats play.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from tests.http.support import MVU, Server
from tests.inspector import support
from tests.inspector.chat import Chat, card, register
from tests.inspector.support import inspector_page

MARKUP = "<img src=x onerror=window.pwned=1>"
SCHEMA = """
export const Schema = z.object({
  hp: z.coerce.number(),
  mood: z.enum(["calm", "wary", "angry"]),
  gold: z.number().min(0),
});
$(() => { registerMvuSchema(Schema); });
"""
MOOD = 'mood: Invalid option: expected one of "calm"|"wary"|"angry"'
REPLY = (f"The troll swings {MARKUP}. _.set('hp', 40);//a club\n"
         "_.set('mood', 'happy');//grins\n"
         "_.set('gold', 1\n"
         "_.set('gold', 2)\n"
         '<JSONPatch>[{"op":"replace","path":"/gold","value":7},{"op":"frobnicate","path":"/hp"}]</JSONPatch>')


@pytest.fixture(scope="module")
def client(server: Server) -> Iterator[httpx.Client]:
    with server.client() as opened:
        register(opened, "troll", card("Troll", "hp: 50\nmood: calm\ngold: 3\n", SCHEMA))
        yield opened


def edit(client: httpx.Client, chat: Chat, change: dict[str, object]) -> int:
    """A manual edit of the chat's state through ``POST /mvu/update``: its new revision."""
    scope = {"authority": "local", "sessionId": chat.session_id}
    read = client.get(f"{MVU}/resource", params={"id": chat.instance(), "scope": json.dumps(scope)}).json()
    content = {**read["content"], "stat_data": {**read["content"]["stat_data"], **change}}
    answer = client.post(f"{MVU}/update", json={"id": read["id"], "scope": scope, "content": content,
                                                "expectedRevision": read["revision"], "operationId": str(uuid.uuid4())})
    assert answer.status_code == 200, answer.text
    revision: int = answer.json()["revision"]
    return revision


@pytest.fixture(scope="module")
def chats(client: httpx.Client) -> dict[str, Chat]:
    troll = Chat.open(client, "troll", "troll")
    troll.play(1, REPLY)
    troll.play(2, "You rest. _.add('hp', 5);//rest")
    edit(client, troll, {"gold": 99})
    ogre = Chat.open(client, "ogre", "troll")
    ogre.play(1, "A near miss: _.sett('hp', 1); and _.set('hp', 45);")
    ogre.play(2, '<JSONPatch>[{"op":"replace","path":"/hp","value":3}]')
    edit(client, ogre, {"gold": 50})
    ogre.play(3, "_.set('__proto__.x', 1);")
    return {"troll": troll, "ogre": ogre}


@pytest.fixture
def page(browser: Browser, server: Server, chats: dict[str, Chat]) -> Iterator[Page]:
    yield from inspector_page(browser, server)


def open_turn(page: Page, session_id: str, turn: int) -> Locator:
    return support.open_turn(page, session_id, turn, "section.story")


def test_the_reply_read_gives_the_text_and_where_each_command_stands(client: httpx.Client,
                                                                     chats: dict[str, Chat]) -> None:
    read = client.get(f"{MVU}/inspector/sessions/troll/turns/1/reply").json()
    assert read["text"] == REPLY and read["messageSeq"] == 2 and read["error"] is None
    assert [(c["op"], c["path"], REPLY[c["start"]:c["end"]].startswith(c["command"][:6])) for c in read["commands"]] \
        == [("set", "/hp", True), ("set", "/mood", True), ("set", "/gold", False)]
    assert read["commands"][2]["patchIndex"] == 0
    missing = client.get(f"{MVU}/inspector/sessions/troll/turns/7/reply")
    assert missing.status_code == 404 and missing.json()["code"] == "MVU_MISSING"
    assert "has not ended" in missing.json()["detail"]


def test_each_command_is_marked_by_its_outcome_with_a_word_and_the_reason_on_a_click(page: Page) -> None:
    turn = open_turn(page, "troll", 1)
    story = turn.locator("section.story")
    marks = story.locator("mark.cmd")
    expect(marks).to_have_count(6)
    assert marks.evaluate_all("ms => ms.map(m => [m.dataset.kind, m.textContent])") == [
        ["applied", "_.set('hp', 40);//a club"],
        ["refused", "_.set('mood', 'happy');//grins"],
        ["ignored", "_.set('gold', 1"],
        ["ignored", "_.set('gold', 2)"],
        ["applied", '{"op":"replace","path":"/gold","value":7}'],
        ["ignored", '{"op":"frobnicate","path":"/hp"}'],
    ]
    # Each mark is followed by its outcome in words, not only a colour.
    assert story.locator(".reply span.tag").all_inner_texts() == [
        "APPLIED", "REFUSED", "IGNORED", "IGNORED", "APPLIED", "IGNORED"]
    refused = story.locator("mark.cmd.refused")
    assert MOOD in str(refused.get_attribute("title"))
    refused.click()
    detail = story.locator(".outcome-detail")
    expect(detail).to_contain_text(MOOD)
    expect(detail).to_contain_text("refused set /mood")
    expect(detail).to_contain_text("MVU_SCHEMA")
    story.locator("mark.cmd.applied").first.press("Enter")
    expect(detail).to_contain_text("applied set /hp: 50 → 40")
    # The reply is text: its markup is shown, never run.
    expect(story.locator(".reply")).to_contain_text(MARKUP)
    assert story.locator("img").count() == 0 and page.evaluate("window.pwned") is None


def test_commands_that_did_not_apply_are_listed_with_their_messages(page: Page) -> None:
    turn = open_turn(page, "troll", 1)
    missed = turn.locator("section.story ul.missed li")
    assert missed.evaluate_all("items => items.map(i => i.dataset.kind)") == ["refused", "ignored", "ignored",
                                                                              "ignored"]
    expect(missed.nth(0)).to_contain_text(MOOD)
    expect(missed.nth(1)).to_contain_text("no ')' closes this set call")
    expect(missed.nth(2)).to_contain_text("a command must end with ';'")
    expect(missed.nth(3)).to_contain_text("frobnicate")
    # The trigger table names the refused command's message too, not only its code.
    reason = turn.locator("table.events tr.event td.reason")
    expect(reason.locator(".diagnostics.refused")).to_contain_text(MOOD)


def test_opening_values_manual_edits_and_events_are_labelled_in_words(page: Page) -> None:
    first = open_turn(page, "troll", 1)
    expect(first.locator("tr[data-path='/stat_data/mood'] td.updated")).to_have_text("set by the opening")
    expect(first.locator("tr[data-path='/stat_data/hp'] td.updated")).to_have_text("turn 1")
    expect(first.locator("table.events tr.event td").first).to_have_text("reply saved · turn 1")
    latest = open_turn(page, "troll", 2)
    expect(latest.locator("tr[data-path='/stat_data/gold'] td.updated")).to_have_text("turn 2 · manual edit")
    edited = latest.locator("table.events tr.event").first
    expect(edited.locator("td").first).to_have_text("manual edit · turn 2")
    expect(edited.locator("td.result")).not_to_contain_text("unknown")
    expect(edited).to_contain_text("/stat_data/gold 7 → 99")


def test_outcomes_join_a_versions_diagnostics_and_changes_to_the_reply(page: Page) -> None:
    found = page.evaluate("""async () => {
      const s = await import('/inspector/static/story.js');
      const reply = { text: "a _.set('x', 1); b _.set('y', 2); c", commands: [
        { command: "_.set('x', 1);", start: 2, end: 16, op: 'set', path: '/x' },
        { command: "_.set('y', 2);", start: 19, end: 33, op: 'set', path: '/y' }] };
      const version = { variables: { update_diagnostics: [{ kind: 'refused', command: "_.set('y', 2);", start: 19,
        end: 33, path: '/y', code: 'MVU_SCHEMA', message: 'y: too big' }],
        delta_data: { changes: [{ path: '/x', previous: 0, value: 1 }] } } };
      const kinds = (list) => list.map((o) => [o.kind, o.path, o.before ?? null, o.after ?? null]);
      const failed = s.replyOutcomes({ error: 'MVU_TIMEOUT', variables: version.variables }, reply);
      const moved = s.segments('zz ' + reply.text, s.replyOutcomes(version, reply));
      return { joined: kinds(s.replyOutcomes(version, reply)), failed: kinds(failed), message: failed[0].message,
               none: kinds(s.replyOutcomes(null, reply)),
               marks: moved.parts.filter((p) => p.outcomes).map((p) => [p.kind, p.text]),
               unplaced: moved.unplaced.length };
    }""")
    assert found["joined"] == [["applied", "/x", 0, 1], ["refused", "/y", None, None]]
    # A failed turn ran nothing.
    assert found["failed"] == [["unrun", "/x", None, None], ["unrun", "/y", None, None]]
    assert "MVU_TIMEOUT" in found["message"]
    assert found["none"] == [["unrun", "/x", None, None], ["unrun", "/y", None, None]]
    # Text that moved (a name put in before the command) is found by the command's text.
    assert found["marks"] == [["applied", "_.set('x', 1);"], ["refused", "_.set('y', 2);"]]
    assert found["unplaced"] == 0


def test_near_misses_skips_after_edits_and_failures_tell_their_own_story(page: Page) -> None:
    near = open_turn(page, "ogre", 1).locator("section.story")
    # A near-miss is shown to its ';', never over the real command after it on its line.
    expect(near.locator("mark.cmd.possible")).to_have_text("_.sett('hp', 1);")
    expect(near.locator("mark.cmd.applied")).to_have_text("_.set('hp', 45);")
    expect(near.locator("ul.missed li.possible")).to_contain_text("not a command")
    # The turn's reply is told by its own version, not by the edit made after it.
    skipped = open_turn(page, "ogre", 2).locator("section.story")
    expect(skipped.locator("mark.cmd.ignored")).to_have_text("<JSONPatch>")
    expect(skipped.locator("ul.missed li.ignored")).to_contain_text("is not closed by </JSONPatch>")
    failed = open_turn(page, "ogre", 3)
    expect(failed.locator("section.story p.failure")).to_contain_text("'__proto__.x'")
    expect(failed.locator("section.story")).to_contain_text("No command ran.")
    expect(failed.locator("section.story")).not_to_contain_text("Every command applied.")
    reason = failed.locator("table.events tr.event td.reason")
    expect(reason.locator(".diagnostics.refused")).to_contain_text("'__proto__.x'")
