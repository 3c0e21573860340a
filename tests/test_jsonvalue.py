"""Canonical JSON, hashing and the structural limits (DIGEST P-4), by property."""

from __future__ import annotations

import json
import math
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mvu_store.errors import MvuError
from mvu_store.jsonvalue import (
    MAX_DEPTH,
    canonical_text,
    check_bounds,
    copy_json,
    find_unsafe_key,
    js_json,
    js_json_bytes,
    json_equal,
    json_pointer,
    loads,
    measure_state,
    normalize,
    sha256_hex,
)

finite_floats = st.floats(allow_nan=False, allow_infinity=False)
scalars = st.none() | st.booleans() | st.integers(-(2**60), 2**60) | finite_floats | st.text()
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5), max_leaves=40
)


@given(json_values)
def test_canonical_text_round_trips_to_an_equal_value(value: object) -> None:
    text = canonical_text(value)
    assert json.loads(text) == normalize(value)[0]
    assert canonical_text(json.loads(text)) == text  # canonical form is a fixed point


@given(st.dictionaries(st.text(), scalars, max_size=8))
def test_key_order_does_not_change_the_hash(mapping: dict[str, object]) -> None:
    reordered = dict(reversed(list(mapping.items())))
    assert sha256_hex(canonical_text(mapping)) == sha256_hex(canonical_text(reordered))


@given(st.integers(-(2**52), 2**52))
def test_integral_floats_print_like_integers(number: int) -> None:
    # JavaScript has one number type: 5.0 and 5 are the same value and must store the same.
    assert canonical_text({"n": float(number)}) == canonical_text({"n": number})


@given(json_values)
def test_normalize_never_aliases_the_input(value: object) -> None:
    copy, _, _ = normalize(value)
    if isinstance(value, (dict, list)) and value:
        assert copy is not value


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, {1: "x"}, {"a": {1, 2}}, b"bytes", (1, 2)])
def test_non_json_values_are_refused(bad: object) -> None:
    with pytest.raises(MvuError) as refused:
        normalize(bad)
    assert refused.value.code == "MVU_JSON"


@settings(max_examples=30)
@given(st.integers(1, 150))
def test_depth_limit(depth: int) -> None:
    value: object = 0
    for _ in range(depth - 1):
        value = [value]
    if depth <= MAX_DEPTH:
        assert normalize(value)[2] == depth
    else:
        with pytest.raises(MvuError) as refused:
            normalize(value)
        assert refused.value.code == "MVU_LIMIT"


def _size(value: object, depth: int = 1) -> tuple[int, int]:
    """Nodes and depth of a value, counted the plain way (the reference for ``normalize``)."""
    children = list(value.values()) if isinstance(value, dict) else value if isinstance(value, list) else []
    sizes = [_size(child, depth + 1) for child in children]
    return 1 + sum(nodes for nodes, _ in sizes), max([depth, *(deepest for _, deepest in sizes)])


@given(json_values)
def test_normalize_counts_every_node_and_the_deepest_level(value: object) -> None:
    _, nodes, depth = normalize(value)
    assert (nodes, depth) == _size(value)


@given(json_values)
def test_a_limit_refuses_exactly_the_values_over_it(value: object) -> None:
    nodes, depth = _size(value)
    assert normalize(value, max_nodes=nodes, max_depth=depth)[1:] == (nodes, depth)
    for limits in ({"max_nodes": nodes - 1}, {"max_depth": depth - 1}):
        with pytest.raises(MvuError) as refused:
            normalize(value, **limits)
        assert refused.value.code == "MVU_LIMIT"


@given(json_values, st.booleans())
def test_check_bounds_refuses_what_normalize_refuses_without_copying(value: object, unsafe: bool) -> None:
    value = normalize(value)[0]
    if unsafe:
        value = [value, {"x": {"__proto__": 1}}]
    nodes, depth = _size(value)
    assert check_bounds(value, max_nodes=nodes, max_depth=depth) is (find_unsafe_key(value) is not None)
    for limits in ({"max_nodes": nodes - 1}, {"max_depth": depth - 1}):
        with pytest.raises(MvuError) as refused:
            check_bounds(value, **limits)
        assert refused.value.code == "MVU_LIMIT" and refused.value.details["kind"] == \
            ("nodes" if "max_nodes" in limits else "depth")


@given(json_values, st.sampled_from(["", "\ud800", "a\udfffb", "\U0001f600"]))
def test_js_json_bytes_is_js_json_in_utf8_lone_surrogates_escaped(value: object, text: str) -> None:
    value = normalize([value, text])[0]
    assert js_json_bytes(value) == js_json(value).encode()
    assert "\\ud800" in js_json(["\ud800"])


def test_a_lifted_depth_limit_is_a_limit_error_where_python_stops() -> None:
    value: object = 0
    for _ in range(sys.getrecursionlimit() + 10):
        value = [value]
    with pytest.raises(MvuError) as refused:
        normalize(value, max_depth=sys.maxsize)
    assert refused.value.code == "MVU_LIMIT"


def test_node_limit() -> None:
    with pytest.raises(MvuError) as refused:
        normalize(list(range(100_000)))
    assert refused.value.code == "MVU_LIMIT"
    assert normalize(list(range(99_999)))[1] == 100_000


@given(json_values, json_values)
def test_json_equal_is_equality_of_canonical_texts(left: object, right: object) -> None:
    assert json_equal(left, right) is (canonical_text(left) == canonical_text(right))
    assert json_equal(left, json.loads(canonical_text(left)))


@pytest.mark.parametrize(("left", "right", "equal"), [
    ({"a": 1, "b": [2, 3]}, {"b": [2, 3], "a": 1}, True),  # key order is not part of a value
    ({"hp": 5.0}, {"hp": 5}, True),                        # an integral float is that integer
    ([True], [1], False), ([False], [0], False),           # Python says equal, JSON does not
    ({"a": None}, {}, False), ([1, 2], [2, 1], False),
    (1e21, 10**21, False),                                 # 1e+21 is not 1000000000000000000000
])
def test_json_equal_compares_json_values_not_python_ones(left: object, right: object, equal: bool) -> None:
    assert json_equal(left, right) is equal


@pytest.mark.parametrize("bad", [math.inf, (1, 2), {1: "x"}, {"a": {1, 2}}])
def test_json_equal_refuses_a_non_json_value_even_compared_with_itself(bad: object) -> None:
    with pytest.raises(MvuError) as refused:
        json_equal(bad, bad)
    assert refused.value.code == "MVU_JSON"


def test_json_equal_refuses_a_value_past_the_limits_even_compared_with_itself() -> None:
    deep: object = 0
    for _ in range(MAX_DEPTH):
        deep = [deep]
    with pytest.raises(MvuError) as refused:
        json_equal(deep, deep)
    assert refused.value.code == "MVU_LIMIT"


@given(st.integers(0, 3000))
def test_state_byte_limit_is_exact(size: int) -> None:
    value = {"s": "x" * size}
    encoded = len(canonical_text(value).encode())
    if encoded <= 1000:
        assert measure_state(value, max_bytes=1000)[2].size == encoded
    else:
        with pytest.raises(MvuError) as refused:
            measure_state(value, max_bytes=1000)
        assert refused.value.details["requested"] == encoded


def test_loads_refuses_constants_and_garbage() -> None:
    for text in ("NaN", "[Infinity]", "{", "", "[1,]"):
        with pytest.raises(MvuError) as refused:
            loads(text)
        assert refused.value.code == "MVU_JSON"
    assert loads('{"a": 1.0}') == {"a": 1}


def test_unsafe_keys_and_pointers() -> None:
    assert find_unsafe_key({"a": [{"b": 1}, {"__proto__": 2}]}) == ["a", 1, "__proto__"]
    assert find_unsafe_key({"a": {"constructorx": 1}}) is None
    assert json_pointer(["a/b", "c~d", 0]) == "/a~1b/c~0d/0"


@given(json_values)
def test_copy_json_is_an_equal_value_sharing_no_container(value: object) -> None:
    copied = copy_json(value)
    assert copied == value and canonical_text(copied) == canonical_text(value)
    containers = [value]
    originals = set()
    while containers:
        item = containers.pop()
        if isinstance(item, (dict, list)):
            originals.add(id(item))
            containers.extend(item.values() if isinstance(item, dict) else item)
    copies = [copied]
    while copies:
        item = copies.pop()
        if isinstance(item, (dict, list)):
            assert id(item) not in originals
            copies.extend(item.values() if isinstance(item, dict) else item)


def _edited(value: object, data: st.DataObject) -> object:
    """``value`` with one scalar somewhere replaced (or kept), for pairs that differ in one place."""
    if isinstance(value, dict) and value and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(sorted(value)))
        return {**value, key: _edited(value[key], data)}
    if isinstance(value, list) and value and data.draw(st.booleans()):
        index = data.draw(st.integers(0, len(value) - 1))
        return [*value[:index], _edited(value[index], data), *value[index + 1:]]
    return data.draw(scalars | st.sampled_from([5, 5.0, -0.0, 0, True, 1]))


@given(json_values, st.data())
def test_json_equal_decides_near_pairs_as_their_canonical_texts_do(value: object, data: st.DataObject) -> None:
    other = _edited(value, data)
    assert json_equal(value, other) is (canonical_text(value) == canonical_text(other))
