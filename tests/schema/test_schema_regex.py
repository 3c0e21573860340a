"""S-9: card regexes run on RE2 (linear time) with JavaScript's syntax; hostile patterns stay cheap."""

from __future__ import annotations

import pytest

from mvu_store.errors import MvuError
from mvu_store.js.values import Budget, ScriptError
from mvu_store.schema.regex import MAX_PATTERN_CHARS, compile_regex


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


@pytest.mark.parametrize(("pattern", "feature"), [
    (r"^(a)\1$", "backreference `\\1`"), ("^(?=a)a$", "lookahead `(?=`"), ("^(?!a)b$", "lookahead `(?!`"),
    ("(?<=a)b", "lookbehind `(?<=`"), ("(?<!a)b", "lookbehind `(?<!`"), (r"(?<n>a)\k<n>", "backreference `\\k<n>`"),
])
def test_what_re2_cannot_express_is_refused_by_name(pattern: str, feature: str) -> None:
    with pytest.raises(MvuError) as refused:
        compile_regex(pattern, "", Budget())
    assert refused.value.code == "MVU_UNSUPPORTED"
    assert refused.value.details["feature"] == feature


@pytest.mark.parametrize(("pattern", "flags"), [
    ("^[a-$", ""), ("^(a$", ""), ("^[z-a]$", ""), ("a**", ""), ("(?<n>a)(?<n>b)", ""), ("a", "gg"), ("a", "x"),
    (r"\u{41}\q", "u"), ("a{2,1}", ""),
])
def test_what_javascript_rejects_is_a_syntax_error(pattern: str, flags: str) -> None:
    with pytest.raises(ScriptError) as refused:
        compile_regex(pattern, flags, Budget())
    assert refused.value.value["name"] == "SyntaxError"


def test_pattern_length_group_depth_and_state_limits() -> None:
    for pattern in ["^" + "a" * (MAX_PATTERN_CHARS + 1) + "$", "^" + "(" * 17 + "a" + ")" * 17 + "$",
                    "^(((a{0,64}){0,64}){0,64})$", "a{1001}"]:
        with pytest.raises(MvuError) as refused:
            compile_regex(pattern, "", Budget())
        assert refused.value.code == "MVU_LIMIT"


def test_blow_up_patterns_match_in_linear_state_sets() -> None:
    pattern = "^(a|aa){0,64}(a|aa){0,64}b$"
    assert not matches(pattern, "a" * 60 + "c")
    assert matches(pattern, "a" * 60 + "b")


def test_matching_spends_the_shared_budget() -> None:
    regex = compile_regex("^(a|aa){0,64}(a|aa){0,64}b$", "", Budget())
    with pytest.raises(MvuError) as refused:
        regex.matches("a" * 200, Budget(fuel=5_000))
    assert refused.value.code == "MVU_LIMIT"
