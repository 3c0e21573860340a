"""A restricted YAML loader: YAML 1.2 core values, nothing that could surprise or explode.

We build values from ruamel's *event* stream instead of its constructors, so nothing in ruamel
ever instantiates a tagged object, follows an alias or applies a merge key. Refused with
``MVU_PARSE``: anchors, aliases, explicit tags, directives, merge keys (``<<``), ``.inf`` and
``.nan``, duplicate keys, complex keys and more than one document. Size, depth and node count
are capped (``MVU_LIMIT``). There are no timestamps in the core schema, so ``2024-04-08 10:45``
stays a string, as it does in MagVarUpdate's JavaScript YAML.
"""

from __future__ import annotations

import re
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError
from ruamel.yaml.events import (
    AliasEvent,
    CollectionStartEvent,
    DocumentStartEvent,
    Event,
    MappingEndEvent,
    MappingStartEvent,
    NodeEvent,
    ScalarEvent,
    SequenceEndEvent,
    StreamEndEvent,
)

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import MAX_DEPTH, MAX_NODES, JsonValue, utf8

MAX_YAML_BYTES = 256 * 1024

_NULL = frozenset({"", "~", "null", "Null", "NULL"})
_TRUE = frozenset({"true", "True", "TRUE"})
_FALSE = frozenset({"false", "False", "FALSE"})
_INT = re.compile(r"[-+]?[0-9]+")
_OCT = re.compile(r"0o[0-7]+")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_NON_FINITE = re.compile(r"[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)")


def _refuse(message: str) -> MvuError:
    return MvuError(Code.PARSE, f"YAML refused: {message}")


def _plain_scalar(text: str) -> JsonValue:
    """Resolve an untagged plain scalar with the YAML 1.2 core schema."""
    if text in _NULL:
        return None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    if _INT.fullmatch(text):
        return int(text)
    if _OCT.fullmatch(text):
        return int(text[2:], 8)
    if _HEX.fullmatch(text):
        return int(text[2:], 16)
    if _FLOAT.fullmatch(text):
        number = float(text)
        if number in (float("inf"), float("-inf")):
            raise _refuse(f"{text!r} is not a finite number")
        return number
    if _NON_FINITE.fullmatch(text):
        raise _refuse(f"{text!r} is not a finite number")
    return text


def _scalar(event: ScalarEvent) -> JsonValue:
    if event.style:  # quoted, literal or folded: always a string
        return event.value
    return _plain_scalar(event.value)


def _check_node(event: NodeEvent) -> None:
    if isinstance(event, AliasEvent) or event.anchor is not None:
        raise _refuse("anchors and aliases are not allowed")
    tag = getattr(event, "tag", None)  # aliases carry no tag
    if tag is not None:
        raise _refuse(f"explicit tag {tag!r} is not allowed")


class _Builder:
    """Folds events into a value with an explicit stack (no recursion, bounded depth)."""

    def __init__(self, max_depth: int, max_nodes: int) -> None:
        self.max_depth = max_depth
        self.max_nodes = max_nodes
        self.nodes = 0
        # Each frame: the container being filled and, for mappings, the pending key.
        self.stack: list[tuple[Any, list[str | None]]] = []
        self.result: list[JsonValue] = []

    def _place(self, value: JsonValue, *, key_event: ScalarEvent | None) -> None:
        if not self.stack:
            self.result.append(value)
            return
        container, pending = self.stack[-1]
        if isinstance(container, list):
            container.append(value)
            return
        if pending[0] is None:
            if key_event is None:
                raise _refuse("only scalar mapping keys are allowed")
            key = key_event.value
            if key == "<<" and not key_event.style:
                raise _refuse("merge keys (<<) are not allowed")
            if key in container:
                raise _refuse(f"duplicate key {key!r}")
            pending[0] = key
            container[key] = None
            return
        container[pending[0]] = value
        pending[0] = None

    def feed(self, event: Event) -> None:
        if isinstance(event, NodeEvent):
            _check_node(event)
            self.nodes += 1
            if self.nodes > self.max_nodes:
                raise MvuError(Code.LIMIT, f"YAML has more than {self.max_nodes} nodes", limit=self.max_nodes)
        if isinstance(event, ScalarEvent):
            self._place(_scalar(event), key_event=event)
        elif isinstance(event, CollectionStartEvent):
            container: Any = {} if isinstance(event, MappingStartEvent) else []
            self._place(container, key_event=None)
            self.stack.append((container, [None]))
            if len(self.stack) > self.max_depth:
                raise MvuError(Code.LIMIT, f"YAML is nested deeper than {self.max_depth}", limit=self.max_depth)
        elif isinstance(event, MappingEndEvent | SequenceEndEvent):
            self.stack.pop()


# A whole document that is one short scalar on one line, written so that YAML cannot read it
# as anything else: a single-quoted string with no quote inside, or a plain scalar of letters,
# digits, inner spaces and a few marks (no indicator, comment, colon or document marker). The
# characters are YAML-printable and no line break. Such documents skip ruamel (the parse costs
# ~100 us per command value); the outcome is the one the event stream gives (tests compare).
# _PRINTABLE: non-ASCII YAML-printable characters but the line breaks \u2028/\u2029 and the
# byte order mark \ufeff.
_PRINTABLE = "\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff"
_QUOTED_SCALAR = re.compile(f"'([\t\x20-\x26\x28-\x7e{_PRINTABLE}]*)'")
_WORD = f"0-9A-Za-z_{_PRINTABLE}"
_PLAIN_SCALAR = re.compile(f"[-+.]?[{_WORD}](?:[-+.{_WORD}]| (?=[-+.{_WORD}]))*")
MAX_FAST_SCALAR_CHARS = 4096


def _fast_scalar(text: str, max_nodes: int) -> tuple[bool, JsonValue]:
    """``(True, value)`` for a document :data:`_QUOTED_SCALAR` or :data:`_PLAIN_SCALAR` covers."""
    if len(text) > MAX_FAST_SCALAR_CHARS or max_nodes < 1:
        return False, None
    quoted = _QUOTED_SCALAR.fullmatch(text)
    if quoted:
        return True, quoted.group(1)
    if _PLAIN_SCALAR.fullmatch(text):
        return True, _plain_scalar(text)
    return False, None


def load_yaml(
    text: str, *, max_bytes: int = MAX_YAML_BYTES, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES
) -> JsonValue:
    """Parse one YAML document into a JSON value, or raise ``MVU_PARSE`` / ``MVU_LIMIT``."""
    if len(utf8(text)) > max_bytes:
        raise MvuError(Code.LIMIT, f"YAML text is over {max_bytes} bytes", limit=max_bytes, kind="bytes")
    fast, value = _fast_scalar(text, max_nodes)
    return value if fast else _load_events(text, max_depth, max_nodes)


def _load_events(text: str, max_depth: int, max_nodes: int) -> JsonValue:
    """:func:`load_yaml` through ruamel's event stream (after the size check)."""
    builder = _Builder(max_depth, max_nodes)
    documents = 0
    try:
        for event in YAML(typ="safe", pure=True).parse(text):
            if isinstance(event, DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise _refuse("more than one document")
                if event.version is not None or event.tags:
                    raise _refuse("directives are not allowed")
            elif isinstance(event, StreamEndEvent):
                break
            else:
                builder.feed(event)
    except YAMLError as error:
        raise MvuError(Code.PARSE, f"invalid YAML: {error}".splitlines()[0]) from None
    except RecursionError:
        raise MvuError(Code.LIMIT, "YAML is nested too deeply") from None
    return builder.result[0] if builder.result else None
