"""What an event may be and what the store keeps of it (docs/host-protocol.md, DIGEST P-5, C-3)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from mvu_store.errors import Code, MvuError
from mvu_store.host import (
    SessionEvent,
    canonical_event_text,
    event_text,
    has_tool_call,
    message_text,
    user_source_kind,
)
from mvu_store.store_host.events import (
    MAX_BATCH_EVENTS,
    MAX_REPLY_BYTES,
    MAX_USER_TEXT_UNITS,
    keep,
    keep_batch,
)


def kept(raw: dict[str, Any]) -> SessionEvent:
    return keep(raw).event


def test_an_assistant_message_keeps_its_text_flags_and_coordinates_only() -> None:
    event = kept({"seq": 3, "type": "assistant/message", "data": {
        "turn": 2, "step": 1, "interrupted": False, "provider": "openai", "usage": {"tokens": 9},
        "message": {"id": "m2", "model": "x", "content": [
            {"type": "text", "text": "You rest."}, {"type": "image", "url": "https://e/x.png"},
            {"type": "tool-call", "name": "dice", "args": {"n": 6}}, {"type": "text", "text": "_.set('hp', 1, 2);"}]}}})
    assert event.data == {"turn": 2, "step": 1, "interrupted": False, "message": {
        "id": "m2", "content": [{"type": "text", "text": "You rest.\n_.set('hp', 1, 2);"}, {"type": "tool-call"}]}}
    # What the service reads is unchanged by the cut.
    assert message_text(event) == "You rest.\n_.set('hp', 1, 2);"
    assert has_tool_call(event)


def test_a_user_message_keeps_its_source_and_text_within_the_gate_bound() -> None:
    event = kept({"seq": 1, "type": "user/message", "data": {
        "turn": 1, "source": {"kind": "steering"}, "message": {"content": "hello", "attachments": [1]}}})
    assert event.data == {"turn": 1, "message": {"source": {"kind": "steering"},
                                                 "content": [{"type": "text", "text": "hello"}]}}
    assert user_source_kind(event) == "steering" and message_text(event) == "hello"


def test_a_user_text_over_the_gate_bound_grants_nothing_and_is_not_truncated() -> None:
    # Counted in UTF-16 code units: one astral character is two.
    exact = "😀" * (MAX_USER_TEXT_UNITS // 2)
    event = kept({"seq": 1, "type": "user/message", "data": {
        "turn": 1, "message": {"source": {"kind": "user"}, "content": exact}}})
    assert message_text(event) == exact
    over = exact + "a"
    event = kept({"seq": 1, "type": "user/message", "data": {
        "turn": 1, "message": {"source": {"kind": "user"}, "content": over}}})
    assert message_text(event) == ""
    assert event.data["message"]["textUnits"] == MAX_USER_TEXT_UNITS + 1
    assert len(event.data["message"]["textSha256"]) == 64


def test_request_assembly_keeps_its_turn_and_the_messages_digest_not_the_messages() -> None:
    event = kept({"seq": 5, "type": "request/assembly", "data": {"turn": 3, "messages": [{"role": "system"}],
                                                                  "metadata": {"model": "m"}}})
    # The digest is what JavaScript's JSON.stringify gives for the messages.
    assert event.data == {"turn": 3, "observed": [],
                          "messagesSha256": hashlib.sha256(b'[{"role":"system"}]').hexdigest()}


def test_a_reply_of_exactly_the_limit_is_kept_and_one_byte_more_is_refused() -> None:
    def reply(text: str) -> dict[str, Any]:
        return {"seq": 0, "type": "assistant/message", "data": {"turn": 1, "message": {"id": "m", "content": text}}}

    assert message_text(kept(reply("é" * (MAX_REPLY_BYTES // 2)))) == "é" * (MAX_REPLY_BYTES // 2)
    with pytest.raises(MvuError) as refused:
        keep(reply("é" * (MAX_REPLY_BYTES // 2) + "x"))
    assert refused.value.code == Code.LIMIT and refused.value.details["limit"] == MAX_REPLY_BYTES


@pytest.mark.parametrize(("raw", "field"), [
    ({"seq": 0, "type": "turn/start", "data": {"turn": 1}, "extra": 1}, "extra"),
    ({"seq": -1, "type": "turn/start", "data": {"turn": 1}}, "seq"),
    ({"seq": True, "type": "turn/start", "data": {"turn": 1}}, "seq"),
    ({"seq": 0, "type": "turn/started", "data": {"turn": 1}}, "type"),
    ({"seq": 0, "type": "turn/start", "data": {"turn": "1"}}, "data.turn"),
    ({"seq": 0, "type": "turn/start", "data": {}}, "data.turn"),
    ({"seq": 0, "type": "turn/start", "data": []}, "data"),
    ({"seq": 0, "type": "turn/end", "data": {"turn": 1, "reason": "completed"}}, "data.reason"),
    ({"seq": 0, "type": "turn/end", "data": {"turn": 1, "reason": {"kind": ""}}}, "data.reason.kind"),
    ({"seq": 0, "type": "assistant/message", "data": {"turn": 1}}, "data.message"),
    ({"seq": 0, "type": "assistant/message", "data": {"turn": 1, "message": {"id": 5}}}, "data.message.id"),
    ({"seq": 0, "type": "assistant/message", "data": {"turn": 1, "interrupted": 1, "message": {"id": "m"}}},
     "data.interrupted"),
    ({"seq": 0, "type": "assistant/message",
      "data": {"turn": 1, "message": {"id": "m", "content": [{"type": "text", "text": 1}]}}},
     "data.message.content[0].text"),
    ({"seq": 0, "type": "user/message", "data": {"turn": 1, "message": {"content": "hi"}}}, "data.message.source"),
    ({"seq": 0, "type": "session/end-seed", "data": {"isSeeded": True}}, "data"),
])
def test_bad_events_are_refused_naming_the_field(raw: dict[str, Any], field: str) -> None:
    with pytest.raises(MvuError) as refused:
        keep(raw)
    assert refused.value.code == Code.OPERATION
    assert refused.value.details["field"] == field


@pytest.mark.parametrize("raw", [
    {"seq": 0, "type": "user/message", "data": {"turn": 1, "message": {"source": {"kind": "user"},
                                                                       "content": "a\ud800"}}},
    {"seq": 0, "type": "user/message", "data": {"turn": 1, "message": {"source": {"kind": "a\ud800"}}}},
    {"seq": 0, "type": "assistant/message", "data": {"turn": 1, "message": {"id": "m\udfff"}}},
    {"seq": 0, "type": "turn/end", "data": {"turn": 1, "reason": {"kind": "\ud800"}}},
])
def test_a_lone_surrogate_is_refused_rather_than_stored(raw: dict[str, Any]) -> None:
    with pytest.raises(MvuError) as refused:
        keep(raw)
    assert refused.value.code == Code.JSON


def test_an_assistant_message_needs_its_id() -> None:
    with pytest.raises(MvuError) as refused:
        keep({"seq": 0, "type": "assistant/message", "data": {"turn": 1, "message": {"content": "hi"}}})
    assert refused.value.details["field"] == "data.message.id"


def test_configuration_events_are_kept_as_sent_within_their_bound() -> None:
    data = {"provider": "p", "model": "m", "reasoningEffort": "high"}
    assert kept({"seq": 0, "type": "model/selection", "data": data}).data == data
    with pytest.raises(MvuError) as refused:
        keep({"seq": 0, "type": "session/title", "data": {"title": "x" * 5000}})
    assert refused.value.code == Code.LIMIT


def test_a_batch_is_consecutive_non_empty_and_bounded() -> None:
    start = {"type": "turn/start", "data": {"turn": 1}}
    assert [k.event.seq for k in keep_batch([{"seq": 4, **start}, {"seq": 5, **start}])] == [4, 5]
    for bad in ([], "x", [{"seq": 4, **start}, {"seq": 6, **start}], [{"seq": 4, **start}, {"seq": 4, **start}]):
        with pytest.raises(MvuError) as refused:
            keep_batch(bad)
        assert refused.value.code == Code.OPERATION
    with pytest.raises(MvuError) as refused:
        keep_batch([{"seq": n, **start} for n in range(MAX_BATCH_EVENTS + 1)])
    assert refused.value.code == Code.LIMIT


def test_the_kept_text_is_canonical_so_a_resent_event_compares_equal() -> None:
    one = keep({"seq": 0, "type": "turn/end", "data": {"reason": {"kind": "completed"}, "turn": 1}})
    two = keep({"type": "turn/end", "data": {"turn": 1.0, "reason": {"kind": "completed"}}, "seq": 0})
    assert one.text == two.text == '{"reason":{"kind":"completed"},"turn":1}'


@pytest.mark.parametrize("raw", [
    {"seq": 0, "type": "turn/start", "data": {"turn": 0}},
    {"seq": 7, "type": "user/message", "data": {"turn": 3, "message": {"source": {"kind": "user"},
                                                                      "content": "你好 \"quoted\" \\ \u2028 🙂"}}},
    {"seq": 12, "type": "model/selection", "data": {"model": "x", "temperature": 0.7, "top": 1.0, "list": [2, {"b": 1,
                                                                                                     "a": None}]}},
])
def test_the_chain_text_put_together_around_the_kept_text_is_the_events_own(raw: dict[str, Any]) -> None:
    item = keep(raw)
    assert canonical_event_text(item.event.seq, item.event.type, item.text) == event_text(item.event)


def test_a_turn_end_keeps_the_turns_time() -> None:
    event = kept({"seq": 4, "type": "turn/end", "data": {"turn": 1, "reason": {"kind": "completed"},
                                                          "at": 1_748_860_200_000, "usage": 3}})
    assert event.data == {"turn": 1, "reason": {"kind": "completed"}, "at": 1_748_860_200_000}
    assert kept({"seq": 4, "type": "turn/end", "data": {"turn": 1, "reason": {"kind": "completed"}}}).data == {
        "turn": 1, "reason": {"kind": "completed"}}
    for bad in (-1, 1.5, "2025-06-02", True):
        with pytest.raises(MvuError) as refused:
            keep({"seq": 4, "type": "turn/end", "data": {"turn": 1, "reason": {"kind": "completed"}, "at": bad}})
        assert refused.value.details["field"] == "data.at"


def test_session_names_keep_the_names_given() -> None:
    assert kept({"seq": 0, "type": "session/names", "data": {"user": "爱丽丝", "char": "白雪"}}).data == {
        "user": "爱丽丝", "char": "白雪"}
    assert kept({"seq": 0, "type": "session/names", "data": {"user": "Ann", "char": None}}).data == {"user": "Ann"}
    assert kept({"seq": 0, "type": "session/names", "data": {}}).data == {}
    for bad, field in (({"user": ""}, "data.user"), ({"char": 7}, "data.char"), ({"nick": "x"}, "data"),
                       ({"user": "x" * 201}, "data.user")):
        with pytest.raises(MvuError) as refused:
            keep({"seq": 0, "type": "session/names", "data": bad})
        assert refused.value.code == Code.OPERATION
        assert refused.value.details["field"] == field


@pytest.mark.parametrize(("kind", "data", "stored"), [
    ("system/message", {"turn": 1, "step": 0, "message": {"content": "rules"}}, {"turn": 1, "step": 0}),
    ("system/message", {"message": {"content": "rules"}}, {}),
    ("step/start", {"turn": 2, "step": 1, "model": "m"}, {"turn": 2, "step": 1}),
    ("request/context", {"turn": 2, "sources": ["x"]}, {"turn": 2}),
    ("request/header", {"header": {"startsSeries": True}, "reason": "r"}, {"header": {"startsSeries": True},
                                                                           "reason": "r"}),
])
def test_request_preparation_events_keep_their_coordinates_not_their_text(kind: str, data: dict[str, Any],
                                                                          stored: dict[str, Any]) -> None:
    assert kept({"seq": 4, "type": kind, "data": data}).data == stored


def test_a_request_header_is_bounded_and_a_step_is_a_count() -> None:
    with pytest.raises(MvuError) as big:
        keep({"seq": 1, "type": "request/header", "data": {"header": {"x": "y" * 5000}}})
    assert big.value.code == Code.LIMIT
    with pytest.raises(MvuError) as step:
        keep({"seq": 1, "type": "step/start", "data": {"turn": 1, "step": -1}})
    assert step.value.code == Code.OPERATION
