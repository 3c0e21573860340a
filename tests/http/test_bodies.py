"""The update body model in-process: which refusal a body with several faults gets, and that the
published schema lists exactly the fields the model accepts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mvu_api.http.bodies import UpdateBody, update_body
from mvu_api.http.docs import UPDATE_SCHEMA
from mvu_store.errors import MvuError

GOOD = {"id": "mvu:x", "scope": {"sessionId": "s1"}, "content": {"stat_data": {}}, "expectedRevision": 0,
        "operationId": "o"}


def refusal(data: Any) -> tuple[str, str]:
    with pytest.raises(MvuError) as caught:
        update_body(json.dumps(data).encode())
    return caught.value.code, caught.value.details.get("field", "")


def test_the_published_schema_lists_the_model_fields() -> None:
    accepted = {field.alias or name for name, field in UpdateBody.model_fields.items()}
    assert set(UPDATE_SCHEMA["properties"]) == accepted


@pytest.mark.parametrize(("changes", "named"), [
    ({"zeta": 1, "alpha": 2, "operation_id": "o", "id": 5}, "operation_id"),  # snake_case first
    ({"zeta": 1, "alpha": 2, "id": 5}, "alpha"),                              # then unknown keys, sorted
    ({"id": None, "expectedRevision": -1}, "id"),                              # then values, in field order
    ({"expectedRevision": 1.0, "operationId": ""}, "expectedRevision"),
    ({"operationId": "x" * 201}, "operationId"),
])
def test_the_first_fault_is_named(changes: dict[str, Any], named: str) -> None:
    assert refusal({**GOOD, **changes}) == ("MVU_OPERATION", named)


def test_null_header_fields_are_absent_and_a_missing_scope_is_told_apart_from_null() -> None:
    body = update_body(json.dumps({**GOOD, "expectedRevision": None, "operationId": None}).encode())
    assert (body.expected_revision, body.operation_id, body.has_scope) == (None, None, True)
    assert not update_body(b'{"id": "mvu:x"}').has_scope
    assert update_body(b'{"id": "mvu:x", "scope": null}').has_scope


@pytest.mark.parametrize("raw", [b"[]", b"nope", b"[" * 100_000])
def test_not_one_json_object_is_mvu_json(raw: bytes) -> None:
    with pytest.raises(MvuError) as caught:
        update_body(raw)
    assert caught.value.code == "MVU_JSON"


@pytest.mark.parametrize("raw", [b'{"id": "mvu:x", "id": "mvu:y"}',
                                 b'{"id": "mvu:x", "content": {"stat_data": {"hp": 1, "hp": 2}}}'])
def test_a_body_naming_a_key_twice_is_mvu_json(raw: bytes) -> None:
    """JSON leaves a repeated key undefined and parsers disagree on it: refused, never read as one."""
    with pytest.raises(MvuError) as caught:
        update_body(raw)
    assert caught.value.code == "MVU_JSON" and caught.value.details["key"] in ("id", "hp")
