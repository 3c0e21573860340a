"""The store host's memory of recent appends, which a prompt read's lease reads: bounded per
session and across sessions, and holding only what the lease rules read."""

from __future__ import annotations

import pytest

from mvu_store.host import SessionEvent
from mvu_store.store_host import recent
from mvu_store.store_host.recent import KEPT_EVENTS, RecentAppends


def _steps(first: int, count: int) -> list[SessionEvent]:
    return [SessionEvent(seq, "step/start", {"turn": 1, "step": seq}) for seq in range(first, first + count)]


def test_a_watch_sees_what_was_appended_after_it_until_more_than_are_kept() -> None:
    appends = RecentAppends()
    appends.add("s1", _steps(0, 3))
    since = appends.watch("s1")
    assert since() == []
    appends.add("s1", _steps(3, KEPT_EVENTS))
    assert since() == _steps(3, KEPT_EVENTS)
    appends.add("s1", _steps(3 + KEPT_EVENTS, 1))
    assert since() is None  # the first of them is forgotten: the read is no longer current


def test_the_least_recently_appended_session_is_forgotten_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recent, "KEPT_SESSIONS", 2)
    appends = RecentAppends()
    first, second = appends.watch("s1"), appends.watch("s2")
    appends.add("s1", _steps(0, 1))
    appends.add("s3", _steps(0, 1))  # s2 was followed least recently
    assert first() == _steps(0, 1) and second() is None


def test_an_event_is_kept_without_its_message_text_or_an_assemblys_evidence() -> None:
    appends = RecentAppends()
    since = appends.watch("s1")
    observed = [{"code": "MVU_RESOURCE_VERSION", "resourceId": "mvu:r", "blockId": "b" * 300}] * 256
    appends.add("s1", [
        SessionEvent(0, "user/message", {"turn": 1, "message": {"content": [{"type": "text", "text": "hi"}]}}),
        SessionEvent(1, "request/assembly", {"turn": 1, "owner": "dsh-prompt-assembler", "messagesSha256": "0" * 64,
                                             "observed": observed}),
    ])
    assert since() == [SessionEvent(0, "user/message", {"turn": 1}), SessionEvent(1, "request/assembly", {"turn": 1})]
