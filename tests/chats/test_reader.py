"""The chat file reader: what it reads of each line, and every refusal naming its line."""

from __future__ import annotations

import io
import json

import pytest

from mvu_store.chats.reader import MAX_LINE_BYTES, ChatHeader, ChatMessage, read_chat, sent_at
from mvu_store.errors import MvuError
from tests.chats.synthetic import ZOD_PLACEHOLDER, ChatSpec, chat_lines, chat_text


def _read(data: bytes) -> list[ChatHeader | ChatMessage]:
    return list(read_chat(io.BytesIO(data)))


def _lines(*objects: object) -> bytes:
    return "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in objects).encode()


HEADER = {"user_name": "U", "character_name": "C", "create_date": "2024-01-01", "chat_metadata": {}}


def test_a_generated_chat_reads_with_its_swipes_gaps_and_hidden_messages() -> None:
    spec = ChatSpec(language="zh", turns=4, swipes=3, hidden=(3,), gap=1)
    items = _read(chat_text(chat_lines(spec)))
    header, messages = items[0], items[1:]
    assert isinstance(header, ChatHeader) and header.character_name == "艾琳" and header.line == 1
    assert all(isinstance(message, ChatMessage) for message in messages)
    typed = [message for message in messages if isinstance(message, ChatMessage)]
    assert [message.line for message in typed] == list(range(2, 2 + len(typed)))
    assert [message.index for message in typed] == list(range(len(typed)))
    # The greeting and turn 1 are from before MagVarUpdate: no variables.
    assert typed[0].variables is None and typed[1].variables is None and typed[2].variables is None
    swiped = typed[4]  # turn 2's reply
    assert len(swiped.swipes) == 3 and swiped.selected == 2 and swiped.text == swiped.swipes[2]
    state = swiped.state(0)
    assert state is not None and state["schema"] == ZOD_PLACEHOLDER
    assert typed[5].is_user and typed[6].is_system
    assert swiped.sent_at == sent_at("2024-05-01T10:02:30.000Z")


def test_messages_without_swipes_and_elements_without_state() -> None:
    items = _read(_lines(HEADER, {"mes": "hi", "is_user": True, "variables": [{}]},
                         {"mes": "yo", "send_date": 1700000000000, "swipe_id": 0}))
    first, second = items[1], items[2]
    assert isinstance(first, ChatMessage) and first.swipes == ("hi",) and first.state(0) is None
    assert isinstance(second, ChatMessage) and second.variables is None and second.sent_at == 1700000000000


def test_a_human_readable_send_date_gives_no_time() -> None:
    assert sent_at("January 1, 2024 12:00pm") is None
    assert sent_at("2024-01-01T00:00:00") is None  # no time zone
    assert sent_at(True) is None


@pytest.mark.parametrize(("lines", "line", "words"), [
    ([HEADER, "{"], 2, "damaged"),
    ([HEADER, {"mes": "a", "swipes": ["a", "b"], "swipe_id": 2}], 2, "swipe_id 2 is out of range"),
    ([HEADER, {"mes": "a", "swipe_id": 1}], 2, "out of range"),
    ([HEADER, {"mes": "a", "swipes": ["a"], "swipe_id": -1}], 2, "out of range"),
    ([HEADER, {"mes": "a"}, {"mes": "b", "variables": [5]}], 3, "variables[0] must be an object"),
    ([HEADER, {"mes": "a", "variables": {"stat_data": {}}}], 2, "names swipe 'stat_data'"),
    ([HEADER, {"mes": "a", "variables": 5}], 2, "variables must be a list"),
    ([HEADER, {"mes": "a", "variables": [{"stat_data": []}]}], 2, "stat_data must be an object"),
    ([HEADER, {"mes": "a", "variables": [{}, {}]}], 2, "2 elements for 1 swipes"),
    ([HEADER, {"mes": 5}], 2, "mes must be a string"),
    ([HEADER, {"mes": "a", "is_user": "yes"}], 2, "is_user"),
    ([HEADER, {"mes": "a", "swipes": []}], 2, "non-empty list"),
    ([[1]], 1, "header must be an object"),
    ([{"chat_metadata": []}], 1, "chat_metadata must be an object"),
    ([{"chat_metadata": {"variables": 3}}], 1, "chat_metadata.variables"),
    ([{"mes": "hello"}], 1, "not the chat header"),
])
def test_bad_lines_are_refused_naming_the_line(lines: list[object], line: int, words: str) -> None:
    data = b"".join((item if isinstance(item, str) else json.dumps(item)).encode() + b"\n" for item in lines)
    with pytest.raises(MvuError) as caught:
        _read(data)
    assert caught.value.code == "MVU_JSON"
    assert caught.value.details["line"] == line and words in caught.value.message


def test_duplicate_keys_invalid_utf8_and_constants_are_refused() -> None:
    header = json.dumps(HEADER).encode()
    for bad, words in ((b'{"mes": "a", "mes": "b"}', "twice"), (b'{"mes": "\xff"}', "not UTF-8"),
                       (b'{"mes": NaN}', "NaN")):
        with pytest.raises(MvuError) as caught:
            _read(header + b"\n" + bad + b"\n")
        assert caught.value.code == "MVU_JSON" and caught.value.details["line"] == 2, bad
        assert words in caught.value.message


def test_an_empty_file_and_an_overlong_line_are_refused() -> None:
    with pytest.raises(MvuError) as caught:
        _read(b"\n\n")
    assert caught.value.details["line"] == 1
    big = b'{"mes": "' + b"x" * MAX_LINE_BYTES + b'"}\n'
    with pytest.raises(MvuError) as caught:
        _read(json.dumps(HEADER).encode() + b"\n" + big)
    assert caught.value.code == "MVU_LIMIT" and caught.value.details["line"] == 2


def test_blank_lines_are_skipped_and_line_numbers_still_count_them() -> None:
    items = _read(json.dumps(HEADER).encode() + b"\n\n" + b'{"mes": "a"}')
    assert isinstance(items[1], ChatMessage) and items[1].line == 3 and items[1].index == 0


def test_the_older_object_form_of_variables_reads_per_swipe() -> None:
    state = {"stat_data": {"hp": 1}}
    items = _read(_lines(HEADER, {"mes": "b", "swipes": ["a", "b"], "swipe_id": 1, "variables": {"1": state}}))
    message = items[1]
    assert isinstance(message, ChatMessage) and message.state(0) is None and message.state(1) == state
    with pytest.raises(MvuError) as caught:
        _read(_lines(HEADER, {"mes": "a", "variables": {"1": state}}))
    assert caught.value.details["line"] == 2 and "swipe '1'" in caught.value.message
