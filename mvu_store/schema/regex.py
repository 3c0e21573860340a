"""S-9's finite regular expressions: our own parser, a Thompson NFA and state-set matching.

Only flagless patterns anchored with ``^...$`` are accepted, built from literal characters,
escapes (``\\d \\w \\s``, ``\\uXXXX``), character classes with ranges, groups with alternation,
``?`` and bounded ``{m}`` / ``{m,n}`` (at most 64). Unbounded repetition, ``.``, backreferences,
lookaround and word boundaries are refused. Building and matching charge the shared budget, and
matching walks sets of states, so no pattern can backtrack exponentially. Python's ``re`` is
never used on declaration patterns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.js.values import Budget, Builtin, Opaque, arg, to_string

MAX_PATTERN_CHARS = 256
MAX_GROUP_DEPTH = 16
MAX_REPEAT = 64
MAX_STATES = 2048

Ranges = tuple[tuple[int, int], ...]
_DIGIT: Ranges = ((48, 57),)
_WORD: Ranges = ((48, 57), (65, 90), (95, 95), (97, 122))
_SPACE: Ranges = ((9, 13), (32, 32), (160, 160), (0x1680, 0x1680), (0x2000, 0x200A), (0x2028, 0x2029),
                  (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF))
_CLASS_ESCAPES: dict[str, tuple[Ranges, bool]] = {
    "d": (_DIGIT, False), "D": (_DIGIT, True), "w": (_WORD, False), "W": (_WORD, True),
    "s": (_SPACE, False), "S": (_SPACE, True),
}
_CONTROL_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "0": "\0"}
_SYNTAX = set("^$\\.*+?()[]{}|/")


def _refuse(pattern: str, message: str) -> MvuError:
    return MvuError(Code.UNSUPPORTED, f"regex /{pattern}/: {message}", pattern=pattern)


@dataclass(frozen=True, slots=True)
class CharSet:
    """A set of code points: ranges, possibly negated."""

    ranges: Ranges
    negated: bool

    def __contains__(self, char: str) -> bool:
        point = ord(char)
        return any(low <= point <= high for low, high in self.ranges) != self.negated


# AST: ("set", CharSet) | ("seq", [nodes]) | ("alt", [nodes]) | ("repeat", node, low, high)
RegexAst = tuple[Any, ...]


class _Parser:
    def __init__(self, pattern: str, budget: Budget) -> None:
        self.pattern = pattern
        self.pos = 0
        self.budget = budget

    def peek(self) -> str:
        return self.pattern[self.pos] if self.pos < len(self.pattern) else ""

    def take(self) -> str:
        char = self.peek()
        self.pos += 1
        return char

    def parse(self) -> RegexAst:
        body = self.pattern[:-1]
        escaped_end = (len(body) - len(body.rstrip("\\"))) % 2 == 1  # `\$` is a literal dollar
        if not (self.pattern.startswith("^") and self.pattern.endswith("$")) or escaped_end:
            raise _refuse(self.pattern, "patterns must be anchored with ^...$")
        self.pos = 1
        end = len(self.pattern) - 1
        sequence = self.sequence(end, 0)
        if self.pos != end:
            raise _refuse(self.pattern, "alternation is only supported inside a group")
        return sequence

    def alternation(self, depth: int) -> RegexAst:
        options = [self.sequence(len(self.pattern), depth)]
        while self.peek() == "|":
            self.take()
            options.append(self.sequence(len(self.pattern), depth))
        return ("alt", options)

    def sequence(self, end: int, depth: int) -> RegexAst:
        items: list[RegexAst] = []
        while self.pos < end and self.peek() not in {"|", ")"}:
            self.budget.charge(1)
            items.append(self.quantified(self.atom(depth)))
        return ("seq", items)

    def atom(self, depth: int) -> RegexAst:
        char = self.take()
        if char == "(":
            if depth + 1 > MAX_GROUP_DEPTH:
                raise _refuse(self.pattern, f"groups nest deeper than {MAX_GROUP_DEPTH}")
            if self.pattern.startswith("?:", self.pos):
                self.pos += 2
            elif self.peek() == "?":
                raise _refuse(self.pattern, "lookaround and named groups are not supported")
            inner = self.alternation(depth + 1)
            if self.take() != ")":
                raise _refuse(self.pattern, "unclosed group")
            return inner
        if char == "[":
            return ("set", self.char_class())
        if char == "\\":
            return ("set", self.escape(in_class=False))
        if char == ".":
            raise _refuse(self.pattern, "`.` is not supported")
        if char in {"*", "+"}:
            raise _refuse(self.pattern, "unbounded repetition is not supported")
        if char in {"^", "$"}:
            raise _refuse(self.pattern, "anchors are only supported at both ends")
        if char in {"?", "{", "}", "]", ")"}:
            raise _refuse(self.pattern, f"unexpected `{char}`")
        return ("set", CharSet(((ord(char), ord(char)),), False))

    def escape(self, *, in_class: bool) -> CharSet:
        char = self.take()
        if char in _CLASS_ESCAPES:
            ranges, negated = _CLASS_ESCAPES[char]
            return CharSet(ranges, negated)
        point = self.escaped_point(char, in_class=in_class)
        return CharSet(((point, point),), False)

    def escaped_point(self, char: str, *, in_class: bool) -> int:
        if char in _CONTROL_ESCAPES and not (char == "0" and self.peek().isdigit()):
            return ord(_CONTROL_ESCAPES[char])
        if char in {"u", "x"}:
            width = 4 if char == "u" else 2
            digits = self.pattern[self.pos:self.pos + width]
            if len(digits) != width or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise _refuse(self.pattern, "invalid escape")
            self.pos += width
            return int(digits, 16)
        if char in _SYNTAX or char == "-" or (in_class and char == "b"):
            return ord("\b") if char == "b" else ord(char)
        if char.isdigit() or char in {"b", "B", "k", "p", "P"}:
            raise _refuse(self.pattern, f"`\\{char}` is not supported")
        if not char:
            raise _refuse(self.pattern, "dangling backslash")
        return ord(char)

    def char_class(self) -> CharSet:
        negated = self.peek() == "^"
        if negated:
            self.take()
        ranges: list[tuple[int, int]] = []
        first = True
        while True:
            char = self.take()
            if not char:
                raise _refuse(self.pattern, "unclosed character class")
            if char == "]" and not first:
                break
            first = False
            self.budget.charge(1)
            if char == "\\":
                escaped = self.escape(in_class=True)
                if escaped.negated or len(escaped.ranges) != 1 or escaped.ranges[0][0] != escaped.ranges[0][1]:
                    if escaped.negated:
                        raise _refuse(self.pattern, "negated escapes inside classes are not supported")
                    ranges.extend(escaped.ranges)
                    continue
                low = escaped.ranges[0][0]
            else:
                low = ord(char)
            if self.peek() == "-" and self.pattern[self.pos + 1:self.pos + 2] not in {"]", ""}:
                self.take()
                high_char = self.take()
                high = self.escaped_point(self.take(), in_class=True) if high_char == "\\" else ord(high_char)
                if high < low:
                    raise _refuse(self.pattern, "range out of order")
                ranges.append((low, high))
            else:
                ranges.append((low, low))
        return CharSet(tuple(ranges), negated)

    def quantified(self, atom: RegexAst) -> RegexAst:
        char = self.peek()
        if char in {"*", "+"}:
            raise _refuse(self.pattern, "unbounded repetition is not supported")
        if char == "?":
            self.take()
            low, high = 0, 1
        elif char == "{":
            close = self.pattern.find("}", self.pos)
            body = self.pattern[self.pos + 1:close] if close > 0 else ""
            low_text, comma, high_text = body.partition(",")
            if not low_text.isdigit() or (comma and not high_text.isdigit()):
                raise _refuse(self.pattern, "only {m} and {m,n} repetition is supported")
            low = int(low_text)
            high = int(high_text) if comma else low
            if high > MAX_REPEAT or low > high:
                raise _refuse(self.pattern, f"repetition is limited to {{0,{MAX_REPEAT}}}")
            self.pos = close + 1
        else:
            return atom
        if self.peek() in {"?", "*", "+", "{"}:
            raise _refuse(self.pattern, "stacked quantifiers are not supported")
        return ("repeat", atom, low, high)


class Automaton:
    """A Thompson NFA: ``edges[s]`` is (CharSet, target) or None, ``eps[s]`` the ε-moves."""

    def __init__(self, pattern: str, budget: Budget) -> None:
        self.pattern = pattern
        self.budget = budget
        self.edges: list[tuple[CharSet, int] | None] = []
        self.eps: list[list[int]] = []

    def state(self) -> int:
        if len(self.edges) >= MAX_STATES:
            raise MvuError(Code.LIMIT, f"regex /{self.pattern}/ needs more than {MAX_STATES} states",
                           limit=MAX_STATES, kind="regex_states")
        self.budget.charge(1)
        self.edges.append(None)
        self.eps.append([])
        return len(self.edges) - 1

    def build(self, node: RegexAst) -> tuple[int, int]:
        kind = node[0]
        start = self.state()
        if kind == "set":
            end = self.state()
            self.edges[start] = (node[1], end)
            return start, end
        if kind == "seq":
            current = start
            for item in node[1]:
                first, last = self.build(item)
                self.eps[current].append(first)
                current = last
            return start, current
        if kind == "alt":
            end = self.state()
            for option in node[1]:
                first, last = self.build(option)
                self.eps[start].append(first)
                self.eps[last].append(end)
            return start, end
        _, inner, low, high = node
        current = start
        for count in range(high):
            first, last = self.build(inner)  # each copy gets fresh states
            self.eps[current].append(first)
            if count >= low:
                self.eps[current].append(last)  # optional copies may be skipped
            current = last
        return start, current

    def closure(self, states: set[int], budget: Budget) -> set[int]:
        stack = list(states)
        seen = set(states)
        while stack:
            for target in self.eps[stack.pop()]:
                if target not in seen:
                    seen.add(target)
                    stack.append(target)
        budget.charge(len(seen))
        return seen


class Regex(Opaque):
    """A compiled pattern: usable as ``z.string().regex(re)`` or ``re.test(text)``."""

    __slots__ = ("automaton", "end", "pattern", "start")
    type_name = "object"

    def __init__(self, pattern: str, budget: Budget) -> None:
        if len(pattern) > MAX_PATTERN_CHARS:
            raise MvuError(Code.LIMIT, f"regex is longer than {MAX_PATTERN_CHARS} characters",
                           limit=MAX_PATTERN_CHARS, kind="regex_length")
        self.pattern = pattern
        self.automaton = Automaton(pattern, budget)
        self.start, self.end = self.automaton.build(_Parser(pattern, budget).parse())

    def matches(self, text: str, budget: Budget) -> bool:
        automaton = self.automaton
        current = automaton.closure({self.start}, budget)
        for char in text:
            following = set()
            for state in current:
                edge = automaton.edges[state]
                if edge is not None and char in edge[0]:
                    following.add(edge[1])
            if not following:
                return False
            current = automaton.closure(following, budget)
        return self.end in current

    def source(self) -> str:
        return f"/{self.pattern}/"

    def get(self, key: str) -> Any:
        if key == "test":
            return Builtin("test", lambda budget, args: self.matches(to_string(arg(args, 0)), budget))
        if key == "source":
            return self.pattern
        return super().get(key)


def compile_regex(pattern: str, flags: str, budget: Budget) -> Regex:
    if flags:
        raise _refuse(pattern, "flags are not supported")
    return Regex(pattern, budget)
