"""Openings over HTTP with a real ``mvu serve``: the card registered as JSON, the greeting chosen
with the selection (``greetingIndex``), the state read back through ``GET /mvu/resource``."""

from __future__ import annotations

from tests.cards import baiya
from tests.cards.wire import append, ok, problem, record, register, select, session, turn
from tests.http.support import Server


def test_baiya_opens_at_15_with_her_alternate_greeting_and_switches_before_the_first_send(served: Server) -> None:
    with served.client() as client:
        register(client, "baiya", baiya.card_bytes())
        session(client, "open-1")
        chosen = ok(select(client, "open-1", "baiya", greetingIndex=1))
        assert chosen["greetingIndex"] == 1
        opened = record(client, chosen["instanceId"], "open-1")
        assert opened["content"]["stat_data"]["白娅"]["依存度"] == 15 and opened["revision"] == 0
        first = ok(select(client, "open-1", "baiya", greetingIndex=0))
        assert first["instanceId"] != chosen["instanceId"]
        assert record(client, first["instanceId"], "open-1")["content"]["stat_data"]["白娅"]["依存度"] == 35
        back = ok(select(client, "open-1", "baiya", greetingIndex=1))
        assert back["instanceId"] == chosen["instanceId"]
        answer = append(client, "open-1", turn(0, 1, "_.add('白娅.依存度', 5);", "m1"))
        assert answer["error"] is None
        assert record(client, chosen["instanceId"], "open-1")["content"]["stat_data"]["白娅"]["依存度"] == 20
        problem(select(client, "open-1", "baiya", greetingIndex=0), 403, "MVU_READ_ONLY")


def test_a_failing_greeting_refuses_its_opening_over_http_and_nothing_is_selected(served: Server) -> None:
    with served.client() as client:
        register(client, "baiya-broken", baiya.card_bytes(baiya.BROKEN))
        session(client, "open-2")
        problem(select(client, "open-2", "baiya-broken", greetingIndex=1), 400, "MVU_INITIALIZATION_INVALID")
        problem(select(client, "open-2", "baiya-broken", greetingIndex=5), 404, "MVU_MISSING")
        problem(select(client, "open-2", "baiya-broken", greetingIndex=-1), 400, "MVU_OPERATION")
        chosen = ok(select(client, "open-2", "baiya-broken"))
        assert chosen["greetingIndex"] == 0
