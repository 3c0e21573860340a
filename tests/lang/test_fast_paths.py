"""Each fast path of the extractor and the value reader returns exactly what its general path
returns, or hands the text over to it."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mvu_store.errors import MvuError
from mvu_store.lang import commands, parse_commands
from mvu_store.lang.commands import split_arguments
from mvu_store.lang.paths import _checked, _segments, parse_path, trim_quotes

SETTINGS = settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _joined(*pieces: str, max_size: int = 40) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(list(pieces)) | st.text(max_size=2), max_size=max_size).map("".join)


bodies = _joined(",", " ", "'", '"', "`", "a", "1", ", ", "\\", "(", ")", "[", "]", "{", "}")
path_texts = _joined(".", "a", "0", " ", "[", "]", "'", '"', "`", "\\", "..", "x.y")


@SETTINGS
@given(bodies)
def test_splitting_arguments_matches_the_character_scan(body: str) -> None:
    assert split_arguments(body) == commands._split_scanning(body)


def _general_path(raw: str) -> Any:
    try:
        return _checked(_segments(trim_quotes(raw.strip())), raw)
    except MvuError as error:
        return error.code, error.message


@SETTINGS
@given(path_texts)
def test_a_dotted_path_matches_the_general_reader(raw: str) -> None:
    try:
        fast: Any = parse_path(raw)
    except MvuError as error:
        fast = error.code, error.message
    assert fast == _general_path(raw)


def test_a_long_dotted_path_is_refused_the_same_way() -> None:
    raw = ".".join(["a"] * 500)
    assert _general_path(raw)[0] == "MVU_PATH"
    with pytest.raises(MvuError, match="segments"):
        parse_path(raw)


replies = _joined(
    "_.set(", "_.add(", "_.delete(", ")", "(", ");", ";", "//r\n", "'", '"', "`", "\\", ",", "a.b", "1", max_size=50
)


def _extracted(text: str) -> Any:
    try:
        return parse_commands(text)
    except MvuError as error:
        return error.code


@SETTINGS
@given(replies)
def test_extraction_without_the_simple_close_is_the_same(text: str) -> None:
    fast = _extracted(text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(commands, "simple_close", lambda text, open_at: None)
        assert _extracted(text) == fast
