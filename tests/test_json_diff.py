"""json_diff: its differences, applied in order, turn one value into the other."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mvu_store.json_diff import json_diff
from mvu_store.jsonvalue import JsonValue, json_equal

_keys = st.sampled_from(["a", "b", "c", "x/y", "~0", ""])
_scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(-2, 2, allow_nan=False),
                     st.text(max_size=3))
_values = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                         st.dictionaries(_keys, inner, max_size=4)),
                       max_leaves=20)


def _parts(pointer: str) -> list[str]:
    return [part.replace("~1", "/").replace("~0", "~") for part in pointer.split("/")[1:]]


def _apply(document: Any, differences: list[dict[str, Any]]) -> Any:
    """A small RFC 6902 applier (add / remove / replace) to check the diff against."""
    root = {"": copy.deepcopy(document)}
    for item in differences:
        parts = ["", *_parts(item["path"])]
        parent: Any = root
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent[part]
        last: Any = int(parts[-1]) if isinstance(parent, list) else parts[-1]
        if item["op"] == "remove":
            del parent[last]
        elif item["op"] == "add" and isinstance(parent, list):
            parent.insert(last, item["after"])
        else:
            parent[last] = item["after"]
    return root[""]


@given(_values, _values)
def test_differences_applied_in_order_give_the_other_value(before: JsonValue, after: JsonValue) -> None:
    diff = json_diff(before, after)
    assert not diff.truncated
    assert json_equal(_apply(before, [item.to_json() for item in diff.differences]), after)


@given(_values)
def test_a_value_does_not_differ_from_itself(value: JsonValue) -> None:
    assert json_diff(value, copy.deepcopy(value)).differences == ()


def test_each_difference_says_what_was_there() -> None:
    diff = json_diff({"hp": 10, "bag": ["a", "b"], "gone": 1}, {"hp": 9.0, "bag": ["a"], "new": {"x": 1}})
    assert [item.to_json() for item in diff.differences] == [
        {"path": "/hp", "op": "replace", "before": 10, "after": 9.0},
        {"path": "/bag/1", "op": "remove", "before": "b"},
        {"path": "/gone", "op": "remove", "before": 1},
        {"path": "/new", "op": "add", "after": {"x": 1}},
    ]
    assert json_diff(5, 5.0).differences == ()


def test_beyond_the_limit_the_diff_says_it_is_cut() -> None:
    diff = json_diff({}, {str(index): index for index in range(10)}, limit=3)
    assert diff.truncated and [item.path for item in diff.differences] == ["/0", "/1", "/2"]
