"""`Date` in declarations: the caller's clock or a typed refusal, UTC, and JavaScript's arithmetic.
What real Zod gives for the same forms is in zod_dates_parity.json (test_schema_parity.py)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mvu_store.errors import MvuError
from mvu_store.js.dates import MAX_TIME, fields_of, make_time, parse_date
from mvu_store.schema import ValidationMemo, compile_schema, validate
from mvu_store.schema.native import CLOCK, purity
from mvu_store.schema.program import build

NOW = 1_748_860_200_000  # 2025-06-02T10:30:00Z


def run(source: str, value: Any, now_ms: int | None = NOW) -> Any:
    result = validate(compile_schema(source), value, now_ms=now_ms)
    assert result.ok, result.issues
    return result.value


@pytest.mark.parametrize("reader", ["Date.now()", "new Date().getTime()", "Date()", "new Date"])
def test_every_clock_reader_sees_the_callers_time(reader: str) -> None:
    source = f"export default z.object({{ 时间: z.any().default(() => {reader}) }});"
    value = run(source, {})["时间"]
    assert value in (NOW, "Mon Jun 02 2025 10:30:00 GMT+0000 (Coordinated Universal Time)", "2025-06-02T10:30:00.000Z")


@pytest.mark.parametrize("reader", ["Date.now()", "new Date()", "Date()"])
def test_without_a_clock_reading_it_is_a_typed_refusal(reader: str) -> None:
    source = f"export default z.object({{ at: z.any().default(() => {reader}) }});"
    descriptor = compile_schema(source)
    with pytest.raises(MvuError) as refused:
        validate(descriptor, {})
    assert refused.value.code == "MVU_SCHEMA"
    assert refused.value.details["kind"] == "clock"
    # A value that is present never runs the default: no clock needed.
    assert validate(descriptor, {"at": 5}).value == {"at": 5}


def test_a_catch_cannot_hide_a_missing_clock() -> None:
    source = "export default z.any().transform(v => { try { return Date.now() } catch (e) { return 0 } });"
    with pytest.raises(MvuError) as refused:
        validate(compile_schema(source), 1)
    assert refused.value.details["kind"] == "clock"


def test_dates_from_texts_and_numbers_need_no_clock() -> None:
    source = "export default z.string().transform(s => new Date(s).getTime() + new Date(0).getTime());"
    assert run(source, "2025-06-02T10:30:00+08:00", now_ms=None) == 1_748_831_400_000


def test_a_date_in_the_parsed_value_is_stored_as_its_iso_text() -> None:
    source = "export default z.object({ 出生: z.string().transform(s => new Date(s)) });"
    assert run(source, {"出生": "2000-02-29"}) == {"出生": "2000-02-29T00:00:00.000Z"}
    assert run(source, {"出生": "某天"}) == {"出生": None}  # an invalid date, as JSON.stringify writes it


def test_the_declarations_own_date_is_read_only_while_validating() -> None:
    source = "const start = new Date(0);\nexport default z.number().transform(n => start.setDate(n));"
    with pytest.raises(MvuError) as refused:
        validate(compile_schema(source), 5)
    assert "read-only" in refused.value.message
    copied = "const start = new Date(0);\nexport default z.number().transform(n => new Date(start).setDate(n));"
    assert run(copied, 2) == 86_400_000


def test_objects_other_than_dates_still_refuse_implicit_conversion() -> None:
    with pytest.raises(MvuError):
        validate(compile_schema("export default z.any().transform(v => ({}) - 1);"), 1)
    assert run("export default z.any().transform(v => new Date(5) - 1);", 1) == 4
    assert run("export default z.any().transform(v => new Date(0) + '!');", 1).endswith("Time)!")


def test_locale_texts_outside_the_supported_subset_are_refused_clearly() -> None:
    assert validate(compile_schema("export default z.any().transform(v => new Date(0).toLocaleString('zh-CN'));"),
                    1).value == "1970/1/1 00:00:00"
    for call in ("toLocaleString('fr-FR')", "toLocaleString('en-US', {timeZone: 'America/New_York'})",
                 "toLocaleDateString('en-US', {era: 'long'})"):
        with pytest.raises(MvuError) as refused:
            validate(compile_schema(f"export default z.any().transform(v => new Date(0).{call});"), 1)
        assert refused.value.code == "MVU_UNSUPPORTED"
        assert "toLocaleString" in refused.value.message


def test_a_transform_that_builds_dates_is_clock_dependent_for_the_memo() -> None:
    source = "export const Schema = z.object({ d: z.number() }).transform(v => ({ ...v, 今: new Date().getTime() }));"
    assert purity(build(source, 2).root) == CLOCK
    descriptor = compile_schema(source)
    memo = ValidationMemo()
    state = {"d": 1}
    assert validate(descriptor, state, now_ms=1, memo=memo).value == {"d": 1, "今": 1}
    assert validate(descriptor, state, now_ms=2, memo=memo).value == {"d": 1, "今": 2}


@settings(max_examples=200, deadline=None)
@given(time=st.integers(-int(MAX_TIME), int(MAX_TIME)))
def test_fields_and_texts_round_trip_every_time_value(time: int) -> None:
    """Property: a time's fields rebuild it, and its ISO and toString texts parse back to it."""
    fields = fields_of(time)
    assert make_time([*fields[:7]]) == time
    assert 0 <= fields[1] <= 11 and 1 <= fields[2] <= 31 and 0 <= fields[7] <= 6
    source = "export default z.number().transform(t => { const d = new Date(t); " \
             "return [Date.parse(d.toISOString()), Date.parse(d.toString()), Date.parse(d.toUTCString())] });"
    whole_seconds = time - time % 1000
    assert run(source, time) == [time, whole_seconds, whole_seconds]


@settings(max_examples=100, deadline=None)
@given(year=st.integers(1, 9999), month=st.integers(-30, 30), day=st.integers(-400, 400))
def test_field_overflow_carries_as_in_the_proleptic_calendar(year: int, month: int, day: int) -> None:
    """Property: MakeDay's overflow matches Python's own calendar arithmetic."""
    import datetime

    total_months = year * 12 + month
    first = datetime.date(total_months // 12, total_months % 12 + 1, 1) if 1 <= total_months // 12 <= 9999 else None
    if first is None:
        return
    expected_days = (first - datetime.date(1970, 1, 1)).days + day - 1
    assert make_time([year, month, day, 0, 0, 0, 0]) == expected_days * 86_400_000


@pytest.mark.parametrize(("text", "expected"), [
    ("2025-06-02", 1_748_822_400_000),
    ("2025-06-02 10:30", NOW),
    ("2025/6/2 10:30", NOW),
    ("2025-06-02T18:30:00+08:00", NOW),
    ("Mon, 02 Jun 2025 10:30:00 GMT", NOW),
    ("June 2, 2025 10:30", NOW),  # V8 reads English month names (it did not here before)
    ("6/2/2025 10:30", NOW),
])
def test_parse_reads_iso_numeric_and_written_forms(text: str, expected: int) -> None:
    assert parse_date(text) == expected


@pytest.mark.parametrize("text", ["2025-6-2T10:30Z", "2025年6月2日", "明天", "next week", "2025-06-02T25:00"])
def test_other_texts_are_invalid_dates(text: str) -> None:
    assert parse_date(text) != parse_date(text)  # NaN
