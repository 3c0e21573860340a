"""Paths: lodash-style text paths as MagVarUpdate fixes them, JSON pointers, and safety."""

from __future__ import annotations

import pytest
from lang_support import codes, stat, update

from mvu_store.errors import MvuError
from mvu_store.lang.paths import MAX_SEGMENTS, lookup, parse_path, parse_pointer, trim_quotes


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("a.b", ("a", "b")),
        ("a[0]", ("a", "0")),
        ("a.0", ("a", "0")),
        ("a[b]", ("a", "b")),
        ("['a b']", ("a b",)),
        ('["x.y"].z', ("x.y", "z")),
        ("a[ 1 ]", ("a", "1")),
        ("a['0']", ("a", "0")),
        ('a."x.y".b', ("a", "x.y", "b")),
        ("'a.b'", ("a", "b")),
        ("npc list.the innkeeper", ("npc list", "the innkeeper")),
        ("", ()),
        ("a..b", ("a", "", "b")),
        ('"a"."b"', ('a"', '"b')),
    ],
)
def test_text_paths(raw: str, expected: tuple[str, ...]) -> None:
    assert parse_path(raw) == expected


def test_trim_quotes_strips_every_run_of_quotes_backslashes_and_spaces() -> None:
    assert trim_quotes("\\\"'` a.b `'\"\\") == "a.b"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("/a/b", ("a", "b")), ("/a~1b/c~0d", ("a/b", "c~d")), ("/", ()), ("a/b", ("a", "b")), ("/a.b", ("a.b",))],
)
def test_json_pointers_decode_escapes_and_keep_dots(raw: str, expected: tuple[str, ...]) -> None:
    assert parse_pointer(raw) == expected


@pytest.mark.parametrize("raw", ["__proto__.x", "a.constructor", "a['prototype']", "a[__proto__]"])
def test_prototype_segments_are_refused(raw: str) -> None:
    with pytest.raises(MvuError) as caught:
        parse_path(raw)
    assert caught.value.code == "MVU_PATH"
    # The refusal names the path, and the pointer it would have been (for a change row).
    assert repr(raw) in caught.value.message and caught.value.details["pointer"].startswith("/")


def test_more_than_64_segments_is_refused() -> None:
    with pytest.raises(MvuError) as caught:
        parse_path(".".join(["a"] * (MAX_SEGMENTS + 1)))
    assert caught.value.code == "MVU_PATH" and "'a.a.a." in caught.value.message
    assert len(parse_path(".".join(["a"] * MAX_SEGMENTS))) == MAX_SEGMENTS


def test_array_length_is_refused() -> None:
    with pytest.raises(MvuError) as caught:
        lookup({"a": [1, 2]}, ("a", "length"))
    assert caught.value.code == "MVU_PATH"


def test_array_length_in_a_command_refuses_the_whole_update() -> None:
    with pytest.raises(MvuError) as caught:
        update({"a": [1, 2], "b": 1}, "_.set(b, 2); _.set(a.length, 0);")
    assert caught.value.code == "MVU_PATH"


def test_indexes_resolve_only_on_arrays_and_only_when_canonical() -> None:
    data = {"a": [10, 20], "o": {"0": "zero"}}
    assert lookup(data, ("a", "1")) == (True, 20)
    assert lookup(data, ("a", "01")) == (False, None)
    assert lookup(data, ("a", "2")) == (False, None)
    assert lookup(data, ("o", "0")) == (True, "zero")


@pytest.mark.parametrize("path", ["a.b", "a[b]", "['a'].b", 'a["b"]', "'a.b'", "`a.b`"])
def test_every_spelling_reaches_the_same_value(path: str) -> None:
    assert stat({"a": {"b": 1}}, f"_.set({path}, 2);") == {"a": {"b": 2}}


def test_quoted_digits_still_index_arrays() -> None:
    assert stat({"a": [1, 2]}, "_.set(a['0'], 9);") == {"a": [9, 2]}


@pytest.mark.parametrize("path", ['"a"."b"', "a..b", "a/b", "stat_data.a.b"])
def test_paths_magvarupdate_cannot_resolve_are_missing(path: str) -> None:
    assert codes(update({"a": {"b": 1}}, f"_.set({path}, 2);")) == ["MVU_PATH_MISSING"]


def test_unquoted_spaces_are_part_of_the_key() -> None:
    assert stat({"npc list": {"the innkeeper": 1}}, "_.set(npc list.the innkeeper, 2);") == {
        "npc list": {"the innkeeper": 2}
    }
