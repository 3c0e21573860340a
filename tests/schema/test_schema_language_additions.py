"""Labelled jumps, ``Map``, ``Intl.NumberFormat``, reads of missing members, and lodash's
remembering helpers, where the node oracle (``builtins_oracle.json``) cannot say it: across
validations, in the original interpreter (S-8), and at the S-7 guards."""

from __future__ import annotations

import pytest
from test_schema_loops import refusal, run

from mvu_store.errors import Code, MvuError
from mvu_store.schema import compile_schema, validate
from mvu_store.schema.syntax import parse_program


def test_a_labelled_continue_skips_the_rest_of_a_row_in_a_card_transform() -> None:
    # A grid of rooms: a row is searched until a locked door (-1); its later rooms are skipped.
    source = """export default z.array(z.array(z.number())).transform(rows => {
  const open = [];
  rows: for (const row of rows) {
    for (const room of row) {
      if (room < 0) continue rows;
      if (room === 99) break rows;
      open.push(room);
    }
  }
  return open;
});"""
    assert run(source, [[1, 2], [3, -1, 4], [5]]) == [1, 2, 3, 5]
    assert run(source, [[1, 99, 2], [3]]) == [1]


def test_the_original_interpreter_refuses_labels_as_s8_does() -> None:
    for source in ("a: for (const x of []) { continue a; }", "for (const x of []) { break a; }"):
        with pytest.raises(MvuError) as refused:
            parse_program(source, original=True)
        assert refused.value.code == Code.SCHEMA_CODE
        assert "S-8" in refused.value.message


def test_a_constant_map_is_read_only_during_validation_and_each_run_starts_the_same() -> None:
    source = """const counts = new Map([['a', 1]]);
export default z.string().transform(s => { counts.set(s, 1); return counts.size; });"""
    error = refusal(source, "b")
    assert error.code == Code.SCHEMA and "read-only" in error.message
    built = """export default z.array(z.string()).transform(words => {
  const counts = new Map();
  for (const w of words) counts.set(w, (counts.get(w) || 0) + 1);
  return Object.fromEntries(counts);
});"""
    assert run(built, ["a", "b", "a"]) == {"a": 2, "b": 1}


def test_a_map_is_no_output_value() -> None:
    error = refusal("export default z.any().transform(() => new Map([[1, 2]]));", 1)
    assert error.code in (Code.SCHEMA, Code.UNSUPPORTED)


@pytest.mark.parametrize("expression", [
    "new Intl.NumberFormat('de-DE').format(1)", "new Intl.NumberFormat('en-US', {style: 'percent'}).format(1)",
    "new Intl.DateTimeFormat('en-US').format(0)", "(1).toLocaleString('fr-FR')",
])
def test_intl_outside_en_and_zh_is_refused_naming_it(expression: str) -> None:
    error = refusal(f"export default z.any().transform(() => {expression});", 1)
    assert error.code == Code.UNSUPPORTED
    assert "Intl." in error.message or "toLocaleString" in error.message


def test_intl_number_format_groups_as_en_us_and_zh_cn_do() -> None:
    source = "export default z.number().transform(n => new Intl.NumberFormat('zh-CN').format(n) + ' 金币');"
    assert run(source, 1234567.5) == "1,234,567.5 金币"


def test_missing_members_of_strings_and_arrays_read_undefined_but_the_guards_hold() -> None:
    source = "export default z.any().transform(v => [typeof v.foo, v.bar ?? 'none']);"
    assert run(source, "text") == ["undefined", "none"]
    assert run(source, [1, 2]) == ["undefined", "none"]
    for member in ("__proto__", "constructor", "prototype"):
        for value in ("text", [1]):
            error = refusal(f"export default z.any().transform(v => v.{member});", value)
            assert error.code == Code.SCHEMA and member in error.message
            error = refusal(f"export default z.any().transform(v => v['{member}']);", value)
            assert error.code == Code.SCHEMA


def test_memoize_and_once_remember_within_one_validation_only() -> None:
    # Built once at compile time; a second validation must not see the first one's calls.
    source = """const first = _.once(x => x);
const double = _.memoize(x => ({ twice: x * 2 }));
export default z.number().transform(n => [first(n), first(n + 1), double(n) === double(n), double(n).twice]);"""
    schema = compile_schema(source)
    assert validate(schema, 3, now_ms=0).value == [3, 3, True, 6]
    assert validate(schema, 5, now_ms=0).value == [5, 5, True, 10]


def test_refused_lodash_helpers_name_themselves_and_why() -> None:
    for name, reason in (("now", "clock"), ("random", "chance"), ("uniqueId", "counter")):
        error = refusal(f"export default z.any().transform(() => _.{name}());", 1)
        assert error.code == Code.UNSUPPORTED
        assert f"`_.{name}`" in error.message and reason in error.message
