"""Container schemas with Zod v4's semantics: object, array, tuple, record and unions."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.js.values import (
    UNDEFINED,
    Budget,
    Builtin,
    arg,
    fail,
    same_value_key,
    strict_equals,
    to_number,
    to_string,
    truthy,
)
from mvu_store.jsonvalue import copy_json
from mvu_store.schema.accessors import GetterObject
from mvu_store.schema.issues import (
    NONOPTIONAL,
    Issue,
    aborted,
    invalid_type,
    prefix,
    size_issue,
    unrecognized_keys,
)
from mvu_store.schema.primitives import LiteralSchema, SizedSchema, StringSchema
from mvu_store.schema.types import (
    CONTAINERS,
    Catch,
    Check,
    Default,
    ExactOptional,
    NonOptional,
    Nullable,
    Optional,
    ParseCtx,
    Pipe,
    Readonly,
    Schema,
    SizeCheck,
    as_schema,
    runner,
    stopped_itself,
)

_NUMERIC_KEY = re.compile(r"-?\d+(?:\.\d+)?", re.ASCII)  # Zod's number pattern for record keys


class ObjectSchema(Schema):
    """``z.object`` (mode ``strip``), ``looseObject``/``passthrough`` (``loose``), ``strictObject``/
    ``strict`` (``strict``) and ``catchall(schema)`` (``catchall``)."""

    kind = "object"

    def __init__(self, shape: dict[str, Schema], mode: str = "strip", rest: Schema | None = None) -> None:
        self.shape = shape
        self.mode = mode
        self.rest = rest
        # Precomputed once: the hot loop of every validation walks these tuples.
        self.fields = tuple((key, runner(schema), schema.optin, schema.optout) for key, schema in shape.items())

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        if type(value) is not dict:
            ctx.issues.append(invalid_type("object", value))
            return value
        ctx.budget.charge(len(self.fields) + 1)
        issues = ctx.issues
        out: dict[str, Any] = {}
        for key, run, optin, optout in self.fields:
            if key in value:  # the common case: a present key always keeps its result
                if not issues:  # and usually nothing has failed yet: no counting needed
                    out[key] = run(value[key], ctx)
                    if issues:
                        prefix(issues, 0, key)
                    continue
                start = len(issues)
                out[key] = run(value[key], ctx)
                if len(issues) != start:
                    prefix(issues, start, key)
                continue
            start = len(issues)
            # An absent key follows Zod's rungs: omitted, substituted or reported.
            if optout == "optional" and optin == "optional":
                continue
            result = run(UNDEFINED, ctx)
            if len(issues) != start:
                if optin is not None and optout == "optional":
                    del issues[start:]
                elif optin is not None:
                    prefix(issues, start, key)
                    if result is not UNDEFINED or optin == "defaulted":
                        out[key] = result
                else:
                    prefix(issues, start, key)
                continue
            if optin is None:
                issues.append(Issue("invalid_type", [key], NONOPTIONAL))
            elif result is not UNDEFINED or (optin == "defaulted" and optout != "optional"):
                out[key] = result
        if self.mode != "strip":
            self.rest_keys(value, out, ctx)
        return out

    def rest_keys(self, value: dict[str, Any], out: dict[str, Any], ctx: ParseCtx) -> None:
        extra = [key for key in value if key not in self.shape]
        if self.mode == "strict":
            if extra:
                ctx.issues.append(unrecognized_keys(extra))
            return
        ctx.budget.charge(len(extra))
        for key in extra:
            if key == "__proto__":
                continue
            if self.rest is None:  # kept as given, so copied as z.any() copies (the input stays frozen)
                item = value[key]
                out[key] = copy_json(item) if type(item) is dict or type(item) is list else item
                continue
            start = len(ctx.issues)
            out[key] = self.rest.run(value[key], ctx)
            prefix(ctx.issues, start, key)

    def reshape(self, shape: dict[str, Schema], mode: str | None = None, rest: Schema | None = None) -> ObjectSchema:
        """The object with another shape or mode; its refinements stay, as Zod keeps them."""
        result = ObjectSchema(shape, self.mode if mode is None else mode, self.rest if rest is None else rest)
        result.checks = self.checks
        return result

    def unrefined(self, method: str, advice: str = "") -> None:
        """Zod refuses to take keys out of, or loosen, a refined object (the refinement could
        read them): ``.pick`` / ``.omit`` / ``.partial`` / ``.merge`` throw."""
        if self.checks:
            raise MvuError(Code.SCHEMA, f".{method}() cannot be used on object schemas containing refinements{advice}")

    def p_shape(self) -> Any:
        return dict(self.shape)

    def field(self, key: str) -> Schema | None:
        """The schema of ``key`` (a discriminated union reads its options' tags)."""
        return self.shape.get(key)

    def m_extend(self, budget: Budget, args: list[Any]) -> Schema:
        extra = arg(args, 0)
        if type(extra) is GetterObject:
            return self.deferred((self, extra), self.mode, self.rest)
        return self.reshape({**self.shape, **shape_arg(extra)})

    m_safeExtend = m_extend

    def m_merge(self, budget: Budget, args: list[Any]) -> Schema:
        other = as_schema(arg(args, 0), "merge()'s argument")
        self.unrefined("merge", ". Use .safeExtend() instead.")
        if not isinstance(other, ObjectSchema):
            raise MvuError(Code.SCHEMA, "merge() needs an object schema")
        if isinstance(self, LazyObjectSchema) or isinstance(other, LazyObjectSchema):
            return LazyObjectSchema((self, other), other.mode, other.rest)
        return ObjectSchema({**self.shape, **other.shape}, other.mode, other.rest)

    def deferred(self, sources: tuple[Any, ...], mode: str, rest: Schema | None) -> LazyObjectSchema:
        """An object whose shape is read from ``sources`` when first needed; refinements stay."""
        result = LazyObjectSchema(sources, mode, rest)
        result.checks = self.checks
        return result

    def mask(self, value: Any) -> set[str]:
        if type(value) is not dict:
            raise MvuError(Code.SCHEMA, "expected a {key: true} mask")
        return {key for key, flag in value.items() if truthy(flag)}

    def m_pick(self, budget: Budget, args: list[Any]) -> Schema:
        self.unrefined("pick")
        keys = self.mask(arg(args, 0))
        return self.reshape({key: schema for key, schema in self.shape.items() if key in keys})

    def m_omit(self, budget: Budget, args: list[Any]) -> Schema:
        self.unrefined("omit")
        keys = self.mask(arg(args, 0))
        return self.reshape({key: schema for key, schema in self.shape.items() if key not in keys})

    def m_partial(self, budget: Budget, args: list[Any]) -> Schema:
        self.unrefined("partial")
        keys = set(self.shape) if arg(args, 0) is UNDEFINED else self.mask(arg(args, 0))
        return self.reshape({key: Optional(schema) if key in keys else schema for key, schema in self.shape.items()})

    def m_exactPartial(self, budget: Budget, args: list[Any]) -> Schema:
        self.unrefined("exactPartial")
        keys = set(self.shape) if arg(args, 0) is UNDEFINED else self.mask(arg(args, 0))
        return self.reshape({key: ExactOptional(schema) if key in keys else schema
                             for key, schema in self.shape.items()})

    def m_required(self, budget: Budget, args: list[Any]) -> Schema:
        keys = set(self.shape) if arg(args, 0) is UNDEFINED else self.mask(arg(args, 0))
        return self.reshape({key: NonOptional(schema) if key in keys else schema for key, schema in self.shape.items()})

    def m_keyof(self, budget: Budget, args: list[Any]) -> Schema:
        return LiteralSchema("enum", list(self.shape))

    def m_strict(self, budget: Budget, args: list[Any]) -> Schema:
        return self.reshape(self.shape, "strict")

    def m_passthrough(self, budget: Budget, args: list[Any]) -> Schema:
        return self.reshape(self.shape, "loose")

    m_loose = m_passthrough

    def m_strip(self, budget: Budget, args: list[Any]) -> Schema:
        return self.reshape(self.shape, "strip")

    def m_catchall(self, budget: Budget, args: list[Any]) -> Schema:
        return self.reshape(self.shape, "catchall", as_schema(arg(args, 0), "catchall()'s argument"))


class LazyObjectSchema(ObjectSchema):
    """An object whose shape has getters (Zod 4's recursive objects): ``sources`` (shapes with
    getters, plain shapes and object schemas, merged in order) are read the first time the
    shape is needed, as Zod reads them, after the constants the getters name exist; the shape
    is then kept. Parsing reads it with the validation's budget, a method with its caller's, a
    reader without one (``.shape``, a discriminated union) with a budget of its own."""

    def __init__(self, sources: tuple[Any, ...], mode: str = "strip", rest: Schema | None = None) -> None:
        self.sources = sources
        self.mode = mode
        self.rest = rest
        self.resolving = False

    def __getattr__(self, name: str) -> Any:
        # `shape` and `fields` are set by resolve(): until then, reading them resolves.
        if name in {"shape", "fields"}:
            self.resolve(Budget())
            return self.__dict__[name]
        raise AttributeError(name)

    def resolve(self, budget: Budget) -> dict[str, Schema]:
        if "shape" not in self.__dict__:
            if self.resolving:  # a getter that needs the shape it belongs to: no end in JavaScript
                raise MvuError(Code.SCHEMA, "an object's shape refers to itself while it is being read")
            self.resolving = True
            try:
                shape: dict[str, Schema] = {}
                for source in self.sources:
                    shape.update(_source_shape(budget, source))
            finally:
                self.resolving = False
            ObjectSchema.__init__(self, shape, self.mode, self.rest)
        return self.shape

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        self.resolve(ctx.budget)
        return ObjectSchema.parse(self, value, ctx)

    def get(self, key: str) -> Any:
        if key in _SHAPE_READERS:  # the method reads the shape: with its caller's budget
            method = getattr(ObjectSchema, "m_" + key)

            def resolved_first(budget: Budget, args: list[Any]) -> Any:
                self.resolve(budget)
                return method(self, budget, args)

            return Builtin(key, resolved_first)
        return super().get(key)

    def field(self, key: str) -> Schema | None:
        """Without running a getter when ``key`` is plain data: a recursive option of a
        discriminated union is declared before the union it names exists (as Zod, which
        reads the tags late, allows)."""
        if "shape" in self.__dict__:
            return self.shape.get(key)
        for source in reversed(self.sources):
            if isinstance(source, ObjectSchema):
                found = source.field(key)
            elif type(source) is GetterObject and key in source.getters:
                return super().field(key)
            else:
                found = source.get(key)
            if isinstance(found, Schema):
                return found
        return None

    def p_shape(self) -> Any:
        if len(self.sources) == 1 and type(self.sources[0]) is GetterObject:
            return self.sources[0]  # as Zod's: the declared object, whose getters run on each read
        return dict(self.shape)

    def refs(self) -> Iterator[Any]:
        yield from self.sources
        yield from self.checks
        if self.rest is not None:
            yield self.rest
        yield from self.__dict__.get("shape", {}).values()

    def m_extend(self, budget: Budget, args: list[Any]) -> Schema:
        return self.deferred((*self.sources, arg(args, 0)), self.mode, self.rest)

    m_safeExtend = m_extend

    def m_strict(self, budget: Budget, args: list[Any]) -> Schema:
        return self.deferred(self.sources, "strict", self.rest)

    def m_passthrough(self, budget: Budget, args: list[Any]) -> Schema:
        return self.deferred(self.sources, "loose", self.rest)

    m_loose = m_passthrough

    def m_strip(self, budget: Budget, args: list[Any]) -> Schema:
        return self.deferred(self.sources, "strip", self.rest)

    def m_catchall(self, budget: Budget, args: list[Any]) -> Schema:
        return self.deferred(self.sources, "catchall", as_schema(arg(args, 0), "catchall()'s argument"))


_SHAPE_READERS = frozenset({"pick", "omit", "partial", "exactPartial", "required", "keyof"})


def _source_shape(budget: Budget, source: Any) -> dict[str, Schema]:
    """The schemas one source of a :class:`LazyObjectSchema` gives its shape."""
    if isinstance(source, LazyObjectSchema):
        return source.resolve(budget)
    if isinstance(source, ObjectSchema):
        return source.shape
    if type(source) is GetterObject:
        return {key: as_schema(source.read(budget, key), f"the shape's `{key}`") for key in source.entries}
    return shape_arg(source)


def object_schema(shape: Any, mode: str) -> ObjectSchema:
    """``z.object(shape)`` and its kin: a shape with getters is read when first needed."""
    if type(shape) is GetterObject:
        return LazyObjectSchema((shape,), mode)
    return ObjectSchema(shape_arg(shape), mode)


def shape_arg(value: Any) -> dict[str, Schema]:
    if type(value) is not dict:
        raise MvuError(Code.SCHEMA, "an object shape must be an object of schemas")
    for key, schema in value.items():
        as_schema(schema, f"the shape's `{key}`")
    return value


class ArraySchema(SizedSchema):
    kind = "array"

    def __init__(self, item: Schema) -> None:
        self.item = item
        self.item_run = runner(item)
        self.caps: tuple[SizeCheck, ...] = ()

    def with_check(self, check: Check) -> Schema:
        result = super().with_check(check)
        assert isinstance(result, ArraySchema)
        # Zod's size caps: the upper bounds among the leading length checks (a later check may
        # rewrite the value, so the scan stops at the first other check).
        caps = []
        for leading in result.checks:
            if type(leading) is not SizeCheck:
                break
            if leading.code == "too_big":
                caps.append(leading)
        result.caps = tuple(caps)
        return result

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        if type(value) is not list:
            ctx.issues.append(invalid_type("array", value))
            return value
        for cap in self.caps:
            if len(value) > cap.limit:
                # An oversized array is refused before its items are parsed, as Zod does.
                cap(value, ctx)
                ctx.issues[-1].continues = False
                ctx.issues[-1].stops = True
                return value
        ctx.budget.charge(len(value) + 1)
        issues = ctx.issues
        run = self.item_run
        out = []
        for index, element in enumerate(value):
            start = len(issues) if issues else 0
            out.append(run(element, ctx))
            if issues and len(issues) > start:
                prefix(issues, start, index)
        return out


    def p_element(self) -> Any:
        return self.item

    def m_unwrap(self, budget: Budget, args: list[Any]) -> Schema:
        return self.item


class TupleSchema(Schema):
    kind = "tuple"

    def __init__(self, items: list[Schema], rest: Schema | None) -> None:
        self.items = items
        self.rest = rest
        # Zod's optStart: from here on, trailing items may be absent (optin) or omitted (optout).
        self.optin_start = _opt_start([item.optin is not None for item in items])
        self.optout_start = _opt_start([item.optout == "optional" for item in items])

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        if type(value) is not list:
            ctx.issues.append(invalid_type("tuple", value))
            return value
        items, issues = self.items, ctx.issues
        if self.rest is None:
            if len(value) < self.optin_start:
                issues.append(_length_issue("too_small", self.optin_start))
                return value
            if len(value) > len(items):
                issues.append(_length_issue("too_big", len(items)))
        ctx.budget.charge(len(value) + 1)
        trials = []
        for index, schema in enumerate(items):
            trial = ParseCtx(ctx.budget)
            trials.append((schema.run(value[index] if index < len(value) else UNDEFINED, trial), trial.issues))
        rest_out = []
        if self.rest is not None:
            for index in range(len(items), len(value)):
                start = len(issues)
                rest_out.append(self.rest.run(value[index], ctx))
                prefix(issues, start, index)
        out: list[Any] = []
        for index, (result, found) in enumerate(trials):
            present = index < len(value)
            if not present and index >= self.optout_start and (items[index].optin == "optional" or found):
                break
            if found:
                start = len(issues)
                issues.extend(found)
                prefix(issues, start, index)
            out.append(result)
        while len(out) > len(value) and out[-1] is UNDEFINED and items[len(out) - 1].optout == "optional":
            out.pop()
        return out + rest_out if len(out) == len(items) else out

    def m_rest(self, budget: Budget, args: list[Any]) -> Schema:
        return TupleSchema(self.items, as_schema(arg(args, 0), "rest()'s argument"))

    def m_partial(self, budget: Budget, args: list[Any]) -> Schema:
        return TupleSchema([Optional(item) for item in self.items], self.rest)


def _opt_start(omittable: list[bool]) -> int:
    for index in range(len(omittable) - 1, -1, -1):
        if not omittable[index]:
            return index + 1
    return 0


def _length_issue(code: str, limit: int) -> Issue:
    issue = size_issue(code, "array", limit, inclusive=True)
    issue.continues = False  # Zod reports a tuple's length as an aborting issue
    return issue


class RecordSchema(Schema):
    """``z.record(keys, values)``: an enum key set is exhaustive unless ``partial`` (z.partialRecord)."""

    kind = "record"

    def __init__(self, key: Schema, value: Schema, *, partial: bool = False, loose: bool = False) -> None:
        self.key = key
        self.value = value
        self.value_run = runner(value)
        self.partial = partial
        self.loose = loose  # z.looseRecord: a key the key schema refuses is kept as given
        # Keys are strings already: a bare z.string() key schema cannot refuse or change one.
        self.any_key = type(key) is StringSchema and not key.checks and not key.coerce
        values = finite_values(key)
        self.enum_keys = None if values is None else [to_string(item) for item in values]

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        if type(value) is not dict:
            ctx.issues.append(invalid_type("record", value))
            return value
        ctx.budget.charge(len(value) + 1)
        issues = ctx.issues
        out: dict[str, Any] = {}
        if self.enum_keys is not None and not self.partial:
            for key in self.enum_keys:
                start = len(issues)
                out[key] = self.value_run(value.get(key, UNDEFINED), ctx)
                prefix(issues, start, key)
            extra = [key for key in value if key not in out]
            if extra:
                issues.append(unrecognized_keys(extra))
            return {key: item for key, item in out.items() if item is not UNDEFINED}
        unknown: list[str] = []
        for key, item in value.items():
            if key == "__proto__":
                continue
            out_key = key
            if not self.any_key:
                trial = ParseCtx(ctx.budget)
                out_key = self.key.run(key, trial)
                if trial.issues and _NUMERIC_KEY.fullmatch(key):
                    # Zod retries a numeric-looking key as a number (z.record(z.number(), ...)).
                    retry = ParseCtx(ctx.budget)
                    number_key = self.key.run(to_number(key), retry)
                    if not retry.issues:
                        trial, out_key = retry, number_key
                if trial.issues and self.loose:
                    out[key] = copy_json(item)
                    continue
                if trial.issues:
                    if self.enum_keys is not None:
                        unknown.append(key)
                    else:
                        issues.append(Issue("invalid_key", [key], "Invalid key in record"))
                    continue
            start = len(issues) if issues else 0
            result = self.value_run(item, ctx)
            if issues and len(issues) > start:
                prefix(issues, start, key)
            if result is not UNDEFINED:
                out[to_string(out_key)] = result
        if unknown:
            issues.append(unrecognized_keys(unknown))
        return out

    def p_keyType(self) -> Any:
        return self.key

    def p_valueType(self) -> Any:
        return self.value


def finite_values(schema: Schema) -> list[Any] | None:
    """The values an enum or literal key schema allows (Zod's ``_zod.values``), else None."""
    if isinstance(schema, LiteralSchema):
        return schema.values
    if isinstance(schema, UnionSchema):
        parts = [finite_values(option) for option in schema.options]
        if all(part is not None for part in parts):
            return [value for part in parts for value in part]  # type: ignore[union-attr]
    return None


class UnionSchema(Schema):
    kind = "union"

    def __init__(self, options: list[Schema]) -> None:
        self.options = options
        self.optin = ("defaulted" if any(option.optin == "defaulted" for option in options)
                      else "optional" if any(option.optin is not None for option in options) else None)
        self.optout = "optional" if any(option.optout == "optional" for option in options) else None

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        if len(self.options) == 1:
            return self.options[0].run(value, ctx)
        trials: list[tuple[Any, list[Issue]]] = []
        halted: list[bool] = []
        for option in self.options:
            trial = ParseCtx(ctx.budget)
            result = option.run(value, trial)
            if not trial.issues:
                return result
            trials.append((result, trial.issues))
            halted.append(stopped_itself(option, trial))
        survivors = [(result, issues) for (result, issues), stopped in zip(trials, halted, strict=True)
                     if not stopped and not aborted(issues)]
        if len(survivors) == 1:
            ctx.issues.extend(survivors[0][1])
            return survivors[0][0]
        ctx.issues.append(Issue("invalid_union", [], "Invalid input"))
        return value

    def p_options(self) -> Any:
        return list(self.options)


def prop_values(schema: Schema) -> list[Any] | None:
    """The discriminator values that select an option (Zod's ``propValues``): a literal's or
    enum's values, through the wrappers Zod looks through; a wrapper that lets the key be absent
    (optional, default, prefault, catch) adds ``undefined``, as a nullable adds ``null``."""
    if isinstance(schema, (Optional, Default, Catch)):
        inner = prop_values(schema.inner)
        return None if inner is None else [*inner, UNDEFINED]
    if isinstance(schema, Nullable):
        inner = prop_values(schema.inner)
        return None if inner is None else [*inner, None]
    if isinstance(schema, NonOptional):
        inner = prop_values(schema.inner)
        return None if inner is None else [value for value in inner if value is not UNDEFINED]
    if isinstance(schema, Readonly):
        return prop_values(schema.inner)
    if isinstance(schema, Pipe):
        return prop_values(schema.left)
    return finite_values(schema)


class DiscriminatedUnionSchema(Schema):
    kind = "discriminatedUnion"

    def __init__(self, key: str, options: list[Schema]) -> None:
        self.key = key
        self.options = options
        self.by_value: dict[tuple[str, Any], Schema] = {}
        self.labels: list[str] = []
        for index, option in enumerate(options):
            tag = option.field(key) if isinstance(option, ObjectSchema) else None
            values = None if tag is None else prop_values(tag)
            if not values:
                raise MvuError(Code.SCHEMA, f'Invalid discriminated union option at index "{index}"')
            for item in values:
                if same_value_key(item) in self.by_value:
                    raise MvuError(Code.SCHEMA, f'Duplicate discriminator value "{to_string(item)}"')
                self.by_value[same_value_key(item)] = option
                self.labels.append(to_string(item))

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        if type(value) is not dict:
            ctx.issues.append(invalid_type("object", value))
            return value
        option = self.by_value.get(same_value_key(value.get(self.key, UNDEFINED)))
        if option is not None:
            return option.run(value, ctx)
        expected = " | ".join(f"'{label}'" for label in self.labels)
        ctx.issues.append(Issue("invalid_union", [self.key], f"Invalid discriminator value. Expected {expected}"))
        return value

    def p_options(self) -> Any:
        return list(self.options)


class XorSchema(UnionSchema):
    """``z.xor([...])``: exactly one option may accept the value."""

    kind = "xor"

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        results = []
        for option in self.options:
            trial = ParseCtx(ctx.budget)
            result = option.run(value, trial)
            if not trial.issues:
                results.append(result)
        if len(results) == 1:
            return results[0]
        message = "Invalid input: more than one option matched" if results else "Invalid input"
        ctx.issues.append(Issue("invalid_union", [], message))
        return value


class IntersectionSchema(Schema):
    """``z.intersection(a, b)`` / ``a.and(b)``: both parse the input; their outputs merge."""

    kind = "intersection"

    def __init__(self, left: Schema, right: Schema) -> None:
        self.left = left
        self.right = right

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        start = len(ctx.issues)
        left = self.left.run(value, ctx)
        right = self.right.run(value, ctx)
        if len(ctx.issues) > start:
            return value
        return _merge_values(left, right)


def _merge_values(left: Any, right: Any) -> Any:
    """Zod's mergeValues: objects merge key by key, arrays item by item, else both must agree."""
    if type(left) is dict and type(right) is dict:
        merged = dict(left)
        for key, item in right.items():
            merged[key] = _merge_values(left[key], item) if key in left else item
        return merged
    if type(left) is list and type(right) is list and len(left) == len(right):
        return [_merge_values(a, b) for a, b in zip(left, right, strict=True)]
    if strict_equals(left, right) or left is right:
        return left
    raise fail("Unmergable intersection")


# Every schema's .array(), .or() and .and() make these (types.Containers says why they are set here).
CONTAINERS.array = ArraySchema
CONTAINERS.union = UnionSchema
CONTAINERS.intersection = IntersectionSchema
