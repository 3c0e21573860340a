"""Records from rows and back, by column name: the one place a stored row becomes a record.

A record's columns are named after its fields (:func:`columns` selects them), and
:func:`record` builds it from a row mapping (a reader's ``Row._mapping``, the writer's own
mapping) field by field, decoding the fields the record marks ``STORED_AS_JSON`` (canonical JSON
text). Nothing here depends on the order columns were selected in.
"""

from __future__ import annotations

import functools
import json
from dataclasses import fields
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import Column, Table

from mvu_store.jsonvalue import JsonValue, canonical_text
from mvu_store.ledger.query import Row
from mvu_store.ledger.records import STORED_AS_JSON

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

R = TypeVar("R", bound="DataclassInstance")


def columns(table: Table, record_type: type[DataclassInstance], *, without: tuple[str, ...] = ()) -> list[Column[Any]]:
    """The columns of ``table`` named after the fields of ``record_type`` (but ``without``)."""
    return [table.c[field.name] for field in fields(record_type) if field.name not in without]


def record(record_type: type[R], row: Row, **given: Any) -> R:
    """A record from a row by field name; ``given`` fields come from elsewhere (not the row)."""
    values = {
        name: _decoded(row[name]) if as_json else row[name]
        for name, as_json in _fields_of(record_type)
        if name not in given
    }
    return record_type(**values, **given)


@functools.cache
def _fields_of(record_type: type[DataclassInstance]) -> tuple[tuple[str, bool], ...]:
    """A record type's field names, each with whether it is stored as JSON text (asked once per
    type: every read builds records, and ``dataclasses.fields`` costs more than the build)."""
    return tuple((field.name, field.metadata == STORED_AS_JSON) for field in fields(record_type))


def _decoded(text: str | None) -> JsonValue:
    return None if text is None else json.loads(text)


def values(item: DataclassInstance) -> dict[str, Any]:
    """A record's row by field name: :func:`record` reversed (JSON fields as canonical text)."""
    return {
        field.name: canonical_text(getattr(item, field.name)) if field.metadata == STORED_AS_JSON
        else getattr(item, field.name)
        for field in fields(item)
    }
