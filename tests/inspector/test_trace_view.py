"""The inspector page in Chromium against a real ``mvu serve``, with chats played through the
host routes: the variable table's pages and filter, history that cannot be edited, the edit that
saves, the one that conflicts or is refused and keeps its draft, the running turn that blocks
saving, and the trigger table's rows.

The expected values follow from the chats each test plays (the cards' starting state, the
replies' commands and the cards' declarations), not from a recording of the page.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, Locator, Page, Route, expect
from playwright.sync_api import Error as PlaywrightError

from tests.http.support import MVU, Server
from tests.inspector.chat import Chat, card, register
from tests.inspector.support import DEADLINE_MS, inspector_page, open_turn

MARKUP = "<img src=x onerror=window.pwned=1>"
MANY = "".join(f"value{n:02d}: {n}\n" for n in range(44)) + "名字: 艾莉\n"
"""44 numbers and one Chinese name: 45 rows, pages of 20, 20 and 5."""
SCHEMA = """
export const Schema = z.object({
  hp: z.coerce.number().transform(v => _.clamp(v, 0, 100)),
  gold: z.number().min(0),
});
$(() => { registerMvuSchema(Schema); });
"""


@pytest.fixture(scope="module")
def client(server: Server) -> Iterator[httpx.Client]:
    with server.client() as opened:
        register(opened, "many", card("Many", MANY))
        register(opened, "hero", card("Hero", "hp: 50\ngold: 10\n", SCHEMA))
        register(opened, "html", card("Html", f"note: '{MARKUP}'\n"))
        yield opened


@pytest.fixture(scope="module")
def chats(client: httpx.Client) -> dict[str, Chat]:
    big = Chat.open(client, "big", "many")
    big.play(1, "_.set('value00', -1);//hurt")
    big.play(2, "_.set('value01', 5);//more")
    played = {"big": big}
    for name in ("edit", "conflict", "run", "idle", "down", "leave"):
        chat = Chat.open(client, name, "hero")
        chat.play(1, "You rest. _.set('hp', 40);//rest")
        played[name] = chat
    trig = Chat.open(client, "trig", "hero")
    trig.play(1, "_.add('gold', -100);//the toll\n_.set('hp', 20);//a club")
    trig.play(2, '<JSONPatch>[{"op": "bad", "path": "/hp", "value": 1}]</JSONPatch>')
    played["trig"] = trig
    played["trig-b"] = trig.fork("trig-b")
    html = Chat.open(client, "html", "html")
    html.play(1, "_.set('note', '<b>bold</b>');//markup")
    played["html"] = html
    return played


@pytest.fixture
def page(browser: Browser, server: Server, chats: dict[str, Chat]) -> Iterator[Page]:
    yield from inspector_page(browser, server)


def draft(page: Page, session_id: str, turn: int, path: str, text: str) -> tuple[Locator, Locator]:
    """The turn's section and the row at ``path``, with an edit of it typed but not saved."""
    section = open_turn(page, session_id, turn)
    row = section.locator(f"tr[data-path='{path}']")
    row.locator("button.edit").click()
    row.locator("textarea").fill(text)
    return section, row


def paths(panel: Locator) -> list[str]:
    return [str(path) for path in panel.locator("table.variables tr[data-path]").evaluate_all(
        "rows => rows.map(row => row.dataset.path)")]


def stat_data(client: httpx.Client, chat: Chat) -> dict[str, object]:
    answer = client.get(f"{MVU}/resource", params={"id": chat.instance(), "scope": json.dumps(
        {"authority": "local", "sessionId": chat.session_id})})
    assert answer.status_code == 200, answer.text
    found: dict[str, object] = answer.json()["content"]["stat_data"]
    return found


def test_pages_of_twenty_with_a_filter_and_a_switch_that_go_back_to_page_one(page: Page) -> None:
    turn = open_turn(page, "big", 2)
    label = turn.locator(".page-label")
    prev, nxt = turn.locator("button.prev"), turn.locator("button.next")
    expect(label).to_have_text("Page 1 / 3 · 45 rows · 20 a page")
    assert len(paths(turn)) == 20 and paths(turn)[0] == "/stat_data/value00"
    expect(prev).to_be_disabled()
    nxt.click()
    expect(label).to_have_text("Page 2 / 3 · 45 rows · 20 a page")
    assert paths(turn)[0] == "/stat_data/value20"
    nxt.click()
    expect(label).to_have_text("Page 3 / 3 · 45 rows · 20 a page")
    assert paths(turn) == [*(f"/stat_data/value{n}" for n in range(40, 44)), "/stat_data/名字"]
    expect(nxt).to_be_disabled()
    expect(turn.locator("tr[data-path='/stat_data/名字'] td.value")).to_have_text('"艾莉"')
    # Filtering from page 3 starts again at page 1.
    turn.locator("input.filter").fill("VALUE0")
    expect(label).to_have_text("Page 1 / 1 · 10 rows · 20 a page")
    assert paths(turn) == [f"/stat_data/value0{n}" for n in range(10)]
    turn.locator("input.filter").fill("missing")
    expect(label).to_have_text("Page 0 / 0 · 0 rows · 20 a page")
    expect(turn.locator("table.variables tr.empty")).to_have_text("No matching variables")
    expect(prev).to_be_disabled()
    expect(nxt).to_be_disabled()
    turn.locator("input.filter").fill("")
    nxt.click()
    expect(label).to_have_text("Page 2 / 3 · 45 rows · 20 a page")
    # Switching the state shown starts again at page 1, without the filter.
    turn.locator("select.state").select_option("")
    expect(label).to_have_text("Page 1 / 3 · 45 rows · 20 a page")
    turn.locator("input.filter").fill("value4")
    page.click("nav button[data-session='edit']")
    turn = open_turn(page, "big", 2)
    expect(turn.locator("input.filter")).to_have_value("")
    expect(turn.locator(".page-label")).to_have_text("Page 1 / 3 · 45 rows · 20 a page")


def test_an_earlier_turn_shows_its_own_last_state_and_cannot_be_edited(page: Page) -> None:
    turn = open_turn(page, "big", 1)
    state = turn.locator("select.state")
    expect(state).to_have_value("")  # no "current variables" on a turn that is not the latest
    assert state.locator("option[value='current']").count() == 0
    expect(turn.locator("tr[data-path='/stat_data/value00'] td.value")).to_have_text("-1")
    expect(turn.locator("tr[data-path='/stat_data/value01'] td.value")).to_have_text("1")  # turn 2 set it to 5
    expect(turn.locator("tr[data-path='/stat_data/value00'] td.updated")).to_have_text("turn 1")
    expect(turn.locator(".note.history")).to_have_text("Recorded history: read-only.")
    assert turn.locator("button.edit").count() == 0
    # The version chosen by name is read-only too.
    state.select_option(index=1)
    expect(turn.locator("tr[data-path='/stat_data/value00'] td.value")).to_have_text("-1")
    assert turn.locator("button.edit").count() == 0
    # The latest turn, on its recorded state rather than the current one, offers no edit either.
    latest = open_turn(page, "big", 2)
    latest.locator("select.state").select_option("")
    expect(latest.locator(".note.history")).to_be_visible()
    assert latest.locator("button.edit").count() == 0


def test_an_edit_of_the_latest_state_saves_and_shows_the_validated_value(page: Page, client: httpx.Client,
                                                                          chats: dict[str, Chat]) -> None:
    turn, row = draft(page, "edit", 1, "/stat_data/hp", "150")
    expect(turn.locator("button.next")).to_be_disabled()  # no paging away from a draft
    row.locator("button.save").click()
    # The declaration clamps hp to 100: the page shows what the store kept, not what was typed.
    expect(turn.locator(".notice")).to_have_text("Saved: source revision r2.")
    expect(row.locator("td.value")).to_have_text("100")
    assert row.locator("textarea").count() == 0
    assert stat_data(client, chats["edit"]) == {"hp": 100, "gold": 10}
    expect(turn.locator("table.events tr.event").first.locator("td").first).to_have_text("manual edit · turn 1")


def test_a_conflicting_or_refused_edit_keeps_its_draft_and_says_why(page: Page, client: httpx.Client,
                                                                    chats: dict[str, Chat]) -> None:
    chat = chats["conflict"]
    turn, row = draft(page, "conflict", 1, "/stat_data/gold", "77")
    # Someone else edits first: the page's draft is based on revision 1, the store is at 2.
    other = client.post(f"{MVU}/update", json={
        "id": chat.instance(), "scope": {"authority": "local", "sessionId": "conflict"},
        "content": {"stat_data": {"hp": 40, "gold": 5}}, "expectedRevision": 1, "operationId": "elsewhere"})
    assert other.status_code == 200, other.text
    # The page's poll sees the new revision and says the draft is stale, without reloading over it.
    expect(turn.locator(".notice")).to_have_text("Source updated to r2; the draft is still based on r1.")
    expect(row.locator("textarea")).to_have_value("77")
    row.locator("button.save").click()
    expect(turn.locator(".alert")).to_contain_text("Revision conflict")
    expect(row.locator("textarea")).to_have_value("77")
    assert stat_data(client, chat) == {"hp": 40, "gold": 5}
    # Cancel reads the current state; an edit the declaration refuses keeps its draft and its code.
    row.locator("button.cancel").click()
    expect(row.locator("td.value")).to_have_text("5")
    row.locator("button.edit").click()
    row.locator("textarea").fill("-3")
    row.locator("button.save").click()
    expect(turn.locator(".alert")).to_contain_text("MVU_SCHEMA")
    expect(row.locator("textarea")).to_have_value("-3")
    # Text that is not JSON is never sent.
    row.locator("textarea").fill("{oops")
    row.locator("button.save").click()
    expect(turn.locator(".alert")).to_contain_text("Not sent")
    assert stat_data(client, chat) == {"hp": 40, "gold": 5}


def test_an_idle_current_view_follows_a_newer_revision(page: Page, client: httpx.Client,
                                                      chats: dict[str, Chat]) -> None:
    turn = open_turn(page, "idle", 1)
    row = turn.locator("tr[data-path='/stat_data/hp']")
    expect(row.locator("td.value")).to_have_text("40")
    edited = client.post(f"{MVU}/update", json={
        "id": chats["idle"].instance(), "scope": {"authority": "local", "sessionId": "idle"},
        "content": {"stat_data": {"hp": 12, "gold": 10}}, "expectedRevision": 1, "operationId": "elsewhere"})
    assert edited.status_code == 200, edited.text
    expect(row.locator("td.value")).to_have_text("12")
    expect(turn.locator("select.state")).to_have_value("current")
    expect(turn.locator("table.events tr.event")).to_have_count(2)  # the reply and the edit


def test_a_failed_current_read_shows_no_state_instead_and_history_stays_readable(page: Page) -> None:
    # A test double for the one read that fails: every other route is the real server's.
    page.route(f"**{MVU}/resource?*", lambda route: route.fulfill(
        status=503, content_type="application/problem+json", body='{"code":"MVU_BUSY","detail":"busy"}'))
    page.click("nav button[data-session='down']")
    turn = page.locator("article.turn[data-turn='1']")
    turn.locator("summary").click()
    expect(turn.locator(".alert")).to_have_text("MVU_BUSY: current state unavailable, not editable")
    assert turn.locator("tr[data-path]").count() == 0 and turn.locator("button.edit").count() == 0
    turn.locator("select.state").select_option("")
    expect(turn.locator("tr[data-path='/stat_data/hp'] td.value")).to_have_text("40")
    expect(turn.locator(".note.history")).to_be_visible()
    assert turn.locator("button.edit").count() == 0


def test_leaving_a_session_during_a_save_aborts_it_and_its_answer_shows_nowhere(page: Page) -> None:
    held: list[Route] = []
    page.route(f"**{MVU}/update", lambda route: held.append(route))  # held until the test lets it go
    _, row = draft(page, "leave", 1, "/stat_data/hp", "41")
    with page.expect_request(f"**{MVU}/update"):
        row.locator("button.save").click()
    with page.expect_event("requestfailed", lambda request: request.url.endswith("/update")) as failed:
        page.click("nav button[data-session='idle']")
    assert failed.value.failure is not None  # the page aborted it when it left the session
    expect(page.locator("div.session")).to_have_attribute("data-session", "idle")
    assert len(held) == 1
    with contextlib.suppress(PlaywrightError):  # the browser has dropped it: nothing to let go
        held[0].continue_()
    assert page.locator(".notice").count() == 0


def test_a_running_turn_blocks_saving_and_keeps_the_draft(page: Page, client: httpx.Client,
                                                          chats: dict[str, Chat]) -> None:
    chat = chats["run"]
    turn, row = draft(page, "run", 1, "/stat_data/hp", "33")
    chat.start(2, "I open the door.")
    # The page polls the session: once it sees turn 2 running, the draft can no longer be saved.
    expect(row.locator("button.save")).to_be_disabled(timeout=DEADLINE_MS)
    expect(turn.locator(".note.stopped")).to_contain_text("A turn is running")
    expect(row.locator("textarea")).to_have_value("33")
    expect(page.locator("article.turn[data-turn='2']")).to_have_attribute("data-running", "true")
    turns = client.get(f"{MVU}/inspector/sessions/run/turns").json()
    assert (turns["runningTurn"], turns["turns"][-1]["end"]) == (2, None)
    chat.finish(2, "The door creaks. _.set('hp', 35);//splinter")
    # Turn 2 ended: turn 1 is history now, its draft still cannot be saved.
    expect(page.locator("article.turn[data-turn='2']")).to_have_attribute("data-running", "false",
                                                                          timeout=DEADLINE_MS)
    expect(row.locator("button.save")).to_be_disabled()
    assert stat_data(client, chat) == {"hp": 35, "gold": 10}
    latest = open_turn(page, "run", 2)
    expect(latest.locator("tr[data-path='/stat_data/hp'] button.edit")).to_be_enabled()


def test_the_trigger_table_shows_results_diagnostics_and_skips(page: Page) -> None:
    first = open_turn(page, "trig", 1)
    [row] = first.locator("table.events tr.event").all()
    expect(row.locator("td.result")).to_have_text("applied · r1")
    # The declaration refused the toll (gold may not go below 0) and kept the club.
    expect(row.locator("td.reason .diagnostics")).to_have_text(
        "refused add /gold — gold: Too small: expected number to be >=0 (MVU_SCHEMA)")
    expect(row).to_contain_text("/stat_data/hp")
    assert "/stat_data/gold" not in row.inner_text()
    expect(first.locator("tr[data-path='/stat_data/gold'] td.value")).to_have_text("10")
    # A patch with an operation the store does not know changes nothing: the reply is skipped.
    second = open_turn(page, "trig", 2)
    [skipped] = second.locator("table.events tr.event").all()
    expect(skipped).to_have_attribute("data-status", "skipped")
    expect(skipped.locator("td.reason")).to_contain_text("no-update")


def test_a_branch_labels_what_it_inherited_and_keeps_its_own_history(page: Page) -> None:
    expect(page.locator("nav button[data-session='trig-b']")).to_have_text("trig-b (branch of trig)")
    inherited = open_turn(page, "trig-b", 2)
    rows = inherited.locator("table.events tr.event")
    expect(rows.first.locator("td").first).to_have_text("inherited from the parent session · turn 2")
    expect(rows.first).to_contain_text("Inherited snapshot: before not recorded")
    options = inherited.locator("select.state option").all_inner_texts()
    assert any("inherited snapshot" in option for option in options), options


def test_values_are_shown_as_text_never_as_markup(page: Page) -> None:
    turn = open_turn(page, "html", 1)
    expect(turn.locator("tr[data-path='/stat_data/note'] td.value")).to_have_text('"<b>bold</b>"')
    expect(turn.locator("table.events .change")).to_have_text(f'/stat_data/note {json.dumps(MARKUP)} → "<b>bold</b>"')
    assert turn.locator("img, b").count() == 0
    assert page.evaluate("window.pwned") is None
