"""A line as JSON.stringify writes it is read once, in parts; any other line the careful way,
to the same values; a key named twice is refused at any depth, whichever way the line is read."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mvu_store.chats.line_text import written_as
from mvu_store.chats.reader import ChatHeader, ChatMessage, parse_line, read_chat, slot
from mvu_store.chats.states import stored_state
from mvu_store.errors import MvuError
from mvu_store.jsonvalue import js_json
from tests.chats.synthetic import ChatSpec, chat_lines, chat_text

HEADER = {"user_name": "U", "character_name": "C", "create_date": "2024-01-01", "chat_metadata": {}}
DECLARATION = {"type": "object", "properties": {"hp": {"type": "number"}}, "interpreterVersion": 2}
SPECS = [
    ChatSpec(language="zh", turns=5, swipes=3, hidden=(2,), gap=1),
    ChatSpec(language="en", turns=4, gap=0, placeholder_schema=False, padding=3),
    ChatSpec(language="en", turns=3, extra_keys={"initialized_lorebooks": {"a": ["b"]}, "card_notes": "kept"}),
]


def _messages(data: bytes) -> list[ChatMessage]:
    return [item for item in read_chat(io.BytesIO(data)) if isinstance(item, ChatMessage)]


def _dropped_body(raw: dict[str, Any], swipes: list[int]) -> str:
    variables = raw["variables"]
    if isinstance(variables, dict):
        return js_json({**raw, "variables": {**variables, **{str(swipe): None for swipe in swipes}}})
    return js_json({**raw, "variables": [None if place in swipes else item for place, item in enumerate(variables)]})


@pytest.mark.parametrize("spec", SPECS)
def test_a_stringified_line_gives_the_texts_encoding_would(spec: ChatSpec) -> None:
    messages = _messages(chat_text(chat_lines(spec)))
    assert all(message.written is not None for message in messages)
    for message in messages:
        assert message.written is not None and message.written.line() == js_json(message.raw)
        for swipe in range(len(message.swipes)):
            element, parts = message.state(swipe), message.state_text(swipe)
            if element is None:
                continue
            assert parts is not None
            for declaration in (None, DECLARATION):
                fast = stored_state(element, declaration, parts, js_json(declaration) if declaration else None)
                slow = stored_state(element, declaration)
                assert (fast.encoded, fast.restore, fast.variables) == (slow.encoded, slow.restore, slow.variables)
            assert message.written.line([slot(message.raw["variables"], swipe)]) == \
                _dropped_body(message.raw, [swipe])


def test_the_object_form_of_variables_is_put_together_in_its_form() -> None:
    state = {"stat_data": {"hp": 1}, "schema": "placeholder", "display_data": {}}
    line = {"mes": "b", "swipes": ["a", "b"], "swipe_id": 1, "variables": {"1": state, "0": {}}, "extra": {}}
    [message] = _messages(chat_text([HEADER, line]))
    assert message.written is not None and message.state_text(1) is not None
    assert message.written.line(["1"]) == _dropped_body(line, [1])
    assert stored_state(state, None, message.state_text(1)).encoded == stored_state(state, None).encoded


@pytest.mark.parametrize(("text", "stringified"), [
    ('{"mes": "a", "variables": [{"stat_data": {"hp": 1}}]}', False),  # spaces
    ('{"mes":"a","variables":[{"stat_data":{"hp":1.0}}]}', False),  # a number JavaScript writes as 1
    ('{"mes":"\\u0061","variables":[{"stat_data":{"hp":1}}]}', False),  # an escape it would not write
    ('{"mes":"a\\/b","variables":[{"stat_data":{"hp":1e2}}]}', False),
    ('\t{"mes":"a","variables":[{"stat_data":{"hp":1}}]} \r', True),  # whitespace around is no difference
])
def test_a_line_written_otherwise_reads_to_the_same_values(text: str, stringified: bool) -> None:
    [message] = _messages(js_json(HEADER).encode() + b"\n" + text.encode() + b"\n")
    value = json.loads(text)
    assert message.raw["mes"] == value["mes"]
    assert message.state(0) == {"stat_data": {"hp": int(value["variables"][0]["stat_data"]["hp"])}}
    assert (message.written is not None) == stringified


@pytest.mark.parametrize("line", [
    '{"mes":"a","mes":"b"}',
    '{"mes":"a","extra":{"model":"x","model":"x"}}',  # the same value twice
    '{"mes":"a","swipe_info":[{},{"at":1,"at":2}],"swipes":["a","b"]}',
    '{"mes":"a","variables":[{"stat_data":{"hp":1},"stat_data":{"hp":1}}]}',
    '{"mes":"a","variables":[{"stat_data":{"a":{"b":[{"c":1,"c":1}]}}}]}',
    '{"mes":"a","variables":[{"stat_data":{"hp":1},"schema":"z","schema":"z"}]}',
    '{"mes":"a","variables":{"0":{"stat_data":{}},"0":{"stat_data":{}}}}',
    '{"mes":"a","variables":[{"stat_data":{}}],"variables":[{"stat_data":{}}]}',
    '{"mes":"a","variables":[{"stat_data":{"x":{"":1,"":1}}}]}',
])
def test_a_key_named_twice_is_refused_at_any_depth_naming_the_line(line: str) -> None:
    for separators in ((",", ":"), (", ", ": ")):  # as JSON.stringify writes, and otherwise
        header = json.dumps(HEADER, separators=separators).encode()
        before = json.dumps({"mes": "ok"}, separators=separators).encode()
        text = line if separators == (",", ":") else line.replace('","', '", "').replace('":', '": ')
        with pytest.raises(MvuError) as caught:
            _messages(header + b"\n" + before + b"\n" + text.encode() + b"\n")
        assert caught.value.code == "MVU_JSON" and caught.value.details["line"] == 3, text
        assert "twice" in caught.value.message and "key" in caught.value.details


def _shown_then(element: dict[str, Any], after: str) -> bytes:
    """A file whose first message shows ``element``, then the line ``after``."""
    return chat_text([HEADER, {"mes": "a", "swipes": ["a"], "swipe_id": 0, "variables": [element]}]) + \
        after.encode() + b"\n"


@pytest.mark.parametrize("line", [
    '{"mes":"b","variables":[{"stat_data":{"hp":1,"hp":1},"display_data":{"hp":1}}]}',
    '{"mes":"b","variables":[{"stat_data":{"hp":1},"display_data":{"hp":1,"hp":1}}]}',
    '{"mes":"b","variables":[{"stat_data":{"hp":1},"display_data":{"hp":1}},{"stat_data":{"hp":1,"hp":1}}]}',
])
def test_a_key_named_twice_in_a_state_equal_to_one_written_before_is_refused(line: str) -> None:
    # The line before shows {"hp": 1}: its text is tried for every value equal to it.
    with pytest.raises(MvuError) as caught:
        _messages(_shown_then({"stat_data": {"hp": 1}, "display_data": {"hp": 1}}, line))
    assert caught.value.details["line"] == 3 and "twice" in caught.value.message


@pytest.mark.parametrize(("shown", "element"), [
    ({"stat_data": {"hp": True}}, {"stat_data": {"hp": 1}, "display_data": {"hp": 1}}),  # 1 == True
    ({"stat_data": {"a": 1, "b": 2}}, {"stat_data": {"b": 2, "a": 1}, "display_data": {"a": 1, "b": 2}}),
    ({"stat_data": {"hp": 0}}, {"stat_data": {"hp": False}, "display_data": {"hp": 0}}),
    ({"stat_data": {"hp": 1}}, {"stat_data": {"hp": 1}, "display_data": {"hp": 1}, "delta_data": {"hp": 1}}),
])
def test_values_equal_to_ones_written_before_are_written_as_they_are(shown: dict[str, Any],
                                                                     element: dict[str, Any]) -> None:
    """``==`` takes 1 for true and ignores the key order: the texts given are the line's own."""
    line = {"mes": "b", "is_user": True, "variables": [element]}
    _, message = _messages(_shown_then(shown, js_json(line)))
    assert message.written is not None and message.written.line() == js_json(line)
    assert message.state(0) == element and json.dumps(message.state(0)) == json.dumps(element)
    parts = message.state_text(0)
    assert parts is not None and stored_state(element, None, parts).encoded == stored_state(element, None).encoded


def test_a_key_named_twice_in_the_header_is_refused() -> None:
    for header in ('{"user_name":"U","chat_metadata":{},"user_name":"V"}',
                   '{"chat_metadata":{"variables":{"stat_data":{"a":1,"a":1}}}}'):
        with pytest.raises(MvuError) as caught:
            list(read_chat(io.BytesIO(header.encode() + b"\n")))
        assert caught.value.details["line"] == 1 and "twice" in caught.value.message


def test_a_file_of_lines_written_otherwise_reads_each_line_carefully() -> None:
    lines = chat_lines(ChatSpec(language="en", turns=3, gap=0))
    spaced = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()
    items = list(read_chat(io.BytesIO(spaced)))
    assert isinstance(items[0], ChatHeader)
    assert all(isinstance(item, ChatMessage) and item.written is None for item in items[1:])
    assert [item.raw for item in items[1:]] == lines[1:]
    assert [item.raw for item in items[1:]] == [item.raw for item in _messages(chat_text(lines))]


def test_written_as_says_no_for_what_is_no_object() -> None:
    assert written_as([1], "[1]") is None and written_as("a", '"a"') is None


@pytest.mark.parametrize(("element", "code"), [
    ({"stat_data": {"a": {"__proto__": 1}}}, "MVU_PATH"),
    ({"stat_data": {"list": [{"x": {"constructor": {}}}]}, "schema": "z"}, "MVU_PATH"),
    ({"stat_data": {"prototype": 1}, "schema": "z"}, "MVU_PATH"),
    ({"stat_data": {"a": "__proto__", "b": ["constructor"]}}, None),  # values, not keys
    ({"stat_data": {"a": 1}, "display_data": {"__proto__": 1}}, None),  # outside stat_data
    ({"stat_data": {"deep": json.loads("[" * 70 + "]" * 70)}}, "MVU_LIMIT"),
])
def test_a_stringified_line_is_held_to_the_bounds_as_any_other(element: dict[str, Any], code: str | None) -> None:
    [message] = _messages(chat_text([HEADER, {"mes": "a", "variables": [element]}]))
    parts = message.state_text(0)
    assert parts is not None

    def outcome(written: Any) -> tuple[str | None, Any]:
        try:
            return None, stored_state(element, None, written).encoded
        except MvuError as error:
            return error.code, error.details

    assert outcome(parts) == outcome(None) and outcome(parts)[0] == code


_KEYS = st.sampled_from(["a", "b", "stat_data", "schema", "variables", "键", "", 'q"', "x\\y"])
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=5)
    | st.floats(allow_nan=False, allow_infinity=False).filter(lambda number: not number.is_integer()),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4), max_leaves=20)


def _with_twice(value: Any, target: int, counter: list[int]) -> str:
    """``value`` as js_json writes it, except that its ``target``-th object (in the order they
    are written) names its first key a second time, last."""
    if isinstance(value, list):
        return "[" + ",".join(_with_twice(item, target, counter) for item in value) + "]"
    if not isinstance(value, dict):
        return js_json(value)
    place = counter[0]
    counter[0] += 1
    members = [f"{js_json(key)}:{_with_twice(item, target, counter)}" for key, item in value.items()]
    if place == target and value:
        key = next(iter(value))
        members.append(f"{js_json(key)}:{js_json(value[key])}")
    return "{" + ",".join(members) + "}"


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_KEYS, _JSON, max_size=5), st.integers(0, 30))
def test_any_key_named_twice_in_a_stringified_line_is_refused(message: dict[str, Any], target: int) -> None:
    line = _with_twice(message, target, [0])
    if line == js_json(message):  # no object to name a key twice in
        value, parts = parse_line(line, 3)
        assert value == message and parts is not None and parts.line() == line
        return
    with pytest.raises(MvuError) as caught:
        parse_line(line, 3)
    assert caught.value.details["line"] == 3 and "twice" in caught.value.message
