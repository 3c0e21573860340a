"""The primitive schemas: any/unknown, never, literal/enum/null/undefined, boolean, number and
string, with their checks and Zod v4's issues and messages."""

from __future__ import annotations

import math
import operator
import re
import sys
import unicodedata
from collections.abc import Callable
from typing import Any

import re2

from mvu_store.errors import Code, MvuError
from mvu_store.js.numbers import number_to_string
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
from mvu_store.schema import formats
from mvu_store.schema.dates import JsDate, construct
from mvu_store.schema.issues import Issue, invalid_type, invalid_value, size_issue
from mvu_store.schema.regex import Regex
from mvu_store.schema.types import (
    Check,
    Nullable,
    Optional,
    ParseCtx,
    Schema,
    SizeCheck,
    custom_message,
    function_arg,
)


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


class JsonSchema(AnySchema):
    """``z.json()``: any JSON value, which every input here is; only ``undefined`` is refused."""

    def __init__(self) -> None:
        super().__init__("json")

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        if value is UNDEFINED:
            ctx.issues.append(Issue("invalid_union", [], "Invalid input"))
            return value
        return super().parse(value, ctx)


class ExactSchema(Schema):
    """``z.nan()`` and ``z.void()``: one value, which JSON input never is (a declaration's own
    code may still make one: NaN or undefined)."""

    def __init__(self, kind: str, accepts: Callable[[Any], bool]) -> None:
        self.kind = kind
        self.accepts_value = accepts

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        if not self.accepts_value(value):
            ctx.issues.append(invalid_type({"nan": "NaN"}.get(self.kind, self.kind), value))
        return value


def nan_schema() -> Schema:
    return ExactSchema("nan", lambda value: type(value) is float and math.isnan(value))


def void_schema() -> Schema:
    return ExactSchema("void", lambda value: value is UNDEFINED)


class DateSchema(Schema):
    """``z.date()`` (no JSON value is a Date: only one a declaration's code made passes) and
    ``z.coerce.date()`` (``new Date(value)``; stored as its ISO text, as JSON.stringify writes it)."""

    kind = "date"

    def __init__(self, coerce: bool = False) -> None:
        self.coerce = coerce

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        if self.coerce:  # undefined too: `new Date(undefined)` is an invalid date
            value = construct(ctx.budget, [value])
        if not isinstance(value, JsDate):
            ctx.issues.append(invalid_type("date", value))
        elif math.isnan(value.time):
            ctx.issues.append(Issue("invalid_type", [], "Invalid input: expected date, received Date"))
        return value


class CustomSchema(Schema):
    """``z.custom(fn?, message?)``: whatever ``fn`` calls truthy (everything without ``fn``)."""

    kind = "custom"

    def __init__(self, fn: Any, message: str | None) -> None:
        self.fn = None if fn is UNDEFINED else function_arg(fn, "z.custom")
        self.message = message or "Invalid input"

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        if self.fn is not None and not truthy(self.fn.call(ctx.budget, [value])):
            ctx.issues.append(Issue("custom", [], self.message))
        return value


_STRINGBOOL_TRUE = ["true", "1", "yes", "on", "y", "enabled"]
_STRINGBOOL_FALSE = ["false", "0", "no", "off", "n", "disabled"]


class StringBoolSchema(Schema):
    """``z.stringbool({truthy, falsy, case})``: a string read as a boolean."""

    kind = "stringbool"

    def __init__(self, options: Any) -> None:
        given = options if type(options) is dict else {}
        self.truthy = [to_string(item) for item in list_arg(given.get("truthy", _STRINGBOOL_TRUE))]
        self.falsy = [to_string(item) for item in list_arg(given.get("falsy", _STRINGBOOL_FALSE))]
        self.sensitive = given.get("case") == "sensitive"

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        if type(value) is not str:
            ctx.issues.append(invalid_type("string", value))
            return value
        fold = (lambda text: text) if self.sensitive else str.lower
        word = fold(value)
        if word in map(fold, self.truthy):
            return True
        if word in map(fold, self.falsy):
            return False
        ctx.issues.append(invalid_value([*self.truthy, *self.falsy]))
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
    integer = False  # has an integer check: a template literal then reads digits only

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
        result = self.integral(custom_message(arg(args, 0)))
        assert isinstance(result, NumberSchema)
        result.integer = True
        return result

    def integral(self, message: str | None, *, safe_range: bool = True) -> Schema:

        def integer(value: Any, ctx: ParseCtx) -> Any:
            if type(value) is float and not value.is_integer():
                issue = invalid_type("int", value)  # aborting, as Zod's is
            elif safe_range and abs(value) > MAX_SAFE_INTEGER:
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

    m_safe = m_int  # Zod 4: `.safe()` is the safe-integer format, as `.int()` is

    def ranged(self, low: float, high: float, integer: bool) -> Schema:
        """``z.int32()``, ``z.uint32()``, ``z.float32()``, ``z.float64()``: one format check, as
        Zod's: an integer type first (its safe range included), then the range."""
        safe = self.integral(None) if integer else self
        assert isinstance(safe, NumberSchema)
        within = safe.checks[-1] if integer else None

        def in_range(value: Any, ctx: ParseCtx) -> Any:
            start = len(ctx.issues)
            if within is not None:
                within(value, ctx)
            if len(ctx.issues) == start and not low <= value <= high:
                code, limit = ("too_small", low) if value < low else ("too_big", high)
                ctx.issues.append(size_issue(code, "number", limit, inclusive=True))
            return value

        result = self.with_check(in_range)
        assert isinstance(result, NumberSchema)
        result.integer = integer
        return result

    def m_multipleOf(self, budget: Budget, args: list[Any]) -> Schema:
        step = number_arg(arg(args, 0), "multipleOf")
        message = custom_message(arg(args, 1))

        def multiple(value: Any, ctx: ParseCtx) -> Any:
            if not _multiple_of(value, step):
                text = message or f"Invalid number: must be a multiple of {to_string(step)}"
                ctx.issues.append(Issue("not_multiple_of", [], text, continues=True))
            return value

        return self.with_check(multiple)

    m_step = m_multipleOf

    def m_finite(self, budget: Budget, args: list[Any]) -> Schema:
        return self


def _multiple_of(value: float, step: float) -> bool:
    """Zod 4's test: the quotient is within a few ulps of an integer (rounded as Math.round)."""
    ratio = value / step if step else math.nan
    if not math.isfinite(ratio):
        return False
    return abs(ratio - math.floor(ratio + 0.5)) < 4 * sys.float_info.epsilon * max(abs(ratio), 1)


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
    formatted = False  # has a format or pattern check (which a template literal cannot compose)
    message: str | None = None

    def __init__(self, coerce: bool = False) -> None:
        self.coerce = coerce

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        if self.coerce:
            value = to_string(value)
        if type(value) is not str:
            issue = invalid_type("string", value)
            if self.message is not None:  # z.email('text'): the text is every issue's message
                issue.message = self.message
            ctx.issues.append(issue)
        return value


    def format(self, test: Callable[[str, Budget], bool], message: str,
               accepted: Callable[[str], str] | None = None) -> Schema:
        """A format check; ``accepted`` rewrites a value that passes (z.url() keeps it trimmed)."""

        def check(value: Any, ctx: ParseCtx) -> Any:
            if not test(value, ctx.budget):
                ctx.issues.append(Issue("invalid_format", [], message, continues=True))
                return value
            return value if accepted is None else accepted(value)

        result = self.with_check(check)
        assert isinstance(result, StringSchema)
        result.formatted = True
        return result

    def m_regex(self, budget: Budget, args: list[Any]) -> Schema:
        pattern = arg(args, 0)
        if not isinstance(pattern, Regex):
            raise MvuError(Code.UNSUPPORTED, "regex() needs a regex literal")
        message = custom_message(arg(args, 1)) or f"Invalid string: must match pattern {pattern.text()}"
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

    def m_normalize(self, budget: Budget, args: list[Any]) -> Schema:
        form = "NFC" if arg(args, 0) is UNDEFINED else to_string(arg(args, 0))
        if form not in {"NFC", "NFD", "NFKC", "NFKD"}:
            raise MvuError(Code.SCHEMA, f"normalize() form must be NFC, NFD, NFKC or NFKD, not {form!r}")
        return self.rewrite(lambda text: unicodedata.normalize(form, text))  # type: ignore[arg-type]

    def tested(self, noun: str, test: Callable[[str], bool], message: Any) -> Schema:
        """A format check: ``Invalid <noun>`` (or the declaration's message) when ``test`` fails."""
        text = custom_message(message) or f"Invalid {noun}"
        return self.format(lambda value, budget: test(value), text)

    def pattern(self, noun: str, source: str, message: Any) -> Schema:
        compiled = formats.matcher(source)
        return self.tested(noun, lambda value: compiled.fullmatch(value) is not None, message)

    def named_format(self, name: str, args: list[Any]) -> Schema:
        noun, source = formats.FORMATS[name]
        test = formats.TESTS.get(name)
        if test is not None:
            return self.tested(noun, test, arg(args, 0))
        return self.pattern(noun, source, arg(args, 0))

    def m_datetime(self, budget: Budget, args: list[Any]) -> Schema:
        return self.pattern("ISO datetime", formats.iso_datetime(arg(args, 0)), arg(args, 0))

    def m_time(self, budget: Budget, args: list[Any]) -> Schema:
        return self.pattern("ISO time", formats.iso_time(arg(args, 0)), arg(args, 0))

    def m_url(self, budget: Budget, args: list[Any]) -> Schema:
        return self.url(arg(args, 0), http=False)

    def url(self, options: Any, *, http: bool) -> Schema:
        """``z.url({protocol, hostname})`` and ``z.httpUrl()``: what ``new URL`` reads, given as
        trimmed (tabs and newlines removed), with the protocol and host the patterns allow."""
        given = options if type(options) is dict else {}
        if "normalize" in given:
            raise MvuError(Code.UNSUPPORTED, "z.url()'s normalize is not supported: it needs the URL serializer")
        protocol, hostname = given.get("protocol"), given.get("hostname")
        for pattern in (protocol, hostname):
            if pattern is not None and not isinstance(pattern, Regex):
                raise MvuError(Code.SCHEMA, "z.url()'s protocol and hostname must be regular expressions")
        message = custom_message(options) or "Invalid URL"
        http_host = formats.matcher(formats.HTTP_HOST)

        def allowed(value: str, budget: Budget) -> bool:
            if http and not re.match(r"https?://", formats.url_text(value), re.IGNORECASE):
                return False  # z.httpUrl() wants the slashes written, not supplied by the parser
            parts = formats.parse_url(value)
            if parts is None:
                return False
            scheme, host = parts
            if http and (scheme not in {"http", "https"} or http_host.fullmatch(host) is None):
                return False
            return ((protocol is None or bool(protocol.matches(scheme, budget)))
                    and (hostname is None or bool(hostname.matches(host, budget))))

        return self.format(allowed, message, formats.url_text)

    def m_jwt(self, budget: Budget, args: list[Any]) -> Schema:
        options = arg(args, 0)
        algorithm = options.get("alg", UNDEFINED) if type(options) is dict else UNDEFINED
        return self.tested("JWT", formats.jwt_test(algorithm), options)

    def mac(self, args: list[Any]) -> Schema:
        options = arg(args, 0)
        delimiter = options.get("delimiter", ":") if type(options) is dict else ":"
        return self.pattern("MAC address", formats.mac_pattern(to_string(delimiter)), options)

    def digest(self, args: list[Any]) -> Schema:
        """``z.hash(algorithm, {enc})``: a digest's text in hex, base64 or base64url."""
        algorithm, options = to_string(arg(args, 0)), arg(args, 1)
        encoding = to_string(options.get("enc", "hex")) if type(options) is dict else "hex"
        if algorithm not in formats.HASH_LENGTHS or encoding not in {"hex", "base64", "base64url"}:
            raise MvuError(Code.SCHEMA, f"z.hash() knows no {algorithm} in {encoding}")
        return self.pattern(f"{algorithm}_{encoding}", formats.hash_pattern(algorithm, encoding), options)

    def length_bounds(self) -> tuple[int, int | None]:
        """The length range a template literal part allows (its other checks it cannot express)."""
        low, high = 0, None
        for check in self.checks:
            if type(check) is not SizeCheck or self.formatted:
                raise MvuError(Code.UNSUPPORTED, "a string part of z.templateLiteral may only check its length")
            if check.code == "too_small":
                low = max(low, int(check.limit))
            else:
                high = int(check.limit) if high is None else min(high, int(check.limit))
        return low, high


def _format_method(name: str) -> Callable[[StringSchema, Budget, list[Any]], Schema]:
    return lambda self, budget, args: self.named_format(name, args)


for _name in ("email", "uuid", "uuidv4", "uuidv6", "uuidv7", "guid", "nanoid", "cuid", "cuid2", "ulid", "xid", "ksuid",
              "ipv4", "cidrv4", "e164", "lowercase", "uppercase", "date", "duration", "base64", "base64url", "ipv6",
              "cidrv6"):
    setattr(StringSchema, "m_" + _name, _format_method(_name))


class TemplateLiteralSchema(Schema):
    """``z.templateLiteral([...])``: strings made of the parts in order, matched by RE2."""

    kind = "templateLiteral"

    def __init__(self, parts: list[Any]) -> None:
        self.engine = re2.compile("^" + "".join(_template_part(part) for part in parts) + "$")

    def parse(self, value: Any, ctx: ParseCtx) -> Any:
        if type(value) is not str:
            ctx.issues.append(invalid_type("string", value))
        elif self.engine.search(value) is None:
            ctx.issues.append(Issue("invalid_format", [], "Invalid input"))  # aborting, as Zod's
        return value


def _template_part(part: Any) -> str:
    """One part's pattern, as Zod composes it."""
    if not isinstance(part, Schema):
        if part is None or part is UNDEFINED or type(part) in (str, int, float, bool):
            return str(re2.escape(number_to_string(part) if type(part) is float else to_string(part)))
        raise MvuError(Code.SCHEMA, "a template literal part must be a schema or a primitive")
    if isinstance(part, Optional):
        return f"({_template_part(part.inner)})?"
    if isinstance(part, Nullable):
        return f"(({_template_part(part.inner)})|null)"
    if isinstance(part, LiteralSchema):
        return "(" + "|".join(str(re2.escape(to_string(value))) for value in part.values) + ")"
    if type(part) is BooleanSchema and not part.coerce:
        return "(?:true|false)"
    if type(part) is NumberSchema and not part.coerce:
        return r"-?\d+" if part.integer else r"-?\d+(?:\.\d+)?"
    if type(part) is StringSchema and not part.coerce:
        low, high = part.length_bounds()
        return rf"[\s\S]{{{low},{'' if high is None else high}}}"
    raise MvuError(Code.UNSUPPORTED, f"{part.describe()} in z.templateLiteral is not supported")

