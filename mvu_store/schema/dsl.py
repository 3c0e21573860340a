"""The ``z`` namespace a declaration sees: Zod v4's constructors, mapped onto our schema nodes.

Version 1 descriptors lack ``looseObject``/``strictObject``, which S-3 introduces with
version 2. Anything not listed is ``MVU_UNSUPPORTED`` when the declaration
reaches it, never silently accepted.
"""

from __future__ import annotations

from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.js.values import UNDEFINED, Budget, Builtin, Namespace, arg
from mvu_store.schema.composite import (
    ArraySchema,
    DiscriminatedUnionSchema,
    IntersectionSchema,
    ObjectSchema,
    RecordSchema,
    TupleSchema,
    UnionSchema,
    shape_arg,
)
from mvu_store.schema.primitives import (
    AnySchema,
    BooleanSchema,
    LiteralSchema,
    NeverSchema,
    NumberSchema,
    StringSchema,
    list_arg,
)
from mvu_store.schema.types import NEVER, Lazy, Nullable, Optional, Pipe, Schema, Transform, as_schema, function_arg

_V2_ONLY = frozenset({"looseObject", "strictObject"})


def _object(mode: str) -> Any:
    return lambda budget, args: ObjectSchema(shape_arg({} if arg(args, 0) is UNDEFINED else arg(args, 0)), mode)


def _enum(budget: Budget, args: list[Any]) -> Schema:
    values = arg(args, 0)
    if type(values) is dict:  # z.enum({A: 'a'}) / nativeEnum: the object's values
        values = list(values.values())
    return LiteralSchema("enum", list(list_arg(values)))


def _literal(budget: Budget, args: list[Any]) -> Schema:
    value = arg(args, 0)
    return LiteralSchema("literal", list(value) if type(value) is list else [value])


def _record(partial: bool) -> Any:
    def record(budget: Budget, args: list[Any]) -> Schema:
        if len(args) == 1:  # Zod 3's z.record(values) shape: string keys
            return RecordSchema(StringSchema(), as_schema(args[0], "record's values"), partial=partial)
        return RecordSchema(as_schema(arg(args, 0), "record's keys"), as_schema(arg(args, 1), "record's values"),
                            partial=partial)

    return record


def _union(budget: Budget, args: list[Any]) -> Schema:
    return UnionSchema([as_schema(option, "a union option") for option in list_arg(arg(args, 0))])


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


def _wrap_first(kind: type[Schema]) -> Any:
    return lambda budget, args: kind(as_schema(arg(args, 0), "the wrapped schema"))  # type: ignore[call-arg]


def _coerce() -> Namespace:
    return Namespace("z.coerce", {
        "number": _make(lambda: NumberSchema(coerce=True)),
        "string": _make(lambda: StringSchema(coerce=True)),
        "boolean": _make(lambda: BooleanSchema(coerce=True)),
    })


def _issue_codes() -> Namespace:
    codes = ["custom", "invalid_type", "too_big", "too_small", "invalid_value", "invalid_union", "invalid_format",
             "not_multiple_of", "unrecognized_keys", "invalid_key", "invalid_element"]
    return Namespace("z.ZodIssueCode", {code: code for code in codes})


def make_z(version: int) -> Namespace:
    """The ``z`` of a declaration compiled with ``interpreter_version``."""
    members: dict[str, Any] = {
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
        "array": Builtin("array", lambda budget, args: ArraySchema(as_schema(arg(args, 0), "array's items"))),
        "tuple": Builtin("tuple", _tuple),
        "record": Builtin("record", _record(partial=False)),
        "partialRecord": Builtin("partialRecord", _record(partial=True)),
        "union": Builtin("union", _union),
        "intersection": Builtin("intersection", lambda budget, args: IntersectionSchema(
            as_schema(arg(args, 0), "intersection's left"), as_schema(arg(args, 1), "intersection's right"))),
        "discriminatedUnion": Builtin("discriminatedUnion", _discriminated),
        "optional": Builtin("optional", _wrap_first(Optional)),
        "nullable": Builtin("nullable", _wrap_first(Nullable)),
        "nullish": Builtin("nullish", lambda budget, args: Optional(Nullable(as_schema(arg(args, 0), "nullish")))),
        "preprocess": Builtin("preprocess", _preprocess),
        "lazy": Builtin("lazy", lambda budget, args: Lazy(function_arg(arg(args, 0), "z.lazy"))),
        "coerce": _coerce(),
        "NEVER": NEVER,
        "ZodIssueCode": _issue_codes(),
    }
    if version < 2:
        members = {name: value for name, value in members.items() if name not in _V2_ONLY}
    namespace = Namespace("z", members)
    members["z"] = namespace  # bundles reach Zod through its own `z` export (`r.z.object`)
    return namespace
