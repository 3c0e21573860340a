"""An imported SillyTavern chat in the inspector page (Chromium against a real ``mvu serve``): its
session is listed, each turn shows the state recorded then, its versions are of kind import, and
a turn a host plays after the import shows beside them like any other."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.chats.synthetic import ChatSpec, chat_lines, chat_text
from tests.http.support import MVU, Server
from tests.inspector.support import DEADLINE_MS, inspector_page

SPEC = ChatSpec(language="zh", turns=3, gap=0, swipes=2)


@pytest.fixture(scope="module")
def imported(server: Server) -> dict[str, Any]:
    with server.client() as client:
        answer = client.post(f"{MVU}/chats/import", params={"sessionId": "imported"},
                             content=chat_text(chat_lines(SPEC)), headers={"Content-Type": "application/jsonl"})
        assert answer.status_code == 200, answer.text
        summary: dict[str, Any] = answer.json()
        seq, turn = summary["lastSeq"] + 1, summary["nextTurn"]
        said = {"source": {"kind": "user"}, "content": [{"type": "text", "text": "再来一杯"}]}
        reply = {"id": "next", "content": [{"type": "text", "text": "_.set('艾琳.金币', 99);//小费"}]}
        fed = client.post(f"{MVU}/sessions/imported/events", json={"events": [
            {"seq": seq, "type": "turn/start", "data": {"turn": turn}},
            {"seq": seq + 1, "type": "user/message", "data": {"turn": turn, "message": said}},
            {"seq": seq + 2, "type": "assistant/message", "data": {"turn": turn, "message": reply}},
            {"seq": seq + 3, "type": "turn/end", "data": {"turn": turn, "reason": {"kind": "completed"}}}]})
        assert fed.status_code == 200 and fed.json().get("error") is None, fed.text
    return summary


@pytest.fixture
def page(browser: Browser, server: Server, imported: dict[str, Any]) -> Iterator[Page]:
    yield from inspector_page(browser, server)


def _gold(turn: int) -> int:
    """The gold recorded after turn ``turn``'s shown reply (the chat's own data)."""
    replies = [line for line in chat_lines(SPEC)[1:] if not line.get("is_user")]
    gold: int = replies[turn]["variables"][replies[turn]["swipe_id"]]["stat_data"]["艾琳"]["金币"]
    return gold


def test_each_imported_turn_shows_its_recorded_state_and_the_played_turn_follows(page: Page) -> None:
    page.click("nav button[data-session='imported']")
    for turn, gold in ((2, _gold(2)), (3, _gold(3)), (4, 99)):
        article = page.locator(f"article.turn[data-turn='{turn}']")
        article.locator("summary").click()
        row = article.locator("tr[data-path='/stat_data/艾琳/金币']")
        expect(row.locator("td.value")).to_have_text(json.dumps(gold), timeout=DEADLINE_MS)
    options = page.locator("article.turn[data-turn='3'] select.state option")
    labels = options.evaluate_all("items => items.map(item => item.textContent)")
    assert any("import" in str(label) for label in labels), labels
    # The swipes not shown are branches: sessions of their own in the list.
    expect(page.locator("nav button[data-session='imported.swipe-4-0']")).to_have_count(1)
