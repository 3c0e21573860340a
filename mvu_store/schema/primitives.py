"""The primitive schemas: any/unknown, never, literal/enum/null/undefined, boolean, number and
string, with their checks and Zod v4's issues and messages."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.js.values import (
    MAX_SAFE_INTEGER,
    UNDEFINED,
    Budget,
    arg,
    same_value_key,
    to_number,
    to_string,
    truthy,
)
from mvu_store.jsonvalue import copy_json
from mvu_store.schema.issues import Issue, invalid_type, invalid_value, size_issue
from mvu_store.schema.regex import Regex
from mvu_store.schema.types import Check, ParseCtx, Schema, SizeCheck, custom_message


class AnySchema(Schema):
    """``z.any()`` and ``z.unknown()``: every value passes."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        # The caller's input is never copied up front (see descriptor._check_input), so the
        # one schema that hands it through whole gives out a copy a transform may change.
        return copy_json(value) if type(value) is dict or type(value) is list else value


class NeverSchema(Schema):
    kind = "never"

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        ctx.issues.append(invalid_type("never", value))
        return value


class LiteralSchema(Schema):
    """``z.literal(v)``, ``z.literal([...])``, ``z.null()``, ``z.undefined()`` and ``z.enum([...])``."""

    def __init__(self, kind: str, values: list[Any]) -> None:
        for value in values:
            if not (value is None or value is UNDEFINED or type(value) in (str, int, float, bool)):
                raise MvuError(Code.SCHEMA, f"z.{kind}() takes primitive values")
        self.kind = kind
        self.values = values
        self.keyed = {same_value_key(value): value for value in values}

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        if same_value_key(value) in self.keyed:
            return value
        if self.kind in {"null", "undefined"}:
            ctx.issues.append(invalid_type(self.kind, value))
        else:
            ctx.issues.append(invalid_value(self.values))
        return value

    def p_options(self) -> Any:
        return list(self.values)

    def p_enum(self) -> Any:
        return {to_string(value): value for value in self.values}

    def p_value(self) -> Any:
        return self.values[0] if self.values else UNDEFINED

    def m_exclude(self, budget: Budget, args: list[Any]) -> Schema:
        drop = {same_value_key(value) for value in list_arg(arg(args, 0))}
        return LiteralSchema(self.kind, [value for value in self.values if same_value_key(value) not in drop])

    def m_extract(self, budget: Budget, args: list[Any]) -> Schema:
        keep = {same_value_key(value) for value in list_arg(arg(args, 0))}
        return LiteralSchema(self.kind, [value for value in self.values if same_value_key(value) in keep])


def list_arg(value: Any) -> list[Any]:
    if type(value) is not list:
        raise MvuError(Code.SCHEMA, "expected an array")
    return value


class BooleanSchema(Schema):
    kind = "boolean"

    def __init__(self, coerce: bool = False) -> None:
        self.coerce = coerce

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        if self.coerce:
            return truthy(value)
        if type(value) is not bool:
            ctx.issues.append(invalid_type("boolean", value))
        return value


def number_arg(value: Any, what: str) -> int | float:
    number = to_number(value) if type(value) in (int, float) else math.nan
    if math.isnan(number):
        raise MvuError(Code.SCHEMA, f"{what} needs a number")
    return number


_BOUND_FAILS: dict[tuple[str, bool], Callable[[Any, Any], bool]] = {
    ("too_small", True): operator.lt,
    ("too_small", False): operator.le,
    ("too_big", True): operator.gt,
    ("too_big", False): operator.ge,
}


class NumberSchema(Schema):
    kind = "number"

    def __init__(self, coerce: bool = False) -> None:
        self.coerce = coerce

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        kind = type(value)
        if kind is int:  # the common case first: a JSON integer is always a finite number
            return value
        if self.coerce and kind is not float:
            value = to_number(value, explicit=True)
            kind = type(value)
        if (kind is not int and kind is not float) or not math.isfinite(value):
            ctx.issues.append(invalid_type("number", value))
        return value

    def bound(self, code: str, args: list[Any], *, inclusive: bool) -> Schema:
        limit = number_arg(arg(args, 0), "a number bound")
        message = custom_message(arg(args, 1))

        fails = _BOUND_FAILS[(code, inclusive)]

        def check(value: Any, ctx: ParseCtx) -> Any:
            if fails(value, limit):
                issue = size_issue(code, "number", limit, inclusive=inclusive)
                if message is not None:
                    issue.message = message
                ctx.issues.append(issue)
            return value

        return self.with_check(check)

    def m_min(self, budget: Budget, args: list[Any]) -> Schema:
        return self.bound("too_small", args, inclusive=True)

    m_gte = m_min

    def m_max(self, budget: Budget, args: list[Any]) -> Schema:
        return self.bound("too_big", args, inclusive=True)

    m_lte = m_max

    def m_gt(self, budget: Budget, args: list[Any]) -> Schema:
        return self.bound("too_small", args, inclusive=False)

    def m_lt(self, budget: Budget, args: list[Any]) -> Schema:
        return self.bound("too_big", args, inclusive=False)

    def m_positive(self, budget: Budget, args: list[Any]) -> Schema:
        return self.bound("too_small", [0, *args[:1]], inclusive=False)

    def m_nonnegative(self, budget: Budget, args: list[Any]) -> Schema:
        return self.bound("too_small", [0, *args[:1]], inclusive=True)

    def m_negative(self, budget: Budget, args: list[Any]) -> Schema:
        return self.bound("too_big", [0, *args[:1]], inclusive=False)

    def m_nonpositive(self, budget: Budget, args: list[Any]) -> Schema:
        return self.bound("too_big", [0, *args[:1]], inclusive=True)

    def m_int(self, budget: Budget, args: list[Any]) -> Schema:
        message = custom_message(arg(args, 0))

        def integer(value: Any, ctx: ParseCtx) -> Any:
            if type(value) is float and not value.is_integer():
                issue = invalid_type("int", value)  # aborting, as Zod's is
            elif abs(value) > MAX_SAFE_INTEGER:
                # an integer outside the safe range is a bound (which lets later checks run), not a type
                code = "too_big" if value > 0 else "too_small"
                issue = size_issue(code, "int", MAX_SAFE_INTEGER if value > 0 else -MAX_SAFE_INTEGER, inclusive=True)
            else:
                return value
            if message is not None:
                issue.message = message
            ctx.issues.append(issue)
            return value

        return self.with_check(integer)

    m_safe = m_int

    def m_multipleOf(self, budget: Budget, args: list[Any]) -> Schema:
        step = number_arg(arg(args, 0), "multipleOf")
        message = custom_message(arg(args, 1))

        def multiple(value: Any, ctx: ParseCtx) -> Any:
            ratio = value / step if step else math.nan
            if not math.isfinite(ratio) or abs(ratio - round(ratio)) > 1e-9 * max(1, abs(ratio)):
                text = message or f"Invalid number: must be a multiple of {to_string(step)}"
                ctx.issues.append(Issue("not_multiple_of", [], text, continues=True))
            return value

        return self.with_check(multiple)

    m_step = m_multipleOf

    def m_finite(self, budget: Budget, args: list[Any]) -> Schema:
        return self


class SizedSchema(Schema):
    """A schema whose values have a length (strings, arrays): min, max, nonempty, length."""

    def size(self, code: str, args: list[Any], *, exact: bool = False) -> Check:
        limit = number_arg(arg(args, 0), "a length")
        return SizeCheck(code, limit, exact, custom_message(arg(args, 1)))

    def m_min(self, budget: Budget, args: list[Any]) -> Schema:
        return self.with_check(self.size("too_small", args))

    def m_max(self, budget: Budget, args: list[Any]) -> Schema:
        return self.with_check(self.size("too_big", args))

    def m_nonempty(self, budget: Budget, args: list[Any]) -> Schema:
        return self.with_check(self.size("too_small", [1, *args[:1]]))

    def m_length(self, budget: Budget, args: list[Any]) -> Schema:
        shorter = self.size("too_small", args, exact=True)
        return self.with_check(shorter).with_check(self.size("too_big", args, exact=True))


class StringSchema(SizedSchema):
    kind = "string"

    def __init__(self, coerce: bool = False) -> None:
        self.coerce = coerce

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        if self.coerce:
            value = to_string(value)
        if type(value) is not str:
            ctx.issues.append(invalid_type("string", value))
        return value


    def format(self, test: Callable[[str, Budget], bool], message: str) -> Schema:
        def check(value: Any, ctx: ParseCtx) -> Any:
            if not test(value, ctx.budget):
                ctx.issues.append(Issue("invalid_format", [], message, continues=True))
            return value

        return self.with_check(check)

    def m_regex(self, budget: Budget, args: list[Any]) -> Schema:
        pattern = arg(args, 0)
        if not isinstance(pattern, Regex):
            raise MvuError(Code.UNSUPPORTED, "regex() needs a regex literal")
        message = custom_message(arg(args, 1)) or f"Invalid string: must match pattern {pattern.source()}"
        return self.format(pattern.matches, message)

    def affix(self, args: list[Any], test: Callable[[str, str], bool], template: str) -> Schema:
        text = to_string(arg(args, 0))
        message = custom_message(arg(args, 1)) or template.format(text)
        return self.format(lambda value, budget: test(value, text), message)

    def m_startsWith(self, budget: Budget, args: list[Any]) -> Schema:
        return self.affix(args, str.startswith, 'Invalid string: must start with "{}"')

    def m_endsWith(self, budget: Budget, args: list[Any]) -> Schema:
        return self.affix(args, str.endswith, 'Invalid string: must end with "{}"')

    def m_includes(self, budget: Budget, args: list[Any]) -> Schema:
        return self.affix(args, lambda value, text: text in value, 'Invalid string: must include "{}"')

    def rewrite(self, fn: Callable[[str], str]) -> Schema:
        return self.with_check(lambda value, ctx: fn(value))

    def m_trim(self, budget: Budget, args: list[Any]) -> Schema:
        return self.rewrite(str.strip)

    def m_toLowerCase(self, budget: Budget, args: list[Any]) -> Schema:
        return self.rewrite(str.lower)

    def m_toUpperCase(self, budget: Budget, args: list[Any]) -> Schema:
        return self.rewrite(str.upper)

