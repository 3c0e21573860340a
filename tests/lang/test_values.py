"""Command values: MagVarUpdate's value parsing, rule by rule, plus Number() coercion."""

from __future__ import annotations

from typing import Any

import pytest

from mvu_store.errors import MvuError
from mvu_store.lang.literals import parse_value, to_number
from mvu_store.lang.slowparse import ParseBudget


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # 1. the literal words
        ("true", True),
        (" false ", False),
        ("null", None),
        ("undefined", None),
        # 2. JSON
        ("5", 5),
        ("-2.5", -2.5),
        ('"text"', "text"),
        ('{"a": [1, 2]}', {"a": [1, 2]}),
        # 3. JavaScript literals in {} or []
        ("{a:1}", {"a": 1}),
        ("[1,'two']", [1, "two"]),
        # 4. arithmetic, rounded to 12 significant digits
        ("10+2", 12),
        ("2024-01-01", 2022),
        ("1/3", 0.333333333333),
        ("0x10", 16),
        ("2^10", 1024),
        ("2**10", 1024),
        ("--5", 5),
        ("+5", 5),
        ("-3*(2+1)", -9),
        ("7 % 4", 3),
        # 5. YAML 1.2 core through the restricted loader
        ("'x'", "x"),
        ("'10+2'", "10+2"),
        ("yes", "yes"),
        ("~", None),
        ("key: value", {"key": "value"}),
        ("'l1\n  l2'", "l1 l2"),
        ("10:30", "10:30"),
        ("hello world", "hello world"),
        # 6. fallback: the text with quotes and backslashes trimmed
        ("'It\\'s'", "It\\'s"),
        ("`tick`", "tick"),
        ("[1, 2", "[1, 2"),
    ],
)
def test_value_parsing_order(raw: str, expected: Any) -> None:
    assert parse_value(raw) == expected
    assert type(parse_value(raw)) is type(expected)


def test_quoted_numbers_stay_strings() -> None:
    assert parse_value("'5'") == "5"
    assert parse_value('"5"') == "5"


@pytest.mark.parametrize("raw", ["1/0", "Infinity", "NaN", "1e400", "9^9^9"])
def test_non_finite_results_are_never_numbers(raw: str) -> None:
    value = parse_value(raw)
    assert not isinstance(value, float) or value == value  # never NaN/inf
    assert isinstance(value, str)


def test_yaml_refusals_fall_back_to_text() -> None:
    assert parse_value("&a x") == "&a x"
    assert parse_value("!!python/object x") == "!!python/object x"


def test_a_value_with_a_prototype_key_is_refused() -> None:
    with pytest.raises(MvuError) as caught:
        parse_value('{"__proto__": {"x": 1}}')
    assert caught.value.code == "MVU_PATH"


def test_long_expressions_are_not_evaluated() -> None:
    assert parse_value("+".join(["1"] * 200)) == "+".join(["1"] * 200)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", 0),
        ("abc", None),
        ("+5", 5),
        (" 12 ", 12),
        ("0x10", 16),
        ("1e3", 1000),
        ("Infinity", None),
        (True, 1),
        (None, 0),
        ([], 0),
        (["5"], 5),
        ([1, 2], None),
        ({}, None),
        ("1_0", None),
    ],
)
def test_number_coercion_is_javascripts(value: Any, expected: Any) -> None:
    assert to_number(value) == expected


def test_the_slow_readers_share_a_budget_and_then_fall_back_to_text() -> None:
    budget = ParseBudget(12)
    assert parse_value("key: value", budget) == {"key": "value"}
    assert parse_value("key: value", budget) == "key: value"  # budget spent: kept as text
    assert parse_value("[1, 2]", budget) == [1, 2]  # strict JSON never spends the budget
