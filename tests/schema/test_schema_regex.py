"""S-9: finite anchored patterns on our own NFA, never the platform regex engine."""

from __future__ import annotations

import pytest

from mvu_store.errors import MvuError
from mvu_store.js.values import Budget
from mvu_store.schema.regex import compile_regex


def matches(pattern: str, text: str) -> bool:
    return compile_regex(pattern, "", Budget()).matches(text, Budget())


@pytest.mark.parametrize(("pattern", "yes", "no"), [
    (r"^abc$", ["abc"], ["ab", "abcd", "xabc"]),
    (r"^\d{2,4}$", ["12", "1234"], ["1", "12345", "1a"]),
    (r"^[a-c]?x$", ["x", "bx"], ["dx", "abx"]),
    (r"^(red|green|blue)-\d$", ["red-1", "blue-9"], ["pink-1", "red-10"]),
    (r"^(?:ab|a)(?:c)?$", ["a", "ab", "abc", "ac"], ["b", "abcc"]),
    (r"^[^0-9]{3}$", ["abc", "中文字"], ["ab1", "abcd"]),
    (r"^[\u4e00-\u9fa5]{1,4}$", ["勇者", "魔王大人"], ["hero", "勇者大人们"]),
    (r"^\w\s\W$", ["a !", "a  "], ["ab!", "!a!"]),
    (r"^a\.b\-c\\$", ["a.b-c\\"], ["axb-c\\"]),
    (r"^(a(b(c)?)?)?$", ["", "a", "ab", "abc"], ["ac", "bc"]),
])
def test_patterns_match_like_javascript(pattern: str, yes: list[str], no: list[str]) -> None:
    for text in yes:
        assert matches(pattern, text), text
    for text in no:
        assert not matches(pattern, text), text


@pytest.mark.parametrize(("pattern", "flags"), [
    ("abc", ""), ("^abc", ""), ("^abc\\$", ""), ("abc$", ""), ("^a|b$", ""), ("^a*$", ""), ("^a+$", ""),
    ("^a{2,}$", ""), ("^a{0,65}$", ""), ("^.$", ""), (r"^(a)\1$", ""), ("^(?=a)a$", ""),
    ("^(?!a)b$", ""), ("^(?<n>a)$", ""),
    (r"^\bA$", ""), ("^a??$", ""), ("^a$", "i"), ("^a$", "g"), ("^[a-$", ""), ("^(a$", ""), ("^[z-a]$", ""),
])
def test_unsupported_patterns_are_refused(pattern: str, flags: str) -> None:
    with pytest.raises(MvuError) as refused:
        compile_regex(pattern, flags, Budget())
    assert refused.value.code in {"MVU_UNSUPPORTED", "MVU_LIMIT"}


def test_pattern_length_group_depth_and_state_limits() -> None:
    for pattern in ["^" + "a" * 300 + "$", "^" + "(" * 17 + "a" + ")" * 17 + "$",
                    "^(((a{0,64}){0,64}){0,64})$"]:
        with pytest.raises(MvuError) as refused:
            compile_regex(pattern, "", Budget())
        assert refused.value.code in {"MVU_LIMIT", "MVU_UNSUPPORTED"}


def test_blow_up_patterns_match_in_linear_state_sets() -> None:
    pattern = "^(a|aa){0,64}(a|aa){0,64}b$"
    assert not matches(pattern, "a" * 60 + "c")
    assert matches(pattern, "a" * 60 + "b")


def test_matching_spends_the_shared_budget() -> None:
    regex = compile_regex("^(a|aa){0,64}(a|aa){0,64}b$", "", Budget())
    with pytest.raises(MvuError) as refused:
        regex.matches("a" * 200, Budget(fuel=5_000))
    assert refused.value.code == "MVU_LIMIT"
