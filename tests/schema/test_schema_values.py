"""JavaScript's conversions as the interpreter implements them; expected values come from node."""

from __future__ import annotations

import math

import pytest

from mvu_store.js.numbers import number_to_string
from mvu_store.js.values import to_number
from mvu_store.schema import compile_schema, validate


@pytest.mark.parametrize(("number", "text"), [
    (0, "0"), (-0.0, "0"), (1, "1"), (1.5, "1.5"), (0.1 + 0.2, "0.30000000000000004"), (1e21, "1e+21"),
    (1e-7, "1e-7"), (123456789012345680000.0, "123456789012345680000"), (0.000001, "0.000001"),
    (1.23e-10, "1.23e-10"), (-1e300, "-1e+300"), (2.0**53, "9007199254740992"), (100.0, "100"),
    (1 / 3, "0.3333333333333333"), (math.nan, "NaN"), (math.inf, "Infinity"),
])
def test_numbers_print_as_javascript_prints_them(number: float, text: str) -> None:
    assert number_to_string(number) == text


@pytest.mark.parametrize(("text", "number"), [
    ("", 0), (" 12 ", 12), ("0x1f", 31), ("1e3", 1000), (".5", 0.5), ("5.", 5), ("+3", 3), ("0b11", 3),
    ("0o7", 7), ("\n", 0), (" -2.5e-3 ", -0.0025), ("Infinity", math.inf), ("-Infinity", -math.inf),
])
def test_strings_convert_to_numbers_as_javascript_does(text: str, number: float) -> None:
    assert to_number(text) == number


@pytest.mark.parametrize("text", ["abc", "12px", "1_000", "infinity", "0x", "1e"])
def test_unparseable_strings_are_nan(text: str) -> None:
    assert math.isnan(to_number(text))


def test_parse_int_parse_float_and_to_fixed() -> None:
    source = ("export default z.any().transform(v => [parseInt('12px'), parseInt('0x1f'), parseInt('  -7.9'), "
              "parseFloat('3.5e1x'), parseFloat('.5'), parseInt('z', 36), (1.005).toFixed(2), (2.5).toFixed(0), "
              "(-1.5).toFixed(0), (1e21).toFixed(2)]);")
    assert validate(compile_schema(source), 1).value == [12, 31, -7, 35, 0.5, 35, "1.00", "3", "-2", "1e+21"]


def test_escaped_surrogate_pairs_make_one_character() -> None:
    source = r"export default z.any().transform(v => ['\uD83D\uDE00', `\uD83D\uDE00!`, '\u{1F600}'.length]);"
    assert validate(compile_schema(source), 1).value == ["😀", "😀!", 2]


def test_counts_and_indexes_accept_infinity_and_nan() -> None:
    """ToIntegerOrInfinity: ``int(inf)`` would raise in Python; node gave these answers."""
    source = ("export default z.any().transform(v => [_.takeRight([1, 2], 3), _.take([1, 2], Infinity), "
              "_.takeRight('abc', 2), [1, 2, 3].slice(0, Infinity), _.drop([1, 2, 3], Infinity), "
              "'ab'.padStart(NaN), _.toInteger(-Infinity), _(v).toPairs().takeRight(3).fromPairs().value()]);")
    assert validate(compile_schema(source), {"k": 1, "j": 2}).value == [
        [1, 2], [1, 2], ["b", "c"], [1, 2, 3], [], "ab", -1.7976931348623157e308, {"k": 1, "j": 2}]


@pytest.mark.parametrize(("value", "issues"), [
    (1e21, [("too_big", "Too big: expected int to be <=9007199254740991"),
            ("too_big", "Too big: expected number to be <=5")]),
    (-(2**53), [("too_small", "Too small: expected int to be >=-9007199254740991")]),
    (1.5, [("invalid_type", "Invalid input: expected int, received number")]),
])
def test_integers_outside_the_safe_range_are_bounds_not_types(value: float, issues: list[tuple[str, str]]) -> None:
    """As Zod 4 reports them: a non-integer aborts, an unsafe integer is a bound later checks follow."""
    result = validate(compile_schema("export default z.number().int().max(5);"), value)
    assert [(issue.code, issue.message) for issue in result.issues] == issues


def test_implicit_lodash_chains_unwrap_where_lodash_does() -> None:
    """``_(x)`` ends at a value-returning helper; ``_.chain(x)`` stays wrapped until ``.value()``.
    Cards total a record with ``_(record).values().sumBy(f)`` and count with ``.filter(p).size()``."""
    source = """export default z.any().transform(v => [
  _(v).values().sumBy(r => r.n),
  _(v).values().filter(r => r.n > 1).size(),
  _(v).values().groupBy('kind').mapValues(rows => rows.length).value(),
  _.chain(v).values().sumBy(r => r.n).value(),
  _(v).keys().first(),
  [_.isNaN(NaN), _.isNaN('x'), _.isNaN(1)],
]);"""
    value = {"a": {"n": 1, "kind": "x"}, "b": {"n": 2, "kind": "y"}, "c": {"n": 3, "kind": "x"}}
    assert validate(compile_schema(source), value).value == [6, 2, {"x": 2, "y": 1}, 6, "a", [True, False, False]]
