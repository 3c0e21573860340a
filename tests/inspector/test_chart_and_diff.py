"""The inspector's session views in Chromium against a real ``mvu serve``: each numeric variable
charted over the turns (a point opens its turn; the charts stay bounded) and the comparison of two
turns, or of a turn and a branch's, through ``GET /mvu/diff``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import parse_qs, urlparse

import httpx
import pytest
from playwright.sync_api import Browser, Locator, Page, Route, expect

from tests.http.support import Server
from tests.inspector.chat import Chat, card, register
from tests.inspector.support import inspector_page


@pytest.fixture(scope="module")
def client(server: Server) -> Iterator[httpx.Client]:
    with server.client() as opened:
        register(opened, "climber", card("Climber", "hp: 50\ngold: 3\nname: Ally\n"))
        yield opened


@pytest.fixture(scope="module")
def chats(client: httpx.Client) -> dict[str, Chat]:
    climb = Chat.open(client, "climb", "climber")
    climb.play(1, "_.set('hp', 40);//a fall")
    climb.play(2, "_.set('gold', 9);//a purse")
    branch = climb.fork("climb-b")
    climb.play(3, "_.set('hp', 45);//rest")
    branch.play(3, "_.set('hp', 10);//a worse fall")
    return {"climb": climb, "climb-b": branch}


@pytest.fixture
def page(browser: Browser, server: Server, chats: dict[str, Chat]) -> Iterator[Page]:
    yield from inspector_page(browser, server)


def open_view(page: Page, session_id: str, name: str) -> Locator:
    page.click(f"nav button[data-session='{session_id}']")
    view = page.locator(f"details.{name}")
    view.locator("summary").click()
    return view


def test_each_numeric_variable_is_charted_over_the_turns_and_a_point_opens_its_turn(page: Page) -> None:
    charts = open_view(page, "climb", "chart")
    hp = charts.locator("figure.series[data-path='/stat_data/hp']")
    expect(hp.locator("circle.point")).to_have_count(4)  # the opening and three turns
    assert hp.locator("circle.point").evaluate_all("ps => ps.map(p => [p.dataset.turn, p.textContent])") == [
        ["0", "opening: 50"], ["1", "turn 1: 40"], ["2", "turn 2: 40"], ["3", "turn 3: 45"]]
    expect(hp.locator("figcaption")).to_have_text("/stat_data/hp 40 … 50 · opening – turn 3")
    assert charts.locator("figure.series").evaluate_all("fs => fs.map(f => f.dataset.path)") == [
        "/stat_data/gold", "/stat_data/hp"]  # a name is not a number
    # The highest value is drawn highest: y grows downwards in SVG.
    ys = hp.locator("circle.point").evaluate_all("ps => ps.map(p => Number(p.getAttribute('cy')))")
    assert ys[0] < ys[3] < ys[1]
    hp.locator("circle.point[data-turn='2']").click()
    turn = page.locator("article.turn[data-turn='2']")
    expect(turn.locator("details.changes")).to_have_attribute("open", "")
    expect(turn.locator("tr[data-path='/stat_data/gold'] td.value")).to_have_text("9")
    hp.locator("circle.point[data-turn='1']").press("Enter")
    expect(page.locator("article.turn[data-turn='1'] details.changes")).to_have_attribute("open", "")


def test_the_charts_are_bounded_in_series_and_points(page: Page) -> None:
    found = page.evaluate("""async () => {
      const c = await import('/inspector/static/chart.js');
      const history = Array.from({ length: 500 }, (_, i) => ({ key: `k${i}`, source: { turn: i + 1 },
        variables: { stat_data: Object.fromEntries(Array.from({ length: 20 }, (_, n) => [`v${n}`, i * n])) } }));
      history.splice(3, 0, { key: 'f', error: 'MVU_TIMEOUT', source: { turn: 4 },
                             variables: { stat_data: { v1: -1 } } });
      const { series, total } = c.numericSeries(history);
      return { total, count: series.length, points: series.reduce((n, s) => n + s.points.length, 0),
               each: series[1].points.length, first: series[1].points[0], last: series[1].points.at(-1),
               failed: c.numericSeries(history.slice(0, 5)).series[1].points.map((p) => p.value) };
    }""")
    assert (found["total"], found["count"]) == (20, 12)
    assert found["points"] <= 1000 and found["each"] == 83
    assert found["first"] == {"turn": 1, "value": 0} and found["last"] == {"turn": 500, "value": 499}
    assert found["failed"] == [0, 1, 2, 3]  # the failed version changed nothing


def test_two_points_are_compared_through_the_diff_read(page: Page, chats: dict[str, Chat]) -> None:
    asked: list[dict[str, list[str]]] = []
    answer = {"from": {"id": "a", "revision": 1, "versionKey": "k1"},
              "to": {"id": "b", "revision": 2, "versionKey": "k2"},
              "changes": [{"path": "/hp", "op": "replace", "before": 40, "after": 10},
                          {"path": "/bag", "op": "add", "after": ["<b>rope</b>"]},
                          {"path": "/gold", "op": "remove", "before": 9}], "truncated": True}

    def diff(route: Route) -> None:
        asked.append(parse_qs(urlparse(route.request.url).query))
        route.fulfill(status=200, content_type="application/json", body=json.dumps(answer))

    page.route("**/api/v1/mvu/diff?*", diff)
    compare = open_view(page, "climb", "compare")
    compare_turn_one_with_the_branch(compare)
    rows = compare.locator("table.diff tbody tr")
    expect(rows).to_have_count(3)
    assert rows.evaluate_all("rs => rs.map(r => [...r.cells].map(c => c.textContent))") == [
        ["/hp", "changed", "40", "10"], ["/bag", "added", "Absent", '[\n  "<b>rope</b>"\n]'],
        ["/gold", "removed", "9", "Absent"]]
    expect(compare.locator(".diff-result .note").first).to_have_text(
        "climb turn 1 (r1) → climb-b turn 3 (r2): 3 changes")
    expect(compare.locator(".diff-result")).to_contain_text("Only the first changes are listed.")
    assert compare.locator("b").count() == 0
    [query] = asked
    own, branch = chats["climb"].instance(), chats["climb-b"].instance()
    assert {k: v[0] for k, v in query.items()} == {
        "id": own, "scope": json.dumps({"authority": "local", "sessionId": "climb"}, separators=(",", ":")),
        "from": "1", "to": "1", "toId": branch}


def compare_turn_one_with_the_branch(compare: Locator) -> None:
    """Ask the compare view for climb's turn 1 against climb-b's last turn (its turn 3)."""
    expect(compare.locator("select.from option")).to_have_count(4)
    options = compare.locator("select.from option").all_inner_texts()
    assert options == ["opening · r0", "turn 1 · r1", "turn 2 · r2", "turn 3 · r3"]
    compare.locator("select.from").select_option(label="turn 1 · r1")
    compare.locator("select.to-session").select_option("climb-b")
    expect(compare.locator("select.to option").last).to_have_text("turn 3 · r1")
    compare.locator("button.compare-button").click()


def test_a_turn_and_a_branchs_turn_are_compared_by_the_server(page: Page) -> None:
    compare = open_view(page, "climb", "compare")
    compare_turn_one_with_the_branch(compare)
    rows = compare.locator("table.diff tbody tr")
    expect(rows).to_have_count(2)
    # Turn 1 here: hp 40, gold 3; the branch's turn 3: its purse of turn 2, then a worse fall.
    assert rows.evaluate_all("rs => rs.map(r => [...r.cells].map(c => c.textContent))") == [
        ["/gold", "changed", "3", "9"], ["/hp", "changed", "40", "10"]]
    # The same point on both sides is no difference.
    compare.locator("select.to-session").select_option("climb")
    compare.locator("select.to").select_option(label="turn 1 · r1")
    compare.locator("button.compare-button").click()
    expect(compare.locator(".diff-result")).to_contain_text("The two states are the same.")
