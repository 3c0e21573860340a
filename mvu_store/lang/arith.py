"""A small, bounded arithmetic evaluator for command values (no ``eval``).

MagVarUpdate hands a value it could not parse as JSON to mathjs, so models write ``_.add(hp,
-3*2)`` or ``_.set(gold, 10+5)``. We support what replies actually use: numbers (decimal,
``0x``/``0o``/``0b``), ``+ - * / %`` and ``mod`` (a trailing ``%`` is a percentage), ``^`` and
``**`` (power, right-associative), parentheses, ``#`` comments,
unary signs, the common mathjs functions and constants (``sqrt``, ``log``, ``round``, ``min``...,
``pi``/``e``), also written ``math.sqrt(16)``, and JavaScript's ``Math`` (``Math.sqrt(81)``,
``Math.PI``, with ``Math.round``'s halves going up), which the original puts in scope too.
Complex numbers, matrices, units and the rest of mathjs are not supported (DIGEST U-4).
Results are rounded to 12 significant digits like MagVarUpdate
(``parseFloat(x.toPrecision(12))``). Anything else, and any non-finite result, is "not
arithmetic" (``None``) so the caller falls through to the next way of reading the value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

MAX_EXPRESSION_CHARS = 256
MAX_NESTING = 32

_TOKEN = re.compile(
    r"\s*(?:(?P<number>0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)"
    r"|(?P<name>(?:Math\.|math\.)?[A-Za-z_][A-Za-z0-9_]*)|(?P<op>\*\*|[-+*/%^(),]))"
)


def _round(value: float) -> float:
    # mathjs rounds halves away from zero (Python's round() goes to even).
    return math.copysign(math.floor(abs(value) + 0.5), value)


def _log(value: float, base: float | None = None) -> float:
    return math.log(value) if base is None else math.log(value) / math.log(base)


def _round_to(value: float, digits: float = 0) -> float:
    """mathjs ``round(x, n)``: ``n`` decimals, halves away from zero."""
    if not float(digits).is_integer() or not 0 <= digits <= 15:
        raise ValueError("round takes 0 to 15 decimals")
    scale = 10.0 ** int(digits)
    return _round(value * scale) / scale


def _js_round(value: float) -> float:
    """JavaScript's ``Math.round``: halves go up (``Math.round(-2.5)`` is -2)."""
    return float(math.floor(value + 0.5))


def _mod(value: float, divisor: float) -> float:
    if divisor == 0:
        raise ZeroDivisionError
    return value - divisor * math.floor(value / divisor)  # mathjs mod: the sign of the divisor


# The mathjs functions and constants replies actually use (bare, or as ``math.name``: the
# original puts mathjs in scope as ``math``); anything else is not arithmetic.
_FUNCTIONS: dict[str, tuple[int, int, Callable[..., float]]] = {
    "abs": (1, 1, abs),
    "sqrt": (1, 1, math.sqrt),
    "cbrt": (1, 1, lambda x: math.copysign(abs(x) ** (1 / 3), x)),
    "exp": (1, 1, math.exp),
    "log": (1, 2, _log),
    "log10": (1, 1, math.log10),
    "log2": (1, 1, math.log2),
    "floor": (1, 1, math.floor),
    "ceil": (1, 1, math.ceil),
    "round": (1, 2, _round_to),
    "mod": (2, 2, _mod),
    "hypot": (1, 64, math.hypot),
    "asin": (1, 1, math.asin),
    "acos": (1, 1, math.acos),
    "atan": (1, 1, math.atan),
    "atan2": (2, 2, math.atan2),
    "fix": (1, 1, math.trunc),
    "sign": (1, 1, lambda x: (x > 0) - (x < 0)),
    "pow": (2, 2, math.pow),
    "min": (1, 64, min),
    "max": (1, 64, max),
    "sin": (1, 1, math.sin),
    "cos": (1, 1, math.cos),
    "tan": (1, 1, math.tan),
}
_CONSTANTS = {
    "pi": math.pi, "PI": math.pi, "e": math.e, "E": math.e, "tau": math.tau, "phi": (1 + math.sqrt(5)) / 2,
    "LN2": math.log(2), "LN10": math.log(10), "LOG2E": 1 / math.log(2), "LOG10E": 1 / math.log(10),
    "SQRT2": math.sqrt(2), "SQRT1_2": math.sqrt(0.5),
}

# JavaScript's Math object, which the original also puts in scope (``Math.sqrt(81)``, ``Math.PI``).
# Its functions take what they are given and ignore extra arguments, as JavaScript does.
_JS_FUNCTIONS: dict[str, tuple[int, int, Callable[..., float]]] = {
    **{name: (1, 64, lambda x, *_, f=_FUNCTIONS[name][2]: f(x)) for name in (
        "abs", "sqrt", "cbrt", "exp", "log10", "log2", "floor", "ceil", "sign", "sin", "cos", "tan", "asin",
        "acos", "atan")},
    "log": (1, 64, lambda x, *_: math.log(x)),
    "trunc": (1, 64, lambda x, *_: math.trunc(x)),
    "round": (1, 64, lambda x, *_: _js_round(x)),
    "pow": (2, 64, lambda x, y, *_: math.pow(x, y)),
    "atan2": (2, 64, lambda y, x, *_: math.atan2(y, x)),
    "min": (1, 64, min),
    "max": (1, 64, max),
    "hypot": (1, 64, math.hypot),
}
_JS_CONSTANTS = {name: _CONSTANTS[name] for name in (
    "PI", "E", "LN2", "LN10", "LOG2E", "LOG10E", "SQRT2", "SQRT1_2")}


def _namespace(name: str) -> tuple[dict[str, tuple[int, int, Callable[..., float]]], dict[str, float], str]:
    """The functions and constants a name refers to: ``Math.x`` JavaScript's, else mathjs's."""
    if name.startswith("Math."):
        return _JS_FUNCTIONS, _JS_CONSTANTS, name[5:]
    return _FUNCTIONS, _CONSTANTS, name.removeprefix("math.")


_OPERATORS = frozenset({"**", "-", "+", "*", "/", "%", "^", "(", ")", ","})


class _NotArithmetic(Exception):
    """Internal: the text is not an expression we evaluate."""


def _tokenize(text: str) -> list[str | float]:
    tokens: list[str | float] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            if text[position:].strip() == "":
                break
            raise _NotArithmetic
        position = match.end()
        number = match.group("number")
        if match.group("name") is not None:
            tokens.append(match.group("name"))
        elif number is None:
            tokens.append(match.group("op"))
        elif number[:2].lower() in ("0x", "0o", "0b"):
            tokens.append(float(int(number, 0)))
        else:
            tokens.append(float(number))
    return tokens


class _Parser:
    """Recursive descent with mathjs precedence: unary minus binds looser than ``^``."""

    def __init__(self, tokens: list[str | float]) -> None:
        self.tokens = tokens
        self.position = 0
        self.depth = 0

    def _peek(self) -> str | float | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def _take(self) -> str | float | None:
        token = self._peek()
        self.position += 1
        return token

    def _enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise _NotArithmetic

    def expression(self) -> float:
        value = self.term()
        while self._peek() in ("+", "-"):
            value = value + self.term() if self._take() == "+" else value - self.term()
        return value

    def term(self) -> float:
        value = self.unary()
        while self._peek() in ("*", "/", "%", "mod"):
            operator = self._take()
            if operator == "%" and self._peek() in (None, ")", ","):
                value /= 100  # mathjs reads a trailing % as a percentage: 50% is 0.5
                continue
            right = self.unary()
            if operator == "*":
                value *= right
            elif right == 0:
                raise _NotArithmetic  # x/0 and x%0 are not finite (or NaN) in JavaScript
            elif operator == "/":
                value /= right
            else:
                value = _mod(value, right)
        return value

    def unary(self) -> float:
        if self._peek() in ("+", "-"):
            self._enter()
            sign = self._take()
            value = self.unary()
            self.depth -= 1
            return -value if sign == "-" else value
        return self.power()

    def power(self) -> float:
        base = self.primary()
        if self._peek() in ("^", "**"):
            self._take()
            self._enter()
            exponent = self.unary()
            self.depth -= 1
            try:
                result = math.pow(base, exponent)
            except (OverflowError, ValueError):
                raise _NotArithmetic from None
            return result
        return base

    def primary(self) -> float:
        token = self._take()
        if isinstance(token, float):
            return token
        if token == "(":
            self._enter()
            value = self.expression()
            self.depth -= 1
            if self._take() != ")":
                raise _NotArithmetic
            return value
        if isinstance(token, str) and token not in _OPERATORS and token != "mod":
            functions, constants, name = _namespace(token)
            if name in constants:
                return constants[name]
            if name in functions and self._take() == "(":
                return self.call(*functions[name])
        raise _NotArithmetic

    def call(self, fewest: int, most: int, function: Callable[..., float]) -> float:
        self._enter()
        arguments = [self.expression()]
        while self._peek() == ",":
            self._take()
            arguments.append(self.expression())
        self.depth -= 1
        if self._take() != ")" or not fewest <= len(arguments) <= most:
            raise _NotArithmetic
        try:
            return float(function(*arguments))
        except (ValueError, OverflowError, ZeroDivisionError):
            raise _NotArithmetic from None


def without_comments(text: str) -> str:
    """The text with mathjs comments (``#`` to the end of a line) removed."""
    return "\n".join(line.split("#", 1)[0] for line in text.split("\n")) if "#" in text else text


def evaluate(text: str) -> float | int | None:
    """The value of an arithmetic expression, or ``None`` if ``text`` is not one we accept."""
    text = without_comments(text)
    if len(text) > MAX_EXPRESSION_CHARS:
        return None
    try:
        tokens = _tokenize(text)
        if not tokens:
            return None
        parser = _Parser(tokens)
        value = parser.expression()
        if parser.position != len(tokens):
            return None
    except (_NotArithmetic, OverflowError):
        return None
    return round12(value)


def round12(value: float) -> float | int | None:
    """``parseFloat(value.toPrecision(12))`` as an int when integral; ``None`` if not finite."""
    if not math.isfinite(value):
        return None
    rounded = float(f"{value:.12g}")
    if rounded.is_integer() and abs(rounded) < 1e21:
        return int(rounded)
    return rounded
