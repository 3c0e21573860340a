"""RegExp inside declarations: literals and `new RegExp`, the String pattern methods, match
arrays' fields, a constant regex's `lastIndex` per validation, Zod's `.regex()`, and the
refusals (where they are, what they name) and budgets."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from mvu_store.errors import MvuError
from mvu_store.js.values import Budget
from mvu_store.schema import compile_schema, string_patterns, validate
from mvu_store.schema.regex import compile_regex, match_field
from tests.schema.test_schema_loops import refusal, run  # one way to run a declaration


def test_cards_unanchored_flagged_patterns_work() -> None:
    # A card's level suffix (`/级$/`), a case-insensitive tag and a global clean-up.
    source = r"""
export default z.object({ 等级: z.string(), 标签: z.string(), 描述: z.string() }).transform(v => ({
  ...v,
  等级: v.等级.replace(/级$/, ''),
  高级: /^s/i.test(v.标签),
  描述: v.描述.replace(/\s+/g, ' ').trim(),
}));
"""
    assert run(source, {"等级": "3级", "标签": "S-rank", "描述": " a \u00a0\n b "}) == {
        "等级": "3", "标签": "S-rank", "描述": "a b", "高级": True}


def test_exec_loops_with_last_index_and_match_fields() -> None:
    source = r"""
export default z.string().transform(text => {
  const found = [];
  const re = /(?<name>[\u4e00-\u9fa5]+)(\d+)/g;
  let m;
  while ((m = re.exec(text)) !== null) found.push([m.index, m.groups.name, Number(m[2]), re.lastIndex]);
  const first = text.match(/(\d+)/);
  return { found, at: first.index, input: first.input === text, all: [...text.matchAll(/\d+/g)].map(x => x.index) };
});
"""
    assert run(source, "😀金币12 经验300") == {
        "found": [[2, "金币", 12, 6], [7, "经验", 300, 12]],  # UTF-16 offsets: the emoji counts twice
        "at": 4, "input": True, "all": [4, 9]}


def test_new_regexp_replace_templates_functions_and_split() -> None:
    source = r"""
export default z.string().transform(text => [
  text.replace(new RegExp('(\\w+)@(\\w+)', 'g'), '$2 at $1 [$&]'),
  text.replace(/(?<user>\w+)@/, (all, user, offset, whole, groups) => groups.user.toUpperCase() + offset + ':'),
  text.split(/\s*(,)\s*/),
  text.split(/,/, 1),
  'a.b.c'.replaceAll('.', '$$'),
  text.search(/@/),
  String(/a\/b/gi) + RegExp('x', 'y').flags,
]);
"""
    assert run(source, "ann@home , bob@work") == [
        "home at ann [ann@home] , work at bob [bob@work]",
        "ANN0:home , bob@work",
        ["ann@home", ",", "bob@work"],
        ["ann@home "],
        "a$b$c",
        3,
        "/a\\/b/giy",
    ]


def test_a_constant_global_regex_starts_every_validation_from_its_own_state() -> None:
    # `const RE = /x/g` at the top level, `RE.test()` in a transform: in JavaScript its lastIndex
    # leaks from one call to the next; here each validation starts from the declaration's state,
    # so the same input always gives the same answer.
    source = r"""
const RE = /\d+/g;
export default z.string().transform(text => [RE.test(text), RE.lastIndex, RE.test(text), RE.test(text)]);
"""
    descriptor = compile_schema(source)
    first = validate(descriptor, "a12", now_ms=0).value
    assert first == [True, 3, False, True]
    assert validate(descriptor, "a12", now_ms=0).value == first


def test_zod_regex_checks_use_the_same_engine_with_flags() -> None:
    source = r"export default z.object({ id: z.string().regex(/^[a-z]\w*$/i), tag: z.string().regex(/级/g) });"
    assert run(source, {"id": "Hero_1", "tag": "三级"}) == {"id": "Hero_1", "tag": "三级"}
    result = validate(compile_schema(source), {"id": "1hero", "tag": "x"}, now_ms=0)
    assert not result.ok
    assert [issue.message for issue in result.issues] == [
        "Invalid string: must match pattern /^[a-z]\\w*$/i", "Invalid string: must match pattern /级/g"]


def test_lookaround_is_refused_only_when_it_runs_and_names_where_it_is() -> None:
    source = "export default z.string().transform(s => s.length > 3 ? s.replace(/a(?=b)/g, '') : s);"
    assert run(source, "ab") == "ab"  # the branch with the lookahead never ran
    refused = refusal(source, "abab")
    assert refused.code == "MVU_UNSUPPORTED"
    assert refused.details["feature"] == "lookahead `(?=`"
    assert (refused.details["line"], refused.details["offset"]) == (1, 1)


def test_a_pattern_javascript_rejects_refuses_the_declaration_where_it_is() -> None:
    with pytest.raises(MvuError) as refused:
        compile_schema("export default z.string().transform(s => s.replace(/a(/, ''));")
    assert refused.value.code == "MVU_SCHEMA_CODE"
    assert "Unterminated group" in refused.value.message
    caught = ("export default z.string().transform(s => { try { new RegExp(s) } catch (e) { return e.name } "
              "return 'ok' });")
    assert run(caught, "(") == "SyntaxError"
    assert run(caught, "a+") == "ok"


def test_hostile_patterns_and_huge_loops_stay_within_the_budget() -> None:
    # Catastrophic for a backtracking engine; linear on RE2, and charged for what it scans.
    hostile = "export default z.string().transform(s => /^(a+)+$/.test(s));"
    assert run(hostile, "a" * 5000 + "b") is False
    budget = Budget(fuel=50_000)  # a global loop pays for every match it makes
    with pytest.raises(MvuError) as spent:
        string_patterns.replace(every=True)(budget, "a" * 20_000, [compile_regex("a", "g", budget), "bb"])
    assert spent.value.code == "MVU_LIMIT"


@pytest.mark.parametrize(("pattern", "text", "expected"), [
    ("(?:(a)|b)+", "ab", ["ab", None]),  # JavaScript forgets captures of earlier iterations
    ("(z)((a+)?(b+)?(c))*", "zaacbbbcac", ["zaacbbbcac", "z", "ac", "a", None, "c"]),
    ("(a*)*", "b", ["", None]),  # an empty iteration beyond the minimum does not count
    ("(a*)+", "b", ["", ""]),
])
def test_captures_of_repeated_groups_come_from_the_last_iteration(pattern: str, text: str, expected: list[Any]) -> None:
    source = f"export default z.string().transform(s => /{pattern}/.exec(s).map(x => x === undefined ? null : x));"
    assert run(source, text) == expected


def test_line_anchors_see_every_line_terminator_as_javascript_does() -> None:
    # Windows line ends and U+2028 in a reply: `^`/`$` under `m` hold at each of them, while
    # `\r?` and `[^:\n]` still tell them apart (RE2 itself knows only `\n` as a line end).
    source = r"""
export default z.string().transform(t => [t.match(/^[^:\n]+/gm), t.replace(/\r?$/gm, '|'), t.split(/$\r?\n?/m),
  [...t.matchAll(/^(.+?):\s*(.*?)\r?$/gm)].map(m => [m.index, m[1], m[2]])]);
"""
    assert run(source, "名字: 甲\r\n等级: 3\r\n\u2028x") == [  # what node answers
        ["名字", "等级", "\u2028x"], "名字: 甲||\n等级: 3||\n|\u2028x|", ["名字: 甲", "等级: 3", "\u2028x"],
        [[0, "名字", "甲"], [7, "等级", "3"]]]


def test_match_fields_stay_with_every_array_still_held() -> None:
    budget = Budget(fuel=10**9)
    regex = compile_regex("(?<x>a)", "", budget)
    kept = [regex.get("exec").call(budget, ["xa"]) for _ in range(3_000)]
    for _ in range(10_000):  # many more matches, each dropped at once
        regex.get("exec").call(budget, ["ba"])
    assert all(match_field(items, "index") == 1 and match_field(items, "groups") == {"x": "a"} for items in kept)


def test_validations_on_several_threads_keep_their_own_last_index() -> None:
    source = r"""
const RE = /(\d+)/g;
export default z.string().transform(t => { const out = []; let m;
  while ((m = RE.exec(t)) !== null) out.push([m.index, m[1], RE.lastIndex]); return out; });
"""
    descriptor = compile_schema(source)
    text = " ".join(str(number) for number in range(100))
    expected = validate(descriptor, text, now_ms=0).value
    assert len(expected) == 100
    results: list[Any] = []

    def validate_repeatedly() -> None:
        results.extend(validate(descriptor, text, now_ms=0).value for _ in range(10))

    threads = [threading.Thread(target=validate_repeatedly) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [expected] * 40


@pytest.mark.parametrize(("pattern", "text", "expected"), [  # what node answers
    (r"\p{sc=Hani}+", "a中文b", "中文"), (r"\p{Script=Hira}+", "aひらがな", "ひらがな"),
    (r"[\p{Script=Latn}\d]+", "中ab1", "ab1"), (r"\P{sc=Han}+", "中ab", "ab"), (r"\p{Lu}\p{Ll}+", "xAbc", "Abc"),
])
def test_unicode_property_escapes_with_u(pattern: str, text: str, expected: str) -> None:
    assert run(f"export default z.string().transform(s => s.match(/{pattern}/u)[0]);", text) == expected


def test_a_property_re2_lacks_is_refused_by_name() -> None:
    refused = refusal(r"export default z.string().transform(s => /\p{Emoji}/u.test(s));", "x")
    assert (refused.code, refused.details["feature"]) == ("MVU_UNSUPPORTED", r"\p{Emoji}")
