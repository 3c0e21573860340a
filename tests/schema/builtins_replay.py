"""Replays the node oracle of the built-ins (``builtins_oracle.json``) through the interpreter.

Each expression runs as the body of an arrow function compiled with the interpreter's globals
(``_`` is lodash), on a fresh budget with the clock fixed; its value is written in the oracle's
tagged form (undefined, NaN, ±Infinity, -0, holes, dates and thrown errors survive JSON).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.js.members import own_keys
from mvu_store.js.values import UNDEFINED, Budget, JsCallable, ScriptError
from mvu_store.schema.builtins import GLOBALS
from mvu_store.schema.dates import JsDate
from mvu_store.schema.evaluate import Compiler
from mvu_store.schema.lodash import LODASH
from mvu_store.schema.runtime import Frame
from mvu_store.schema.syntax import parse_program

ORACLE = Path(__file__).with_name("builtins_oracle.json")
NOW_MS = 1_748_859_000_000
_CHUNK = 200


def cases() -> list[tuple[str, str, Any]]:
    data = json.loads(ORACLE.read_text(encoding="utf-8"))
    return [(family, expression, expected) for family, expression, expected in data["cases"]]


def encode(value: Any) -> Any:
    """``value`` in the oracle's tagged form (numbers as floats: JSON does not keep 1 vs 1.0)."""
    if value is UNDEFINED:
        return {"$": "undefined"}
    kind = type(value)
    if kind is bool or value is None or kind is str:
        return value
    if kind is int or kind is float:
        return encode_number(value)
    if kind is list:
        return [encode(item) for item in value]
    if kind is dict:
        return {"$": "object", "entries": [[key, encode(value[key])] for key in own_keys(value)]}
    if isinstance(value, JsDate):
        return {"$": "date", "time": encode_number(value.time)}
    if isinstance(value, JsCallable):
        return {"$": "function"}
    return {"$": "object", "entries": []}


def encode_number(number: float | int) -> Any:
    if math.isnan(number):
        return {"$": "NaN"}
    if math.isinf(number):
        return {"$": "Infinity" if number > 0 else "-Infinity"}
    if number == 0 and math.copysign(1, number) < 0:
        return {"$": "-0"}
    return float(number)


def normalized(expected: Any) -> Any:
    """The fixture's value with its numbers as floats, as :func:`encode` writes them, and its
    array holes as ``undefined`` (arrays stay dense here: S-7)."""
    if expected == {"$": "hole"}:
        return {"$": "undefined"}
    if type(expected) is int or type(expected) is float:
        return float(expected)
    if type(expected) is list:
        return [normalized(item) for item in expected]
    if type(expected) is dict:
        return {key: normalized(item) for key, item in expected.items()}
    return expected


def outcome(fn: JsCallable) -> Any:
    """What calling ``fn`` gives, in the tagged form; refusals are tagged by their code."""
    try:
        return encode(fn.call(Budget(now_ms=NOW_MS), []))
    except ScriptError as error:
        name = error.value.get("name") if type(error.value) is dict else None
        return {"$": "throw", "name": name}
    except MvuError as error:
        if error.code == Code.LIMIT:
            return {"$": "limit"}
        if error.code == Code.UNSUPPORTED:
            return {"$": "unsupported", "message": error.message}
        return {"$": "refused", "code": str(error.code), "message": error.message}
    except Exception as error:  # an untyped error is a bug: the case fails and names it
        return {"$": "crash", "message": f"{type(error).__name__}: {error}"}


def _functions(expressions: list[str]) -> list[Any]:
    """One compiled arrow per expression (a chunk at a time; a chunk that does not compile
    falls back to one expression at a time, so one refusal names its own case)."""
    source = "const cases = [\n" + ",\n".join(f"() => ({expression})" for expression in expressions) + "\n];"
    globals_frame = Frame(None, Budget(now_ms=NOW_MS))
    globals_frame.vars.update(GLOBALS)
    globals_frame.vars["_"] = LODASH
    try:
        program = parse_program(source)
        compiler = Compiler(globals_frame.vars, program, lambda url, node: None)
        top = Frame(globals_frame, globals_frame.budget)
        for statement in program.kids:
            assert statement is not None
            compiler.statement(statement)(top)
        return list(top.vars["cases"])
    except MvuError as error:
        if len(expressions) == 1:
            return [{"$": "compile", "code": str(error.code), "message": error.message}]
        return [fn for expression in expressions for fn in _functions([expression])]


def replay(selected: list[tuple[str, str, Any]]) -> Iterator[tuple[str, str, Any, Any]]:
    """(family, expression, expected, actual) for every case."""
    for start in range(0, len(selected), _CHUNK):
        chunk = selected[start:start + _CHUNK]
        for (family, expression, expected), fn in zip(chunk, _functions([c[1] for c in chunk]), strict=True):
            actual = outcome(fn) if isinstance(fn, JsCallable) else fn
            yield family, expression, normalized(expected), actual
