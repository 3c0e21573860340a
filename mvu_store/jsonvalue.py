"""JSON values: canonical text, hashes, structural limits and unsafe keys.

A *JSON value* here is what ``json.loads`` produces: ``dict`` with ``str`` keys, ``list``,
``str``, ``int``, ``float`` (finite), ``bool`` and ``None``. Everything the store persists or
hashes goes through :func:`canonical_text`, so two equal values always have the same bytes and
the same hash, whatever their key order or whether a number was computed as ``5.0`` or ``5``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any, TypeAlias

from mvu_store.errors import Code, MvuError

JsonValue: TypeAlias = Any
"""A JSON value (kept as ``Any``: recursive aliases cost more in mypy than they catch here)."""

MAX_STATE_BYTES = 2 * 1024 * 1024
MAX_NODES = 100_000
MAX_DEPTH = 64

# Keys that name JavaScript's prototype machinery. Hosts and cards are JavaScript: a state that
# carries them can poison objects on the other side, so they are refused wherever a key enters.
UNSAFE_KEYS = frozenset({"__proto__", "constructor", "prototype"})

# Integral floats below this print as integers, as JavaScript prints them (it switches to exponent
# notation from 1e21 on), so a value computed as 5.0 stores and hashes like 5. Other floats keep
# Python's shortest repr, which can differ from JavaScript's in exponent form (1e-05 vs 1e-5):
# canonical text is mvu-store's own, and nothing compares it byte for byte with a host's.
_JS_INTEGER_PRINT_LIMIT = 1e21


@dataclass(frozen=True, slots=True)
class Measure:
    """The structural size of a value: canonical bytes, node count and nesting depth."""

    size: int
    nodes: int
    depth: int


def normalize(
    value: JsonValue, *, max_nodes: int = MAX_NODES, max_depth: int = MAX_DEPTH
) -> tuple[JsonValue, int, int]:
    """Return ``(copy, nodes, depth)``: a fresh, normalised copy of ``value``.

    Integral floats become ints (``5.0`` -> ``5``, as JavaScript prints them); non-JSON types,
    non-string keys and non-finite numbers are ``MVU_JSON``; exceeding ``max_nodes`` or
    ``max_depth`` is ``MVU_LIMIT``. Every value that reaches a store passes here, so the walk
    is built for speed: it recurses per container only (leaves are handled in their parent's
    loop), and counts a container's children at once. The recursion is bounded by
    ``max_depth`` (64 by default, far below Python's limit); a caller that lifts the limit gets
    ``MVU_LIMIT`` where Python's own limit would be reached.
    """
    counts = [1, 1]  # nodes seen, deepest level seen
    if max_nodes < 1:
        raise _too_many(max_nodes)
    if max_depth < 1:
        raise _too_deep(max_depth)

    def container(item: JsonValue, depth: int) -> JsonValue:  # a dict or a list
        inner = depth + 1
        if item:
            counts[0] += len(item)
            if counts[0] > max_nodes:
                raise _too_many(max_nodes)
            if inner > counts[1]:
                if inner > max_depth:
                    raise _too_deep(max_depth)
                counts[1] = inner
        if type(item) is dict:
            copy: dict[str, JsonValue] = {}
            for key, child in item.items():
                if type(key) is not str:
                    raise MvuError(Code.JSON, f"object key {key!r} is not a string")
                kind = type(child)
                if kind is str or kind is int or kind is bool or child is None:
                    copy[key] = child
                elif kind is dict or kind is list:
                    copy[key] = container(child, inner)
                else:
                    copy[key] = json_scalar(child)
            return copy
        items: list[JsonValue] = []
        for child in item:
            kind = type(child)
            if kind is str or kind is int or kind is bool or child is None:
                items.append(child)
            elif kind is dict or kind is list:
                items.append(container(child, inner))
            else:
                items.append(json_scalar(child))
        return items

    if type(value) is dict or type(value) is list:
        try:
            return container(value, 1), counts[0], counts[1]
        except RecursionError:
            raise _too_deep(max_depth) from None
    return json_scalar(value), 1, 1


def json_scalar(item: JsonValue) -> JsonValue:
    """A leaf's normalised value, as :func:`normalize` gives it: the same scalar, an integral
    float as an int, ``MVU_JSON`` for a non-finite number or anything that is no JSON scalar."""
    kind = type(item)
    if kind is str or kind is int or kind is bool or item is None:
        return item
    if kind is float:
        if not math.isfinite(item):
            raise MvuError(Code.JSON, "numbers must be finite (NaN and Infinity are not JSON)")
        return int(item) if item.is_integer() and abs(item) < _JS_INTEGER_PRINT_LIMIT else item
    raise MvuError(Code.JSON, f"{kind.__name__} is not a JSON value")


def check_bounds(value: JsonValue, *, max_nodes: int = MAX_NODES, max_depth: int = MAX_DEPTH,
                 keys: bool = True) -> bool:
    """Hold parsed JSON (``json.loads``'s, already normal) to the limits :func:`normalize` holds a
    value to (``MVU_LIMIT``), without copying it; return whether an object in it names a
    prototype key (:data:`UNSAFE_KEYS`; :func:`find_unsafe_key` finds where). A fraction of a
    normalising copy: what a reader of large trusted-shape input (a chat file) pays per state.
    ``keys``: whether to look for those keys (False: the caller looks in the value's text)."""
    if max_nodes < 1:
        raise _too_many(max_nodes)
    if max_depth < 1:
        raise _too_deep(max_depth)
    # Level by level: one comprehension per level instead of a push and pop per container.
    nodes, depth, unsafe = 1, 1, False
    level = [value] if type(value) is dict or type(value) is list else []
    while level:
        count = sum(map(len, level))
        if not count:
            break
        nodes += count
        if nodes > max_nodes:
            raise _too_many(max_nodes)
        if depth >= max_depth:  # a non-empty container here puts its children one deeper
            raise _too_deep(max_depth)
        depth += 1
        unsafe = unsafe or (keys and any(type(item) is dict and not UNSAFE_KEYS.isdisjoint(item) for item in level))
        level = [child for item in level for child in (item.values() if type(item) is dict else item)
                 if type(child) is dict or type(child) is list]
    return unsafe


def _too_many(limit: int) -> MvuError:
    return MvuError(Code.LIMIT, f"value has more than {limit} nodes", limit=limit, kind="nodes")


def _too_deep(limit: int) -> MvuError:
    return MvuError(Code.LIMIT, f"value is nested deeper than {limit}", limit=limit, kind="depth")


def copy_json(value: JsonValue) -> JsonValue:
    """A deep copy of a JSON value (containers copied, scalars shared: they are immutable), a
    third of what ``copy.deepcopy`` costs, which must also handle cycles and any type."""
    kind = type(value)
    if kind is dict:
        return {key: copy_json(item) for key, item in value.items()}
    if kind is list:
        return [copy_json(item) for item in value]
    return value


def _encoder(*, sort_keys: bool) -> Callable[[JsonValue], str]:
    """An encoder built once: ``json.dumps`` with options builds one per call, and even a kept
    ``JSONEncoder`` builds its C encoder per call, which costs more than encoding the small
    objects (sources, facts, receipts) most calls are for. The C encoder is kept without a
    cycle check: its values are normalised trees (:func:`normalize` bounds their depth), and a
    kept check would be left holding the containers of a call that raised."""
    options = json.JSONEncoder(sort_keys=sort_keys, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    if c_make_encoder is None:  # pragma: no cover - CPython always has the C encoder
        return options.encode
    encode = c_make_encoder(None, options.default, encode_basestring, None, ":", ",", sort_keys, False, False)
    return lambda value: "".join(encode(value, 0))


_CANONICAL = _encoder(sort_keys=True)
_STRINGIFY = _encoder(sort_keys=False)


def dumps(value: JsonValue) -> str:
    """Canonical JSON text of an already-normalised value: sorted keys, no spaces, UTF-8."""
    return _CANONICAL(value)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def js_json(value: JsonValue) -> str:
    """What JavaScript's ``JSON.stringify`` writes for JSON data: insertion order, no spaces.

    The original implementation hashes this text for its keys (versions, inherited copies), so
    keys computed here match keys it wrote.
    """
    return _escape_lone_surrogates(_STRINGIFY(value))


def js_json_bytes(value: JsonValue) -> bytes:
    """:func:`js_json` as UTF-8. A text that encodes holds no lone surrogate: the search for one
    (a quarter of the encoding's cost) is made only for a text that does not."""
    text = _STRINGIFY(value)
    try:
        return text.encode()
    except UnicodeEncodeError:
        return _escape_lone_surrogates(text).encode()


def _escape_lone_surrogates(text: str) -> str:
    # Well-formed JSON.stringify (ES2019) escapes a lone surrogate instead of emitting it.
    return _LONE_SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def utf8(text: str) -> bytes:
    """UTF-8 bytes of a text, or ``MVU_JSON`` for one that has none (a lone surrogate)."""
    try:
        return text.encode()
    except UnicodeEncodeError:
        raise MvuError(Code.JSON, "text holds a lone surrogate, which no UTF-8 JSON can carry") from None


def canonical_text(value: JsonValue) -> str:
    """Canonical JSON text of any JSON value (normalising it first)."""
    normalized, _, _ = normalize(value)
    return dumps(normalized)


def json_equal(left: JsonValue, right: JsonValue) -> bool:
    """Equal as JSON values, whatever the key order (stored JSON comes back with sorted keys).

    One walk decides most pairs: the same value, or a difference no normalisation can undo (a
    key, a length, a string). Only where the walk is unsure (``5`` against ``5.0``, a value
    that is not JSON, a structure over the limits) are the canonical texts compared, which
    refuses what is not JSON. So a value that is not JSON is refused unless the walk met a
    certain difference first: compare JSON data (what the store reads or normalised).

    Python's own ``==`` is coarser than JSON equality (``True == 1``, ``5 == 5.0``), so values
    it finds unequal are never equal as JSON: that answer comes at C speed, before the walk
    that tells apart what it cannot."""
    try:
        if left != right:
            return False
    except RecursionError:  # nested beyond Python's limit: the walk's own limits decide
        pass
    same = _same(left, right)
    return same if same is not None else canonical_text(left) == canonical_text(right)


def _same(left: JsonValue, right: JsonValue) -> bool | None:
    """True when two values are the same JSON value with the same types throughout (so their
    canonical texts are equal), False when they differ where canonical texts always differ,
    None when only the texts can tell."""
    nodes = 0
    stack: list[tuple[JsonValue, JsonValue, int]] = [(left, right, 1)]
    while stack:
        a, b, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES or depth > MAX_DEPTH:
            return None
        kind = type(a)
        if kind is not type(b):
            # An int and a float are equal when the float is integral: only the texts can tell.
            certain = kind in _JSON_TYPES and type(b) in _JSON_TYPES and {kind, type(b)} != _INT_AND_FLOAT
            return False if certain else None
        if kind is dict:
            if any(type(key) is not str for key in a) or any(type(key) is not str for key in b):
                return None
            if a.keys() != b.keys():
                return False
            stack.extend((value, b[key], depth + 1) for key, value in a.items())
        elif kind is list:
            if len(a) != len(b):
                return False
            stack.extend(zip(a, b, [depth + 1] * len(a), strict=True))
        elif kind is float:
            if not (math.isfinite(a) and math.isfinite(b)):
                return None
            if a != b:
                return False  # two finite floats that differ print differently, integral or not
        elif kind in _SCALARS:
            if a != b:
                return False
        else:
            return None
    return True


_SCALARS = frozenset({str, int, bool, float, type(None)})
_JSON_TYPES = _SCALARS | {dict, list}
# The one pair of types whose values can print alike (5 and 5.0; a bool is no number here).
_INT_AND_FLOAT = frozenset({int, float})


def sha256_hex(data: bytes | str) -> str:
    """Lower-case hex SHA-256 of bytes, or of a string's UTF-8 encoding (``MVU_JSON`` if it has none)."""
    return hashlib.sha256(utf8(data) if isinstance(data, str) else data).hexdigest()


def unique_keys(pairs: list[tuple[str, JsonValue]]) -> dict[str, JsonValue]:
    """``object_pairs_hook`` for ``json.loads`` that refuses an object naming a key twice:
    JSON leaves it undefined, parsers disagree (Python keeps the last, others the first), so a
    body or file that says two things is refused rather than read as one of them."""
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise MvuError(Code.JSON, f"an object names the key {key!r} twice", key=key)
            seen.add(key)
    return found


def loads(text: str | bytes) -> JsonValue:
    """Parse strict JSON (no NaN/Infinity) into a normalised value, or raise ``MVU_JSON``."""

    def refuse_constant(name: str) -> None:
        raise MvuError(Code.JSON, f"{name} is not JSON")

    try:
        parsed = json.loads(text, parse_constant=refuse_constant, object_pairs_hook=unique_keys)
    except (ValueError, RecursionError) as error:
        raise MvuError(Code.JSON, f"invalid JSON: {error}") from None
    normalized, _, _ = normalize(parsed)
    return normalized


def measure_state(value: JsonValue, *, max_bytes: int = MAX_STATE_BYTES) -> tuple[JsonValue, bytes, Measure]:
    """Check a variables envelope against the state budget (DIGEST P-4).

    Returns the normalised copy, its canonical bytes and its measure; a value over
    ``max_bytes``, ``MAX_NODES`` or ``MAX_DEPTH`` is ``MVU_LIMIT``.
    """
    normalized, nodes, depth = normalize(value)
    data = utf8(dumps(normalized))
    if len(data) > max_bytes:
        raise over_state_limit(len(data), max_bytes)
    return normalized, data, Measure(len(data), nodes, depth)


def over_state_limit(size: int, limit: int) -> MvuError:
    """The refusal of a state of ``size`` canonical bytes over a ``limit``-byte budget."""
    return MvuError(Code.LIMIT, f"state is {size} bytes, over the {limit}-byte limit", limit=limit,
                    requested=size, kind="bytes")


def find_unsafe_key(value: JsonValue) -> list[str | int] | None:
    """The path of the first prototype key (``__proto__`` ...) inside ``value``, or None."""
    stack: list[tuple[JsonValue, list[str | int]]] = [(value, [])]
    while stack:
        item, path = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                if key in UNSAFE_KEYS:
                    return [*path, key]
                stack.append((child, [*path, key]))
        elif isinstance(item, list):
            stack.extend((child, [*path, index]) for index, child in enumerate(item))
    return None


def json_pointer(path: list[str | int]) -> str:
    """RFC 6901 pointer for a path of keys and indexes (``["a/b", 0]`` -> ``/a~1b/0``)."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)
