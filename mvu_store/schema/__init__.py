"""The schema interpreter: real cards' Zod declarations, validated without running them.

``compile_schema(source)`` checks a declaration and returns its descriptor
``{mvuSchema:1, interpreterVersion, source}``; ``validate(descriptor, value, now_ms=...)`` parses a
value as Zod v4 would and returns a :class:`ValidationResult`. See ``docs/schema.md``.
"""

from mvu_store.schema.descriptor import ValidationResult, compile_schema, validate
from mvu_store.schema.issues import Issue
from mvu_store.schema.native import ValidationMemo

__all__ = ["Issue", "ValidationMemo", "ValidationResult", "compile_schema", "validate"]
