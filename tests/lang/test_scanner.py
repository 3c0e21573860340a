"""The one-pass closing-parenthesis search agrees with the obvious per-candidate scan."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mvu_store.lang.scanner import SIMPLE_WINDOW, find_closes, simple_close


def naive_close(text: str, open_at: int) -> int | None:
    """MagVarUpdate's scan from one '(' (quadratic when run for every candidate)."""
    depth = 1
    quote = ""
    for index in range(open_at + 1, len(text)):
        char = text[index]
        if char in "\"'`" and text[index - 1] != "\\":
            if not quote:
                quote = char
            elif quote == char:
                quote = ""
        elif not quote and char == "(":
            depth += 1
        elif not quote and char == ")":
            depth -= 1
            if depth == 0:
                return index
    return None


texts = st.lists(st.sampled_from(list("()\"'`\\ax")), max_size=80).map("".join)


@settings(max_examples=2000, deadline=None)
@given(texts)
def test_one_pass_equals_the_naive_scan_for_every_candidate(text: str) -> None:
    opens = [index for index, char in enumerate(text) if char == "("]
    expected = {at: close for at in opens if (close := naive_close(text, at)) is not None}
    assert find_closes(text, opens) == expected


def test_a_known_case() -> None:
    text = '(a "x)" (b) )'
    assert find_closes(text, [0, 8]) == {0: 12, 8: 10}
    assert find_closes("(it's)", [0]) == {}  # the apostrophe opens a quote that never closes


call_texts = st.lists(st.sampled_from(["(", ")", '"', "'", "`", "\\", "a", " ", ",", "_.set("]), max_size=60).map(
    "".join
)


@settings(max_examples=3000, deadline=None)
@given(call_texts)
def test_the_simple_close_is_the_exact_close_or_unknown(text: str) -> None:
    for at, char in enumerate(text):
        if char == "(":
            close = simple_close(text, at)
            assert close is None or close == naive_close(text, at)


def test_the_simple_close_settles_ordinary_calls() -> None:
    text = "_.set('hero.hp', \"it's (fine)\", `a\\`b`);"
    assert simple_close(text, 5) == len(text) - 2
    assert simple_close("_.set(a, f(1));", 5) is None  # nested: the track scan decides
    assert simple_close("(" + "x" * SIMPLE_WINDOW + ")", 0) is None  # too far to look
