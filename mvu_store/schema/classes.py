"""``value instanceof Name`` for the built-in classes a declaration can meet.

Cards test what they caught (``e instanceof Error ? e.message : String(e)``) and what they were
given (``v instanceof Date``, ``Array``). The interpreter has no user classes and no wrappers, so
the right-hand side must name a built-in class; the answer follows the value's own kind. An error
here is the object ``new Error(...)`` or a failed operation makes: ``name`` and ``message``, the
name one of JavaScript's error classes (each of which is also an ``Error``).
"""

from __future__ import annotations

from typing import Any

from mvu_store.js.values import JsCallable, Opaque
from mvu_store.schema.builtins import JsSet
from mvu_store.schema.dates import JsDate
from mvu_store.schema.maps import JsMap
from mvu_store.schema.promises import JsPromise
from mvu_store.schema.regex import Regex

ERRORS = frozenset({"Error", "TypeError", "RangeError", "SyntaxError", "ReferenceError", "EvalError", "URIError"})
# Classes whose instances the interpreter never makes (weak maps, boxed primitives): always false.
_NEVER = frozenset({"WeakMap", "WeakSet", "String", "Number", "Boolean", "Symbol", "BigInt"})
_KINDS: dict[str, Any] = {"Date": JsDate, "RegExp": Regex, "Set": JsSet, "Map": JsMap, "Array": list,
                          "Function": JsCallable, "Promise": JsPromise}
CLASS_NAMES = ERRORS | _NEVER | set(_KINDS) | {"Object"}


def instance_of(value: Any, name: str) -> bool:
    if name in ERRORS:
        kind = value.get("name") if type(value) is dict and "message" in value else None
        return kind in ERRORS and (name == "Error" or kind == name)
    if name == "Object":
        return type(value) is dict or type(value) is list or isinstance(value, Opaque)
    kind = _KINDS.get(name)
    return kind is not None and isinstance(value, kind)
