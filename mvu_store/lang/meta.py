"""Native metadata (``$meta``) and the native schema MagVarUpdate derives from it.

A card's ``[initvar]`` data may carry ``$meta`` objects (``extensible``, ``recursiveExtensible``,
``required``, ``template``; at the root also ``strictSet``, ``strictTemplate``,
``concatTemplateArray``), array elements ``{"$arrayMeta": true, "$meta": {...}}`` and the marker
string ``"$__META_EXTENSIBLE__$"``. They are turned into a schema tree stored beside
``stat_data`` (same JSON shape as MagVarUpdate's ``variables.schema``) and removed from the data.
The rules are MagVarUpdate's, as observed by running it (docs/compatibility.md).
"""

from __future__ import annotations

import copy
from typing import Any

from mvu_store.jsonvalue import JsonValue
from mvu_store.lang.merge import merged
from mvu_store.lang.paths import Path

EXTENSIBLE_MARKER = "$__META_EXTENSIBLE__$"
ROOT_FLAGS = ("strictTemplate", "strictSet", "concatTemplateArray")

Schema = dict[str, Any]


def as_node(value: JsonValue) -> Schema | None:
    """A schema node, or ``None`` for anything else (a stored schema is data: never trust it)."""
    return value if isinstance(value, dict) else None


def properties_of(node: Schema | None) -> dict[str, Any]:
    """An object node's ``properties`` (empty when absent or malformed)."""
    properties = node.get("properties") if node is not None else None
    return properties if isinstance(properties, dict) else {}


def _is_array_meta(item: JsonValue) -> bool:
    return isinstance(item, dict) and item.get("$arrayMeta") is True and "$meta" in item


def _meta(data: dict[str, JsonValue]) -> dict[str, JsonValue]:
    meta = data.get("$meta")
    return meta if isinstance(meta, dict) else {}


def _array_schema(data: list[JsonValue], old: Schema | None, parent_recursive: bool) -> Schema:
    extensible = False
    recursive = parent_recursive
    old_element: Schema | None = None
    template: JsonValue = None
    if old is not None and old.get("type") == "array":
        extensible = old.get("extensible") is True
        recursive = old.get("recursiveExtensible") is True or parent_recursive
        old_element = as_node(old.get("elementType"))
        template = old.get("template")
    items = list(data)
    # Only the first meta element and the first marker count, as in MagVarUpdate.
    meta_index = next((i for i, item in enumerate(items) if _is_array_meta(item)), -1)
    if meta_index != -1:
        meta = items.pop(meta_index)["$meta"]
        if isinstance(meta, dict):
            if "extensible" in meta:
                extensible = meta["extensible"] is True
            if "template" in meta:
                template = meta["template"]
    if EXTENSIBLE_MARKER in items:
        extensible = True
        items.remove(EXTENSIBLE_MARKER)
    node: Schema = {
        "type": "array",
        "extensible": extensible or parent_recursive,
        "recursiveExtensible": recursive,
        "elementType": generate_schema(items[0], old_element, recursive) if items else {"type": "any"},
    }
    if template is not None:
        node["template"] = template
    return node


def _object_schema(data: dict[str, JsonValue], old: Schema | None, parent_recursive: bool) -> Schema:
    old_extensible = False
    old_recursive = parent_recursive
    old_properties: dict[str, Schema] = {}
    if old is not None and old.get("type") == "object":
        old_extensible = old.get("extensible") is True
        old_recursive = old.get("recursiveExtensible") is True or parent_recursive
        old_properties = properties_of(old)
    meta = _meta(data)
    node: Schema = {
        "type": "object",
        "properties": {},
        "extensible": old_extensible
        or meta.get("extensible") is True
        or meta.get("recursiveExtensible") is True
        or parent_recursive,
        "recursiveExtensible": old_recursive or meta.get("recursiveExtensible") is True,
    }
    if meta.get("template") is not None:
        node["template"] = meta["template"]
    elif old is not None and old.get("type") == "object" and old.get("template"):
        node["template"] = old["template"]
    required = meta.get("required")
    required_keys = {k for k in required if isinstance(k, str)} if isinstance(required, list) else set()
    child_recursive = node["extensible"] is not False and node["recursiveExtensible"]
    for key, child in data.items():
        if key == "$meta":
            continue
        old_child = as_node(old_properties.get(key))
        child_node = generate_schema(child, old_child, child_recursive)
        is_required = not node["extensible"] or key in required_keys
        if old_child is not None and isinstance(old_child.get("required"), bool):
            is_required = old_child["required"]  # an explicit earlier decision wins
        node["properties"][key] = {**child_node, "required": is_required}
    return node


def generate_schema(data: JsonValue, old: Schema | None = None, parent_recursive: bool = False) -> Schema:
    """The schema node for ``data``, keeping what ``old`` already decided (never mutates)."""
    if isinstance(data, list):
        return _array_schema(data, old, parent_recursive)
    if isinstance(data, dict):
        return _object_schema(data, old, parent_recursive)
    if isinstance(data, bool):
        return {"type": "boolean"}
    if isinstance(data, int | float):
        return {"type": "number"}
    if isinstance(data, str):
        return {"type": "string"}
    return {"type": "any"}


def clean_metadata(data: JsonValue) -> None:
    """Remove every ``$meta``, marker and array-meta element from ``data`` in place.

    A container with nothing to remove is not written to, so subtrees shared with an earlier
    state stay untouched as long as they carry no metadata (see :func:`has_metadata`).
    """
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            kept = [child for child in item if child != EXTENSIBLE_MARKER and not _is_array_meta(child)]
            if len(kept) != len(item):
                item[:] = kept
            stack.extend(item)
        elif isinstance(item, dict):
            item.pop("$meta", None)
            stack.extend(item.values())


def has_metadata(data: JsonValue) -> bool:
    """Whether :func:`clean_metadata` would change anything in ``data``."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            if any(child == EXTENSIBLE_MARKER or _is_array_meta(child) for child in item):
                return True
            stack.extend(item)
        elif isinstance(item, dict):
            if "$meta" in item:
                return True
            stack.extend(item.values())
    return False


def schema_at(schema: Schema | None, path: Path) -> Schema | None:
    """The schema node describing ``path``, or ``None`` when the schema does not know it."""
    node = as_node(schema)
    for segment in path:
        if node is None:
            return None
        if segment.isascii() and segment.isdigit():
            node = as_node(node.get("elementType")) if node.get("type") == "array" else None
        elif node.get("type") == "object":
            node = as_node(properties_of(node).get(segment))
        else:
            return None
    return node


def initial_schema(stat_data: dict[str, JsonValue], old: Schema | None = None) -> Schema:
    """Build the schema of freshly initialised data; the caller cleans the data afterwards."""
    schema = generate_schema(stat_data, old)
    meta = _meta(stat_data)
    for flag in ROOT_FLAGS:
        if flag in meta:
            schema[flag] = meta[flag]
    return schema


def reconcile(stat_data: dict[str, JsonValue], old: Schema | None) -> Schema:
    """The schema after an update changed ``stat_data``, keeping old decisions and root flags."""
    schema = generate_schema(stat_data, old)
    meta = _meta(stat_data)  # a root $meta written by a command overrides the stored flags
    for flag in ROOT_FLAGS:
        if flag in meta:
            schema[flag] = meta[flag]
        elif old is not None and flag in old:
            schema[flag] = old[flag]
    return schema


def with_node(schema: Schema, path: Path, node: Schema) -> Schema:
    """A copy of ``schema`` where ``node`` replaces the node :func:`schema_at` finds at ``path``
    (which must find one); only the nodes on the way are copied."""
    if not path:
        return node
    segment, rest = path[0], path[1:]
    if segment.isascii() and segment.isdigit():
        return {**schema, "elementType": with_node(schema["elementType"], rest, node)}
    properties = schema["properties"]
    return {**schema, "properties": {**properties, segment: with_node(properties[segment], rest, node)}}


def merge_schema(schema: Schema, path: Path, inserted: JsonValue) -> Schema:
    """``schema`` with the schema of a value freshly inserted at ``path`` folded into the node
    there (``$meta`` applies); the node must exist. Nothing is mutated."""
    node = schema_at(schema, path)
    assert node is not None
    return with_node(schema, path, merged(node, generate_schema(inserted, node)))


def apply_template(value: JsonValue, template: JsonValue, *, strict: bool, concat_arrays: bool) -> JsonValue:
    """Fill a new member from the container's template, MagVarUpdate's way."""
    if template is None:
        return value
    if isinstance(value, dict) and isinstance(template, dict):
        return merged(merged({}, template), value)  # a fresh copy: nothing shared with the schema
    if not isinstance(value, dict | list) and isinstance(template, list):
        if strict:
            return value
        value = [value]  # a primitive joins an array template as [value], concatenated or merged
    if isinstance(value, list) and isinstance(template, list):
        if concat_arrays:
            return [*value, *copy.deepcopy(template)]
        return merged(merged([], template), value)
    return value
