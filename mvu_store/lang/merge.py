"""Lodash's ``_.merge`` on JSON values, which MagVarUpdate uses for inserts and templates.

Objects merge key by key and arrays merge *index by index* (``merge([1, 2], [9])`` is
``[9, 2]``); a scalar from the source replaces what was there. Nothing is mutated: the result
copies the containers the source reaches and shares the target's other subtrees (states are
persistent, see :mod:`mvu_store.lang.apply`); the source's containers are never shared.
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


def merged(target: JsonValue, source: JsonValue) -> JsonValue:
    """A copy of the container ``target`` with ``source`` merged into it."""
    result = dict(target) if isinstance(target, dict) else list(target)
    pairs = source.items() if isinstance(source, dict) else enumerate(source)
    for key, value in pairs:
        if isinstance(value, dict | list):
            current = _slot(result, key)
            if not isinstance(current, type(value)):
                current = {} if isinstance(value, dict) else []
            _put(result, key, merged(current, value))
        else:
            _put(result, key, value)
    return result
