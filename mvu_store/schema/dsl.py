"""The ``z`` namespace a declaration sees: Zod v4's constructors, mapped onto our schema nodes.

Version 1 descriptors lack ``looseObject``/``strictObject``, which S-3 introduces with
version 2. Anything not listed is ``MVU_UNSUPPORTED`` when the declaration
reaches it, never silently accepted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.js.values import UNDEFINED, Budget, Builtin, Namespace, arg
from mvu_store.schema.composite import (
    ArraySchema,
    DiscriminatedUnionSchema,
    IntersectionSchema,
    RecordSchema,
    TupleSchema,
    UnionSchema,
    XorSchema,
    object_schema,
)
from mvu_store.schema.primitives import (
    AnySchema,
    BooleanSchema,
    CustomSchema,
    DateSchema,
    JsonSchema,
    LiteralSchema,
    NeverSchema,
    NumberSchema,
    StringBoolSchema,
    StringSchema,
    TemplateLiteralSchema,
    list_arg,
    nan_schema,
    void_schema,
)
from mvu_store.schema.types import (
    NEVER,
    ExactOptional,
    Lazy,
    NonOptional,
    Nullable,
    Optional,
    Pipe,
    Readonly,
    Schema,
    Transform,
    as_schema,
    custom_message,
    function_arg,
)

_V2_ONLY = frozenset({"looseObject", "strictObject"})


def _object(mode: str) -> Any:
    return lambda budget, args: object_schema({} if arg(args, 0) is UNDEFINED else arg(args, 0), mode)


def _enum(budget: Budget, args: list[Any]) -> Schema:
    values = arg(args, 0)
    if type(values) is dict:  # z.enum({A: 'a'}) / nativeEnum: the object's values
        values = list(values.values())
    return LiteralSchema("enum", list(list_arg(values)))


def _literal(budget: Budget, args: list[Any]) -> Schema:
    value = arg(args, 0)
    return LiteralSchema("literal", list(value) if type(value) is list else [value])


def _record(partial: bool) -> Any:
    """``z.record`` and ``z.partialRecord``; ``z.looseRecord`` is a partial one here, as a key
    its key schema refuses is kept there: see _loose_record."""

    def record(budget: Budget, args: list[Any]) -> Schema:
        if len(args) == 1:  # Zod 3's z.record(values) shape: string keys
            return RecordSchema(StringSchema(), as_schema(args[0], "record's values"), partial=partial)
        return RecordSchema(as_schema(arg(args, 0), "record's keys"), as_schema(arg(args, 1), "record's values"),
                            partial=partial)

    return record


def _loose_record(budget: Budget, args: list[Any]) -> Schema:
    """``z.looseRecord(keys, values)``: keys the key schema refuses pass through unchanged."""
    return RecordSchema(as_schema(arg(args, 0), "record's keys"), as_schema(arg(args, 1), "record's values"),
                        partial=True, loose=True)


def _union(kind: type[UnionSchema]) -> Any:
    return lambda budget, args: kind([as_schema(option, "a union option") for option in list_arg(arg(args, 0))])


def _discriminated(budget: Budget, args: list[Any]) -> Schema:
    key = arg(args, 0)
    if type(key) is not str:
        raise MvuError(Code.SCHEMA, "discriminatedUnion needs a key name")
    return DiscriminatedUnionSchema(key, [as_schema(option, "an option") for option in list_arg(arg(args, 1))])


def _tuple(budget: Budget, args: list[Any]) -> Schema:
    items = [as_schema(item, "a tuple item") for item in list_arg(arg(args, 0))]
    rest = arg(args, 1)
    return TupleSchema(items, None if rest is UNDEFINED else as_schema(rest, "tuple's rest"))


def _preprocess(budget: Budget, args: list[Any]) -> Schema:
    fn = function_arg(arg(args, 0), "preprocess")
    return Pipe(Transform(fn, raw_input=True), as_schema(arg(args, 1), "preprocess's schema"))


def _make(factory: Any) -> Builtin:
    return Builtin("schema", lambda budget, args: factory())


def _string_format(name: str, build: Callable[[StringSchema, Any], Schema] | None = None) -> Builtin:
    """``z.email()``, ``z.uuid()``...: a string with that format check (Zod's own shorthand);
    a message given there is also the message of a value that is no string."""

    def make(budget: Budget, args: list[Any]) -> Schema:
        base = StringSchema()
        base.message = custom_message(arg(args, 0))
        return base.named_format(name, args) if build is None else build(base, arg(args, 0))

    return Builtin(name, make)


_FORMATS = ("email", "uuid", "uuidv4", "uuidv6", "uuidv7", "guid", "nanoid", "cuid", "cuid2", "ulid", "xid", "ksuid",
            "ipv4", "cidrv4", "e164", "hex", "hostname", "base64", "base64url", "ipv6", "cidrv6")


def _iso() -> Namespace:
    return Namespace("z.iso", {
        "date": _string_format("date"),
        "duration": _string_format("duration"),
        "datetime": Builtin("datetime", lambda budget, args: StringSchema().m_datetime(budget, args)),
        "time": Builtin("time", lambda budget, args: StringSchema().m_time(budget, args)),
    })


def _ranged(low: float, high: float, integer: bool) -> Builtin:
    return Builtin("number", lambda budget, args: NumberSchema().ranged(low, high, integer))


_FLOAT32 = 3.4028234663852886e38
_FLOAT64 = 1.7976931348623157e308

REFUSED: dict[str, str] = {
    "bigint": "a bigint is no JSON value", "int64": "a bigint is no JSON value", "uint64": "a bigint is no JSON value",
    "symbol": "a symbol is no JSON value", "map": "a Map is no JSON value", "set": "a Set is no JSON value",
    "file": "a File is no JSON value", "promise": "validation is synchronous",
    "function": "a function is no JSON value", "instanceof": "classes are not available",
    "codec": "encoding is not part of validation", "emoji": "needs Unicode's emoji properties",
    "stringFormat": "custom formats run arbitrary checks",
    "success": "not implemented: no card uses it", "creditCard": "not implemented: no card uses it",
    "iban": "not implemented: no card uses it", "currencyCode": "not implemented: no card uses it",
    "mime": "not implemented: no card uses it",
}
"""Zod constructors a declaration may name but not use, with the reason (docs/schema.md lists them)."""


def _refused(name: str) -> Builtin:
    def refuse(budget: Budget, args: list[Any]) -> Any:
        raise MvuError(Code.UNSUPPORTED, f"z.{name}() is not supported: {REFUSED[name]}", member=name)

    return Builtin(name, refuse)


def _custom(budget: Budget, args: list[Any]) -> Schema:
    return CustomSchema(arg(args, 0), custom_message(arg(args, 1)))


def _template_literal(budget: Budget, args: list[Any]) -> Schema:
    return TemplateLiteralSchema(list_arg(arg(args, 0)))


def _wrap_first(kind: type[Schema]) -> Any:
    return lambda budget, args: kind(as_schema(arg(args, 0), "the wrapped schema"))  # type: ignore[call-arg]


def _coerce() -> Namespace:
    return Namespace("z.coerce", {
        "number": _make(lambda: NumberSchema(coerce=True)),
        "string": _make(lambda: StringSchema(coerce=True)),
        "boolean": _make(lambda: BooleanSchema(coerce=True)),
        "date": _make(lambda: DateSchema(coerce=True)),
        "bigint": _refused("bigint"),
    })


def _issue_codes() -> Namespace:
    codes = ["custom", "invalid_type", "too_big", "too_small", "invalid_value", "invalid_union", "invalid_format",
             "not_multiple_of", "unrecognized_keys", "invalid_key", "invalid_element"]
    return Namespace("z.ZodIssueCode", {code: code for code in codes})


def _value_makers() -> dict[str, Any]:
    """``z.string()``, ``z.object()``, ``z.literal()``...: the schemas of one kind of value."""
    return {
        "object": Builtin("object", _object("strip")),
        "looseObject": Builtin("looseObject", _object("loose")),
        "strictObject": Builtin("strictObject", _object("strict")),
        "string": _make(StringSchema),
        "number": _make(NumberSchema),
        "int": Builtin("int", lambda budget, args: NumberSchema().m_int(budget, [])),
        "boolean": _make(BooleanSchema),
        "any": _make(lambda: AnySchema("any")),
        "unknown": _make(lambda: AnySchema("unknown")),
        "never": _make(NeverSchema),
        "null": _make(lambda: LiteralSchema("null", [None])),
        "undefined": _make(lambda: LiteralSchema("undefined", [UNDEFINED])),
        "literal": Builtin("literal", _literal),
        "enum": Builtin("enum", _enum),
        "nativeEnum": Builtin("nativeEnum", _enum),
        "templateLiteral": Builtin("templateLiteral", _template_literal),
        "stringbool": Builtin("stringbool", lambda budget, args: StringBoolSchema(arg(args, 0))),
        "nan": _make(nan_schema),
        "void": _make(void_schema),
        "date": _make(DateSchema),
        "json": _make(JsonSchema),
        "custom": Builtin("custom", _custom),
    }


def _format_makers() -> dict[str, Any]:
    """The string formats (``z.email()``, ``z.iso.date()``...), the ranged numbers and the
    constructors refused by name."""
    return {
        "iso": _iso(),
        "int32": _ranged(-2147483648, 2147483647, True),
        "uint32": _ranged(0, 4294967295, True),
        "float32": _ranged(-_FLOAT32, _FLOAT32, False),
        "float64": _ranged(-_FLOAT64, _FLOAT64, False),
        **{name: _string_format(name) for name in _FORMATS},
        "jwt": Builtin("jwt", lambda budget, args: StringSchema().m_jwt(budget, args)),
        "mac": Builtin("mac", lambda budget, args: StringSchema().mac(args)),
        "url": _string_format("url", lambda base, options: base.url(options, http=False)),
        "httpUrl": _string_format("httpUrl", lambda base, options: base.url(options, http=True)),
        "hash": Builtin("hash", lambda budget, args: StringSchema().digest(args)),
        **{name: _refused(name) for name in REFUSED},
    }


def _composite_makers() -> dict[str, Any]:
    """The schemas built of other schemas: containers, unions, wrappers, ``coerce``."""
    return {
        "array": Builtin("array", lambda budget, args: ArraySchema(as_schema(arg(args, 0), "array's items"))),
        "tuple": Builtin("tuple", _tuple),
        "record": Builtin("record", _record(partial=False)),
        "partialRecord": Builtin("partialRecord", _record(partial=True)),
        "looseRecord": Builtin("looseRecord", _loose_record),
        "union": Builtin("union", _union(UnionSchema)),
        "xor": Builtin("xor", _union(XorSchema)),
        "intersection": Builtin("intersection", lambda budget, args: IntersectionSchema(
            as_schema(arg(args, 0), "intersection's left"), as_schema(arg(args, 1), "intersection's right"))),
        "discriminatedUnion": Builtin("discriminatedUnion", _discriminated),
        "nonoptional": Builtin("nonoptional", _wrap_first(NonOptional)),
        "exactOptional": Builtin("exactOptional", _wrap_first(ExactOptional)),
        "readonly": Builtin("readonly", _wrap_first(Readonly)),
        "optional": Builtin("optional", _wrap_first(Optional)),
        "nullable": Builtin("nullable", _wrap_first(Nullable)),
        "nullish": Builtin("nullish", lambda budget, args: Optional(Nullable(as_schema(arg(args, 0), "nullish")))),
        "preprocess": Builtin("preprocess", _preprocess),
        "lazy": Builtin("lazy", lambda budget, args: Lazy(function_arg(arg(args, 0), "z.lazy"))),
        "coerce": _coerce(),
    }


def make_z(version: int) -> Namespace:
    """The ``z`` of a declaration compiled with ``interpreter_version``."""
    members: dict[str, Any] = {**_value_makers(), **_format_makers(), **_composite_makers(),
                               "NEVER": NEVER, "ZodIssueCode": _issue_codes()}
    if version < 2:
        members = {name: value for name, value in members.items() if name not in _V2_ONLY}
    namespace = Namespace("z", members)
    members["z"] = namespace  # bundles reach Zod through its own `z` export (`r.z.object`)
    return namespace
