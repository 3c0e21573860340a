"""Without a declaration: add moves dates by milliseconds, and Math.* / math.* evaluate."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lang_support import codes, stat, update

from mvu_store.js.dates import iso_text, parse_date

EPOCH_2025 = 1_748_822_400_000  # 2025-06-02T00:00:00Z


@pytest.mark.parametrize(
    ("start", "delta", "expected"),
    [
        ("2025-06-02", "3600000", "2025-06-02T01:00:00.000Z"),
        ("2025-06-02 08:00", "30*60*1000", "2025-06-02T08:30:00.000Z"),  # no offset: read as UTC
        ("2025-06-02T08:00:00+08:00", "0", "2025-06-02T00:00:00.000Z"),
        ("2025/06/03 08:00", "-86400000", "2025-06-02T08:00:00.000Z"),
        ("June 2, 2025", "60000", "2025-06-02T00:01:00.000Z"),
        ("Mon, 02 Jun 2025 08:00:00 GMT", "1.9", "2025-06-02T08:00:00.001Z"),  # a fraction is cut off
        ("2025-02-30", "0", "2025-03-02T00:00:00.000Z"),  # day overflow rolls over, as in JavaScript
        ("2025-6-2 23:59:59.999Z", "1", "2025-06-03T00:00:00.000Z"),  # one-digit month: V8's legacy form
    ],
)
def test_add_on_a_date_text(start: str, delta: str, expected: str) -> None:
    assert stat({"t": start}, f"_.add(t, {delta});") == {"t": expected}


def test_a_date_with_a_description_keeps_it() -> None:
    assert stat({"时间": ["2025-06-02T09:00", "当前时间"]}, "_.add('时间', 3600000);") == {
        "时间": ["2025-06-02T10:00:00.000Z", "当前时间"]}


@pytest.mark.parametrize(
    "text", ["王都", "10:30", "2025", "2025-13-01", "Day 3", "2025年6月2日", "9999-12-31T23:59:59.999Z",
             "2025-6-2T23:59:59.999Z"]  # V8 reads a `T` only with two-digit months and days
)
def test_texts_that_are_no_date_or_leave_the_range_are_refused(text: str) -> None:
    assert codes(update({"t": text}, "_.add(t, 1);")) == ["MVU_SCHEMA"]


YEAR_1, YEAR_10000, DAY = -62_135_596_800_000, 253_402_300_800_000, 86_400_000


@given(st.integers(YEAR_1 + DAY, YEAR_10000 - DAY - 1), st.integers(-DAY, DAY))
def test_adding_to_an_iso_text_is_adding_to_its_instant(moment: int, delta: int) -> None:
    text = iso_text(moment)
    assert parse_date(text) == moment
    assert stat({"t": text}, f"_.add(t, {delta});") == {"t": iso_text(moment + delta)}


def test_the_epoch_reads_back() -> None:
    assert parse_date("2025-06-02") == EPOCH_2025
    assert iso_text(EPOCH_2025) == "2025-06-02T00:00:00.000Z"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Math.sqrt(81)", 9),
        ("math.pi", 3.14159265359),
        ("Math.PI * 2", 6.28318530718),
        ("Math.max(3, 9, 4)", 9),
        ("Math.floor(10 / 3)", 3),
        ("Math.round(2.5)", 3),
        ("Math.round(-2.5)", -2),  # JavaScript rounds halves up
        ("round(-2.5)", -3),  # mathjs rounds them away from zero
        ("math.round(2.567, 2)", 2.57),
        ("Math.trunc(-4.7)", -4),
        ("Math.log(Math.E)", 1),
        ("math.log10(1000)", 3),
        ("Math.hypot(3, 4)", 5),
        ("math.mod(7, 3)", 1),
        ("math.abs(-2) * Math.sqrt(4)", 4),
        ("Math.SQRT2", 1.41421356237),
        ("100%", 1),  # mathjs: a trailing % is a percentage
        ("50 %", 0.5),
        ("7 mod 3", 1),
        ("5 # five", 5),  # mathjs: '#' starts a comment
    ],
)
def test_math_functions_and_constants(raw: str, expected: Any) -> None:
    assert stat({"n": 0}, f"_.set(n, {raw});") == {"n": expected}


@pytest.mark.parametrize(
    "raw", ["Math.random()", "Math.nope(1)", "math.sqrt", "Math.sqrt(-1)", "Math.max()", "#FF0000"]
)
def test_what_is_not_evaluated_stays_text(raw: str) -> None:
    assert stat({"s": ""}, f"_.set(s, {raw});") == {"s": raw}
