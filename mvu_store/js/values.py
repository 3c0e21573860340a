"""JavaScript's values as mvu-store runs them, and the conversions between them.

Values are JSON values (``dict``, ``list``, ``str``, ``int``/``float``, ``bool``, ``None``) plus
:data:`UNDEFINED` and opaque capabilities (functions, schemas, namespaces) that are never JSON
content. Conversions follow ECMAScript where declarations depend on them (``Number("")`` is 0,
``String(1.0)`` is ``"1"``), and refuse the implicit object-to-primitive conversions S-7 forbids.
"""

from __future__ import annotations

import math
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.js.numbers import number_to_string, string_to_number

FUEL = 1_000_000
"""Work units one compile or one validation may spend (about one unit per AST node visited)."""
MAX_CALL_DEPTH = 64
MAX_TEXT = 1 << 20
"""Longest string a declaration may build (a state is at most 2 MiB of JSON anyway)."""


class _Undefined:
    """JavaScript's ``undefined``: distinct from ``None`` (``null``)."""

    _instance: _Undefined | None = None

    def __new__(cls) -> _Undefined:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "undefined"

    def __bool__(self) -> bool:
        return False


UNDEFINED: Any = _Undefined()


class Budget:
    """The shared fuel of one compile or one validation, the call depth and the fixed clock."""

    # weakly referenceable: a constant regex keys its per-validation lastIndex by the budget
    __slots__ = ("__weakref__", "depth", "frozen", "fuel", "now_ms")

    def __init__(self, now_ms: int | None = None, fuel: int = FUEL, frozen: frozenset[int] = frozenset()) -> None:
        self.fuel = fuel
        self.depth = 0
        self.now_ms = now_ms
        # ids of the declaration's own containers (top-level constants, captured literals): a
        # validation may read them but never write them, so every validation starts the same.
        self.frozen = frozen

    def charge(self, amount: int) -> None:
        self.fuel -= amount
        if self.fuel < 0:
            raise MvuError(Code.LIMIT, "the declaration ran out of its computation budget", limit=FUEL, kind="fuel")


class Opaque:
    """Base of capabilities (functions, schemas, namespaces): never readable as JSON content."""

    __slots__ = ()
    type_name = "object"

    def get(self, key: str) -> Any:
        raise MvuError(Code.UNSUPPORTED, f"property `{key}` of {self.describe()} is not supported")

    def set(self, budget: Budget, key: str, value: Any) -> None:
        """``obj.key = value``: refused unless the object owns a writable field (a RegExp's ``lastIndex``)."""
        raise fail(f"cannot modify a {typeof(self)}")

    def describe(self) -> str:
        return self.type_name


class PrimitiveObject(Opaque):
    """An object whose conversions the language itself defines, with no declaration code to
    hook them (a ``Date``): arithmetic and comparison read its :meth:`number`, string contexts
    its :meth:`text`. S-7 refuses implicit conversions of other objects only."""

    __slots__ = ()

    def number(self) -> float | int:
        raise NotImplementedError

    def text(self) -> str:
        raise NotImplementedError


class JsCallable(Opaque):
    """Anything a declaration may call."""

    __slots__ = ()
    type_name = "function"

    def call(self, budget: Budget, args: list[Any]) -> Any:
        raise NotImplementedError


class FunctionObject(JsCallable):
    """A declaration's own function: it may carry properties (bundlers' ``getter.a``)."""

    __slots__ = ("members",)

    def __init__(self) -> None:
        self.members: dict[str, Any] = {}


class Builtin(JsCallable):
    """A Python function exposed to declarations: ``fn(budget, args)``, maybe with members
    (``Number`` is callable and has ``Number.isInteger``)."""

    __slots__ = ("fn", "members", "name")

    def __init__(self, name: str, fn: Any, members: dict[str, Any] | None = None) -> None:
        self.name = name
        self.fn = fn
        self.members = members or {}

    def get(self, key: str) -> Any:
        if key in self.members:
            return self.members[key]
        if key == "__esModule":
            return UNDEFINED
        return super().get(key)

    def call(self, budget: Budget, args: list[Any]) -> Any:
        budget.fuel -= 1  # Budget.charge inlined: builtins are called on every transform
        if budget.fuel < 0:
            budget.charge(0)
        return self.fn(budget, args)

    def describe(self) -> str:
        return f"function {self.name}"


class Namespace(Opaque):
    """A read-only bag of members such as ``Math`` or ``_``."""

    __slots__ = ("members", "name")

    def __init__(self, name: str, members: dict[str, Any]) -> None:
        self.name = name
        self.members = members

    def get(self, key: str) -> Any:
        if key in self.members:
            return self.members[key]
        if key == "__esModule":  # bundlers probe it to pick a module's default export
            return UNDEFINED
        raise MvuError(Code.UNSUPPORTED, f"`{self.name}.{key}` is not supported")

    def describe(self) -> str:
        return self.name


MAX_SAFE_INTEGER = 2**53 - 1  # Number.MAX_SAFE_INTEGER


def text_limit(text: str) -> str:
    """``text``, or ``MVU_LIMIT`` when it is longer than :data:`MAX_TEXT` (no string doubling)."""
    if len(text) > MAX_TEXT:
        raise MvuError(Code.LIMIT, f"a string grew beyond {MAX_TEXT} characters", limit=MAX_TEXT, kind="string")
    return text


def arg(args: list[Any], index: int) -> Any:
    return args[index] if index < len(args) else UNDEFINED


class ScriptError(MvuError):
    """A JavaScript exception (a ``TypeError``, a ``throw``): ``MVU_SCHEMA``, and the only kind a
    declaration's own ``try``/``catch`` may handle. Isolation refusals, budgets and unsupported
    code are plain ``MvuError`` and always end the run."""

    def __init__(self, message: str, value: Any = None, **details: Any) -> None:
        super().__init__(Code.SCHEMA, message, **details)
        self.value = {"name": "TypeError", "message": message} if value is None else value


def fail(message: str, **details: Any) -> ScriptError:
    """The error a JavaScript ``TypeError`` becomes: the declaration cannot go on."""
    return ScriptError(message, **details)


def is_number(value: Any) -> bool:
    kind = type(value)
    return kind is int or kind is float


def typeof(value: Any) -> str:
    kind = type(value)
    if kind is str:
        return "string"
    if kind is bool:
        return "boolean"
    if kind is int or kind is float:
        return "number"
    if value is UNDEFINED:
        return "undefined"
    if isinstance(value, JsCallable):
        return "function"
    return "object"


def truthy(value: Any) -> bool:
    kind = type(value)
    if kind is bool:
        return bool(value)
    if kind is str:
        return len(value) > 0
    if kind is int:
        return bool(value)
    if kind is float:
        return bool(value) and not math.isnan(value)
    return value is not None and value is not UNDEFINED


def to_number(value: Any, *, explicit: bool = False) -> float | int:
    """ECMAScript ``ToNumber``.

    Implicit conversions (arithmetic, comparison) refuse arrays and objects (S-7: no implicit
    object-to-number conversion); ``explicit`` ones (``Number(x)``, ``z.coerce.number()``) follow
    JavaScript: ``[]`` is 0, ``[5]`` is 5, any other object is NaN.
    """
    kind = type(value)
    if kind is int or kind is float:
        return value  # type: ignore[no-any-return]
    if kind is bool:
        return 1 if value else 0
    if value is None:
        return 0
    if value is UNDEFINED:
        return math.nan
    if kind is str:
        return string_to_number(value)
    if isinstance(value, PrimitiveObject):
        return value.number()
    if not explicit:
        raise fail(f"implicit conversion of {typeof(value)} to a number is not allowed")
    if kind is list:  # through its string, as JavaScript does: [] is 0, [5] is 5, [null] is 0
        return string_to_number(to_string(value))
    return math.nan


def to_string(value: Any) -> str:
    """ECMAScript ``ToString`` for the values declarations handle."""
    kind = type(value)
    if kind is str:
        return value  # type: ignore[no-any-return]
    if kind is bool:
        return "true" if value else "false"
    if kind is int or kind is float:
        return number_to_string(value)
    if value is None:
        return "null"
    if value is UNDEFINED:
        return "undefined"
    if kind is list:
        return text_limit(",".join("" if item is None or item is UNDEFINED else to_string(item) for item in value))
    if kind is dict:
        return "[object Object]"
    if isinstance(value, PrimitiveObject):
        return value.text()
    raise fail(f"cannot convert {typeof(value)} to a string")


def thrown(value: Any) -> ScriptError:
    """The exception ``throw value`` raises (also a rejected promise's reason, awaited)."""
    message = value.get("message", UNDEFINED) if type(value) is dict else value
    return ScriptError(f"the declaration threw: {to_string(message)}", value)


def strict_equals(left: Any, right: Any) -> bool:
    """``===``: same type and value; objects by identity; NaN is unequal to itself."""
    left_kind, right_kind = type(left), type(right)
    if left_kind is bool or right_kind is bool:
        return left_kind is right_kind and left == right
    if is_number(left) and is_number(right):
        return bool(left == right)
    if left_kind is str and right_kind is str:
        return bool(left == right)
    return left is right


def loose_equals(left: Any, right: Any) -> bool:
    """``==`` for primitives (objects compare by identity, never through conversion)."""
    if (left is None or left is UNDEFINED) and (right is None or right is UNDEFINED):
        return True
    if left is None or left is UNDEFINED or right is None or right is UNDEFINED:
        return False
    if not _is_primitive(left) or not _is_primitive(right):
        return left is right
    if type(left) is str and type(right) is str:
        return bool(left == right)
    return bool(to_number(left) == to_number(right))


def same_value_key(value: Any) -> tuple[str, Any]:
    """A hashable identity with JavaScript's SameValueZero: ``1`` and ``1.0`` are one, ``1`` and
    ``true`` differ, NaN equals NaN, objects are themselves. Sets, uniq and literals use it."""
    kind = type(value)
    if kind is bool:
        return ("boolean", value)
    if kind is int or kind is float:
        return ("number", float(value)) if not math.isnan(value) else ("nan", None)
    if kind is str:
        return ("string", value)
    if value is None or value is UNDEFINED:
        return ("null" if value is None else "undefined", None)
    return ("object", id(value))


def _is_primitive(value: Any) -> bool:
    return type(value) in (str, int, float, bool)


def js_length(text: str) -> int:
    """String length in UTF-16 code units, as JavaScript (and Zod's min/max) count it."""
    if text.isascii():
        return len(text)
    # encoding runs in C: a Python loop over the characters made `.length` of a long string cost
    # milliseconds per read, uncharged
    return len(text.encode("utf-16-le", "surrogatepass")) // 2
