"""Lodash's ``_.merge`` on JSON values, which MagVarUpdate uses for inserts and templates.

Objects merge key by key and arrays merge *index by index* (``merge([1, 2], [9])`` is
``[9, 2]``); a scalar from the source replaces what was there. The source is never aliased.
"""

from __future__ import annotations

from mvu_store.jsonvalue import JsonValue


def _slot(container: JsonValue, key: str | int) -> JsonValue:
    if isinstance(container, dict):
        return container.get(str(key))
    index = int(key)
    return container[index] if index < len(container) else None


def _put(container: JsonValue, key: str | int, value: JsonValue) -> None:
    if isinstance(container, dict):
        container[str(key)] = value
    elif int(key) < len(container):
        container[int(key)] = value
    else:
        container.append(value)


def merge_into(target: JsonValue, source: JsonValue) -> JsonValue:
    """Merge ``source`` into the container ``target`` in place and return ``target``."""
    pairs = source.items() if isinstance(source, dict) else enumerate(source)
    for key, value in pairs:
        if isinstance(value, dict | list):
            current = _slot(target, key)
            if not isinstance(current, type(value)):
                current = {} if isinstance(value, dict) else []
            _put(target, key, merge_into(current, value))
        else:
            _put(target, key, value)
    return target
