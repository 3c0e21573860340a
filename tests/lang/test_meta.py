"""The native schema derived from $meta: MagVarUpdate's observed behaviour."""

from __future__ import annotations

from mvu_store.lang.meta import EXTENSIBLE_MARKER, clean_metadata, generate_schema, reconcile, schema_at


def test_an_old_explicit_required_decision_wins() -> None:
    old = generate_schema({"o": {"k": 1}})
    old["properties"]["o"]["properties"]["k"]["required"] = False
    assert reconcile({"o": {"k": 2}}, old)["properties"]["o"]["properties"]["k"]["required"] is False


def test_extensible_is_sticky_once_granted() -> None:
    old = generate_schema({"o": {"$meta": {"extensible": True}}})
    assert reconcile({"o": {"new": 1}}, old)["properties"]["o"]["extensible"] is True


def test_required_list_forces_required_even_on_extensible_objects() -> None:
    node = generate_schema({"$meta": {"extensible": True, "required": ["a"]}, "a": 1, "b": 2})
    assert (node["properties"]["a"]["required"], node["properties"]["b"]["required"]) == (True, False)


def test_only_the_first_marker_and_array_meta_count_but_cleanup_removes_all() -> None:
    data = [EXTENSIBLE_MARKER, {"$arrayMeta": True, "$meta": {"template": 1}}, EXTENSIBLE_MARKER, "x"]
    node = generate_schema(data)
    assert node["extensible"] is True
    assert node["template"] == 1
    assert node["elementType"] == {"type": "string"}  # element 0 after the first marker and meta go
    clean_metadata(data)
    assert data == ["x"]


def test_recursive_extensible_reaches_grandchildren() -> None:
    node = generate_schema({"$meta": {"recursiveExtensible": True}, "open": {"deep": {}}})
    assert node["properties"]["open"]["properties"]["deep"]["extensible"] is True


def test_schema_lookup_walks_element_types_and_properties() -> None:
    schema = generate_schema({"l": [{"hp": 1}]})
    assert schema_at(schema, ("l", "0", "hp")) == {"type": "number", "required": True}
    assert schema_at(schema, ("l", "x")) is None
    assert schema_at(schema, ("missing",)) is None


def test_a_malformed_stored_schema_is_ignored_not_trusted() -> None:
    assert schema_at({"type": "object", "properties": 5}, ("a",)) is None
    assert generate_schema({"a": 1}, {"type": "object", "properties": {"a": "junk"}})["properties"]["a"] == {
        "type": "number",
        "required": True,
    }


def test_a_node_that_is_not_extensible_stops_recursive_propagation() -> None:
    old = {
        "type": "object",
        "recursiveExtensible": True,
        "properties": {"root": {"type": "object", "extensible": False, "properties": {}}},
    }
    node = generate_schema({"root": {"child": {"leaf": 1}}}, old)
    assert node["recursiveExtensible"] is True
    assert node["extensible"] is False  # recursive alone does not open the node itself
    root = node["properties"]["root"]
    assert (root["extensible"], root["recursiveExtensible"]) == (False, False)
    assert root["properties"]["child"]["extensible"] is False


def test_recursive_arrays_open_their_element_arrays() -> None:
    old = {"type": "array", "recursiveExtensible": True, "elementType": {"type": "any"}}
    node = generate_schema([["a", "b"], EXTENSIBLE_MARKER], old)
    assert node["elementType"]["extensible"] is True
    assert node["elementType"]["recursiveExtensible"] is True
