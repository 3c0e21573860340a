"""A recorded state as the store keeps it, and back as MagVarUpdate wrote it.

A SillyTavern message's ``variables`` element is MagVarUpdate's data after that swipe:
``stat_data``, ``display_data``, ``delta_data``, ``schema`` (a native schema object, or a
placeholder string when a Zod declaration governs), ``initialized_lorebooks`` and whatever else
the card keeps there. The store keeps it as a version's state, with two changes so that the chat
can go on under the service: a placeholder ``schema`` (no schema the update language can read)
is left out, and the card's declaration (``mvu_schema``) is added when a card was given. What was
changed is noted (``restore``), so the element comes back exactly, in its own key order: the
state is stored as ``JSON.stringify`` writes it, not with sorted keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mvu_store.chats.line_text import Around, joined, member
from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import (
    UNSAFE_KEYS,
    JsonValue,
    check_bounds,
    find_unsafe_key,
    js_json,
    js_json_bytes,
    json_pointer,
)

DECLARATION = "mvu_schema"
_UNSAFE_TEXTS = tuple(js_json(key) for key in sorted(UNSAFE_KEYS))


@dataclass(frozen=True, slots=True)
class StoredState:
    variables: dict[str, Any]
    encoded: bytes
    """``variables`` as the version's blob holds them (insertion order, compact)."""
    restore: dict[str, JsonValue]
    """What :func:`recorded` needs to give the element back: ``schema`` [its key's index, the
    placeholder], ``declared`` (true when ``mvu_schema`` was added)."""
    text: str | None = None
    """``encoded`` as text, when it was put together as text (not decoded again to store it)."""


def stored_state(element: dict[str, Any], declaration: JsonValue | None, written: Around | None = None,
                 declaration_text: str | None = None) -> StoredState:
    """The envelope a version keeps for a recorded ``element``, parsed by
    :func:`mvu_store.chats.reader.parse_line` (so already JSON as the store holds it: integral
    numbers as integers). It is held to the bounds every state the service takes is held to, so
    that the chat can go on from it: at most ``MAX_NODES`` values nested at most ``MAX_DEPTH``
    deep (``MVU_LIMIT``), no prototype key in ``stat_data`` (``MVU_PATH``); the byte bound is the
    ledger's to check. ``element`` is not changed. ``written``: ``element``'s text around its
    ``schema`` (:class:`mvu_store.chats.line_text.Around`), from which the stored text is put
    together instead of encoding the state again; ``declaration_text``: ``declaration``'s text."""
    if written is None:
        named = check_bounds(element)
    else:  # a key is in the element's text as a JSON string: looked for there, not in each object
        named = check_bounds(element, keys=False) or written.holds(_UNSAFE_TEXTS)
    unsafe = find_unsafe_key(element["stat_data"]) if named else None
    if unsafe is not None:
        raise MvuError(Code.PATH, "stat_data carries a prototype key", path=json_pointer(unsafe))
    normalized = dict(element)
    restore: dict[str, JsonValue] = {}
    placeholder = normalized.get("schema")
    if placeholder is not None and not isinstance(placeholder, dict):
        restore["schema"] = [list(normalized).index("schema"), placeholder]
        del normalized["schema"]
    if declaration is not None and DECLARATION not in normalized:
        normalized[DECLARATION] = declaration
        restore["declared"] = True
    if written is None:
        return StoredState(normalized, js_json_bytes(normalized), restore)
    text = written.without() if "schema" in restore else written.text()
    if restore.get("declared") is True:
        text = joined(text, member(DECLARATION, declaration_text or js_json(declaration)))
    return StoredState(normalized, text.encode(), restore, text)


def recorded(variables: dict[str, Any], restore: JsonValue) -> dict[str, Any]:
    """The element :func:`stored_state` was given, from what the version keeps."""
    restore = restore if isinstance(restore, dict) else {}
    items = [(key, value) for key, value in variables.items()
             if not (key == DECLARATION and restore.get("declared") is True)]
    schema = restore.get("schema")
    if isinstance(schema, list) and len(schema) == 2 and isinstance(schema[0], int):
        items.insert(schema[0], ("schema", schema[1]))
    return dict(items)


def continued(variables: dict[str, Any], previous: dict[str, Any] | None) -> dict[str, Any]:
    """The element of a state the service wrote after the import (a turn played since), shaped
    as the chat's last recorded element: its keys in its order, the state's own values for the
    data MagVarUpdate writes per message, the rest (a placeholder schema, the lorebooks it
    initialised) carried over from that element."""
    own: dict[str, Any] = {key: variables[key] for key in ("stat_data", "display_data", "delta_data")
                           if key in variables}
    # A native schema the service derived stands in for a native one, never for the placeholder
    # of a chat a Zod declaration governs.
    if isinstance(variables.get("schema"), dict) and (previous is None or isinstance(previous.get("schema"), dict)):
        own["schema"] = variables["schema"]
    if previous is None:
        return own
    shaped = {key: own.pop(key, value) for key, value in previous.items()}
    shaped.update(own)
    return shaped
