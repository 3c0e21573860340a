"""A small, linear repair of the JSON mistakes models make in ``<JSONPatch>`` blocks.

MagVarUpdate runs its patch bodies through jsonrepair, so a block with a typical model mistake
still applies there. We repair only the mistakes seen in real replies, each in one pass:

* the end is cut off: an open string and open brackets are closed, a trailing comma or a
  dangling ``:`` is dealt with;
* a double quote inside a string value is not escaped (``"他说"你好""``): as in jsonrepair, a
  quote ends the string only when what follows it (after blanks) is ``,`` ``:`` ``}`` ``]`` or
  the end, otherwise it is kept as a character;
* the comma between two objects is missing (``}\\n{``).

Anything else (mismatched brackets, unquoted words) is not guessed at: the block stays unread.
"""

from __future__ import annotations

_CLOSES_STRING = frozenset([",", ":", "}", "]", ""])
_BLANKS = frozenset(" \t\r\n")


def _next_significant(body: str, start: int) -> str:
    """The first non-blank character at or after ``start`` ("" at the end).

    Each call skips only the blanks right after one quote, so all calls together stay linear.
    """
    index = start
    while index < len(body) and body[index] in _BLANKS:
        index += 1
    return body[index] if index < len(body) else ""


def repair_json(body: str) -> str | None:
    """``body`` with the mistakes above repaired, or ``None`` if there was nothing to repair
    (or it is broken in a way we do not repair)."""
    out: list[str] = []
    stack: list[str] = []
    in_string = escaped = changed = False
    last = ""  # the last significant character outside strings
    for index, char in enumerate(body):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                if _next_significant(body, index + 1) in _CLOSES_STRING:  # "" (the end) too
                    in_string = False
                    last = '"'
                else:
                    out.append("\\")
                    changed = True
            out.append(char)
            continue
        if char == "{" and last == "}":
            out.append(",")
            changed = True
        if char == '"':
            in_string = True
        elif char in "[{":
            stack.append("]" if char == "[" else "}")
        elif char in "]}" and (not stack or stack.pop() != char):
            return None
        if char not in _BLANKS:
            last = char
        out.append(char)
    if not stack and not in_string:
        return "".join(out) if changed else None
    repaired = "".join(out) + '"' if in_string else "".join(out).rstrip()
    repaired = repaired.removesuffix(",")
    if repaired.endswith(":"):
        repaired += "null"
    return repaired + "".join(reversed(stack))
