"""The lodash helpers that wrap ``String.prototype``'s pattern methods and ``parseInt``
(``_.replace``, ``_.split``, ``_.parseInt``) and the type checks of regular expressions and sets.

They reach the same implementation as the methods (``string_patterns``), after lodash's own
argument rules: ``toString`` of the subject, a missing replacement leaves the text as it is, a
``split`` limit through ``>>> 0``, and ``parseInt``'s radix 0 for null or undefined.
"""

from __future__ import annotations

from typing import Any

from mvu_store.js.strings import units
from mvu_store.js.values import UNDEFINED, Budget, Builtin, arg, is_number
from mvu_store.schema.builtins import item_string, lodash_string
from mvu_store.schema.numeric import parse_int
from mvu_store.schema.regex import Regex
from mvu_store.schema.string_patterns import replace, split, to_uint32

_REPLACE_FIRST = replace(every=False)


def _replace(budget: Budget, args: list[Any]) -> str:
    text = lodash_string(arg(args, 0))
    return text if len(args) < 3 else _REPLACE_FIRST(budget, text, [args[1], args[2]])


def _split(budget: Budget, args: list[Any]) -> list[Any]:
    text, separator, limit = lodash_string(arg(args, 0)), arg(args, 1), arg(args, 2)
    if limit is not UNDEFINED and not is_number(limit) and len(args) > 3:
        separator = limit = UNDEFINED  # called as an iteratee: `_.map(texts, _.split)`
    if text and separator is not None and separator is not UNDEFINED and not isinstance(separator, Regex):
        separator = item_string(separator)
        if not separator and units(text) != text:
            # lodash splits text with astral characters by code point, not by UTF-16 unit
            budget.charge(1 + len(text) // 16)
            return list(text)[:2**32 - 1 if limit is UNDEFINED else to_uint32(limit)]
    return split(budget, text, [separator, limit])


def _parse_int(budget: Budget, args: list[Any]) -> Any:
    radix = arg(args, 1)
    if radix is None or radix is UNDEFINED or len(args) > 2:
        radix = 0
    return parse_int(budget, [lodash_string(arg(args, 0)), radix])


PATTERN_HELPERS: dict[str, Builtin] = {
    "replace": Builtin("replace", _replace),
    "split": Builtin("split", _split),
    "parseInt": Builtin("parseInt", _parse_int),
    "isRegExp": Builtin("isRegExp", lambda budget, args: isinstance(arg(args, 0), Regex)),
    "isSet": Builtin("isSet", lambda budget, args: False),  # no Set exists in declarations
}
