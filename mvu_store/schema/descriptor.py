"""The schema descriptor ``{mvuSchema:1, interpreterVersion, source}``: compile, cache, validate.

Compiled forms (see :mod:`mvu_store.schema.program`) live in a process cache keyed by
(SHA-256 of source, version) and are never stored: the descriptor keeps the source verbatim.
Validation checks the input is JSON, parses it and writes the output as normalised JSON.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.js.values import Budget
from mvu_store.jsonvalue import MAX_DEPTH, MAX_NODES, JsonValue, sha256_hex
from mvu_store.schema.issues import Issue
from mvu_store.schema.native import Native, ValidationMemo, to_json
from mvu_store.schema.program import Compiled, build
from mvu_store.schema.types import ParseCtx

INTERPRETER_VERSIONS = (1, 2)
CURRENT_VERSION = 2
_CACHE_SIZE = 128


@dataclass(frozen=True, slots=True)
class ValidationResult:
    """``ok`` and the parsed ``value`` (None when refused), or the ``issues`` that refused it."""

    ok: bool
    value: JsonValue
    issues: tuple[Issue, ...]


def compile_schema(source: str, *, interpreter_version: int = CURRENT_VERSION) -> dict[str, Any]:
    """Check that ``source`` compiles and return its descriptor; refusals raise ``MvuError``."""
    if type(source) is not str:
        raise MvuError(Code.SCHEMA, "the declaration source must be a string")
    _compiled(source, _version(interpreter_version))
    return {"mvuSchema": 1, "interpreterVersion": interpreter_version, "source": source}


def validate(descriptor: dict[str, Any], value: JsonValue, *, now_ms: int | None = None,
             memo: ValidationMemo | None = None) -> ValidationResult:
    """Parse ``value`` with the descriptor's schema, as Zod's ``safeParse`` would.

    ``now_ms`` is the clock ``Date.now()`` reads inside the declaration (the caller's commit
    time, so results are reproducible). Refused values give ``ok=False`` and Zod's issues;
    broken declarations and exhausted budgets raise ``MvuError``.

    ``memo`` (a :class:`ValidationMemo`, one per series of related states, e.g. one per reply)
    lets the parts of ``value`` that are the identical objects of an earlier call of the same
    memo reuse their results; the result is the same as without it. The caller must then never
    mutate ``value`` afterwards and must treat results as immutable (they share unchanged
    subtrees with earlier results); see :class:`ValidationMemo`.

    The compiled fast path (mvu_store.schema.native) answers values that pass; any other value
    (an issue, a refusal, a budget) is decided by the interpreter from the start.
    """
    if type(descriptor) is not dict or descriptor.get("mvuSchema") != 1 or type(descriptor.get("source")) is not str:
        raise MvuError(Code.SCHEMA, "not a schema descriptor ({mvuSchema:1, interpreterVersion, source})")
    source, version = descriptor["source"], _version(descriptor.get("interpreterVersion"))
    key = _key(source, version)
    compiled = _compiled(source, version, key)
    native = _native(key, compiled)
    if native is not None:
        try:
            return ValidationResult(True, native.run(value, Budget(now_ms, frozen=compiled.frozen), memo), ())
        except Exception:
            pass
    _check_input(value, 1, MAX_NODES)
    ctx = ParseCtx(Budget(now_ms, frozen=compiled.frozen))
    output = _guarded(lambda: compiled.root.run(value, ctx))
    if ctx.issues:
        return ValidationResult(False, None, tuple(ctx.issues))
    return ValidationResult(True, _guarded(lambda: to_json(output, 1)), ())


def _version(version: Any) -> int:
    if type(version) is not int or version not in INTERPRETER_VERSIONS:
        raise MvuError(Code.VERSION, f"unknown interpreter version {version!r}", supported=list(INTERPRETER_VERSIONS))
    return version


_cache: OrderedDict[tuple[str, int], Compiled | MvuError] = OrderedDict()
_cache_lock = threading.Lock()
# The fast path of each cached declaration, with the Compiled it was built from (so a recompiled
# declaration never meets a stale one); entries go when their declaration leaves _cache.
_natives: dict[tuple[str, int], tuple[Compiled, Native | None]] = {}


# Source texts' hashes: a validation hashes its declaration's source otherwise, ~2 % of a whole
# validation of the benchmark; the dict compares the text itself (by identity first), so a hit
# is exact. Bounded like _cache; emptied, not evicted, when full (a refill costs one hash each).
_hashes: dict[str, str] = {}


def _key(source: str, version: int) -> tuple[str, int]:
    digest = _hashes.get(source)
    if digest is None:
        if len(_hashes) >= _CACHE_SIZE:
            _hashes.clear()
        digest = _hashes[source] = sha256_hex(source.encode("utf-8", "surrogatepass"))
    return digest, version


def _native(key: tuple[str, int], compiled: Compiled) -> Native | None:
    """The fast path of a compiled declaration, built on its first validation (a compile alone
    does not pay for it); None when it cannot be built (the interpreter alone then runs)."""
    entry = _natives.get(key)
    if entry is not None and entry[0] is compiled:
        return entry[1]
    try:
        native: Native | None = Native(compiled.root)
    except Exception:
        native = None
    with _cache_lock:
        _natives[key] = (compiled, native)
        for stale in [known for known in _natives if known not in _cache]:
            del _natives[stale]
    return native


def _compiled(source: str, version: int, key: tuple[str, int] | None = None) -> Compiled:
    key = _key(source, version) if key is None else key
    with _cache_lock:
        entry = _cache.get(key)
        if entry is not None:
            _cache.move_to_end(key)
    if entry is None:
        try:
            entry = _guarded(lambda: build(source, version))
        except MvuError as error:
            entry = error
        with _cache_lock:
            _cache[key] = entry
            while len(_cache) > _CACHE_SIZE:
                _cache.popitem(last=False)
    if isinstance(entry, MvuError):
        raise MvuError(entry.code, entry.message, **entry.details)
    return entry


def _guarded(action: Any) -> Any:
    """Run interpreter code; Python-level failures of the declaration become ``MvuError``."""
    try:
        return action()
    except RecursionError:
        raise MvuError(Code.LIMIT, "the declaration nests too deeply", kind="depth") from None
    except (ArithmeticError, ValueError, TypeError) as error:
        raise MvuError(Code.SCHEMA, f"the declaration failed: {error}") from None
    except MvuError:
        raise
    except Exception as error:
        # The public contract is that only MvuError escapes. A defect of the interpreter itself
        # (never of the caller) is refused cleanly and marked, so tests still catch it.
        raise MvuError(Code.SCHEMA, "internal error while interpreting the declaration",
                       internal=type(error).__name__) from error


def _check_input(value: Any, depth: int, room: int) -> int:
    """Check that ``value`` is JSON within jsonvalue's limits; return the node budget left.

    The input is not copied: parsing builds fresh containers, and the two schemas that hand
    input through (z.any / z.unknown, z.preprocess's function) copy it, so the caller's value
    is never changed. Checking instead of normalising halves the cost of this step.
    """
    kind = type(value)
    if room <= 0:
        raise MvuError(Code.LIMIT, f"value has more than {MAX_NODES} nodes", limit=MAX_NODES, kind="nodes")
    if kind is str or kind is int or kind is bool or value is None:
        return room - 1
    if kind is dict or kind is list:
        room = _check_container(value, depth, room)
        if room < 0:
            raise MvuError(Code.LIMIT, f"value has more than {MAX_NODES} nodes", limit=MAX_NODES, kind="nodes")
        return room
    if kind is float and math.isfinite(value):
        return room - 1
    if kind is float:
        raise MvuError(Code.JSON, "numbers must be finite (NaN and Infinity are not JSON)")
    raise MvuError(Code.JSON, f"{kind.__name__} is not a JSON value")


def _check_container(value: Any, depth: int, room: int) -> int:
    if depth > MAX_DEPTH:
        raise MvuError(Code.LIMIT, f"value is nested deeper than {MAX_DEPTH}", limit=MAX_DEPTH, kind="depth")
    if type(value) is dict:
        for key, item in value.items():
            if type(key) is not str:
                raise MvuError(Code.JSON, f"object key {key!r} is not a string")
            leaf = type(item)  # leaves are counted inline: most nodes are leaves
            if leaf is str or leaf is int or leaf is bool or item is None:
                room -= 1
            else:
                room = _check_input(item, depth + 1, room)
        return room - 1
    for item in value:
        leaf = type(item)
        if leaf is str or leaf is int or leaf is bool or item is None:
            room -= 1
        else:
            room = _check_input(item, depth + 1, room)
    return room - 1
