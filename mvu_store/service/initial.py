"""A template's initial variables envelope, and a state's declared schema as the update language
needs it (DIGEST I-6, I-7, I-10, S-1).

The initial envelope is built once, when a template is registered: ``[initvar]`` entries merged
in order (YAML / JSON5 texts or objects), then, with a declaration, compiled by the current
interpreter and applied to ``stat_data`` (it may transform it) and kept as ``mvu_schema``. The
native ``$meta`` schema is replaced by an open one then, as the original does: the declaration
is the schema. Instances copy the envelope, so a later interpreter only reaches new instances.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import JsonValue
from mvu_store.lang import Validation, initialize_variables
from mvu_store.lang.macros import Names, initialize_keeping_macros, substitute_data
from mvu_store.schema import ValidationMemo, ValidationResult, compile_schema, validate
from mvu_store.schema.allowance import Allowance

OPEN_SCHEMA: dict[str, JsonValue] = {"type": "object", "properties": {}, "extensible": True, "strictSet": True}
"""The native schema of a state whose declaration decides (the original's, verbatim)."""


def initial_envelope(
    entries: Sequence[str | dict[str, Any]], schema_sources: Sequence[str], *, now_ms: int | None,
    allowance: Allowance | None = None,
) -> dict[str, Any]:
    """The envelope of a new template; ``MvuError`` (the template's ``sourceError``) when it can't be.

    Name macros in the texts are kept as written (:func:`~mvu_store.lang.macros.initialize_keeping_macros`):
    each session's copy gets its names (:func:`with_names`). ``now_ms`` is the registration's
    clock, or None (a declaration that reads the clock is then refused); ``allowance``: the
    registration's fuel."""
    distinct = list(dict.fromkeys(schema_sources))
    if not entries and not distinct:
        raise MvuError(Code.INITIALIZATION_MISSING, "the card has neither [initvar] entries nor a schema declaration")
    if len(distinct) > 1:
        raise MvuError(Code.SCHEMA_CONFLICT, f"the card declares {len(distinct)} different schemas; keep one",
                       count=len(distinct))
    envelope = initialize_keeping_macros(list(entries))
    if distinct:
        envelope = with_declaration(envelope, compile_schema(distinct[0]), now_ms=now_ms, allowance=allowance)
    return envelope


def with_declaration(envelope: dict[str, Any], descriptor: dict[str, Any], *,
                     now_ms: int | None, allowance: Allowance | None = None) -> dict[str, Any]:
    """``envelope`` governed by ``descriptor``: its ``stat_data`` parsed (and transformed) once.

    Interpreter v2 merges the parsed data over the raw data at the top level, as the card's
    helper does, so a top-level key that a stripping root drops is kept."""
    raw = envelope["stat_data"]
    stat_data = DeclaredSchema(descriptor, now_ms, allowance=allowance).check(raw, code=Code.INITIALIZATION_INVALID)
    if descriptor.get("interpreterVersion") == 2 and isinstance(raw, dict) and isinstance(stat_data, dict):
        stat_data = {**raw, **stat_data}
    return {**envelope, "stat_data": stat_data, "display_data": copy.deepcopy(stat_data), "mvu_schema": descriptor,
            "schema": copy.deepcopy(OPEN_SCHEMA)}


NAMED_PARTS = ("stat_data", "display_data", "schema")
"""The parts of an envelope a session's names go into: its data, never its declaration's source."""


def with_names(envelope: dict[str, Any], names: Names) -> dict[str, Any]:
    """A session's copy of an initial envelope with its names in every string and key of its data."""
    if not names:
        return envelope
    return {**envelope, **{part: substitute_data(envelope[part], names) for part in NAMED_PARTS if part in envelope}}


def configured_envelope(initial: str | dict[str, Any] | list[str | dict[str, Any]] | None) -> dict[str, Any]:
    """A configured resource's ``initial``: a YAML/JSON5 text, an envelope, or entries to merge."""
    if initial is None:
        raise MvuError(Code.INITIALIZATION_MISSING, "the resource has no initial state and no characterId")
    if isinstance(initial, str):
        return initialize_keeping_macros([initial])
    if isinstance(initial, list):
        return initialize_keeping_macros(initial)
    if not isinstance(initial.get("stat_data"), dict):
        raise MvuError(Code.CONFIG, "an initial object is a variables envelope with a stat_data object "
                                    "(or give a YAML string)")
    return initialize_variables([], existing=initial)


def describe(result: ValidationResult) -> str:
    issue = result.issues[0] if result.issues else None
    if issue is None:
        return "the schema refused the value"
    where = "/".join(str(part) for part in issue.path) or "(root)"
    return f"{where}: {issue.message}"


class DeclaredSchema:
    """A state's declaration (``mvu_schema``) at one moment: ``now_ms`` is the commit's clock
    (the turn's time; None when there is none, and a declaration that reads it is refused);
    ``allowance``: the request's fuel, which every check of this declaration spends.

    With a ``memo``, :meth:`check` re-parses only what changed since its previous calls (see
    :class:`~mvu_store.schema.ValidationMemo`): for a reply's commands, whose states are never
    mutated once checked (:data:`mvu_store.lang.apply.StateCheck`)."""

    def __init__(self, descriptor: dict[str, Any], now_ms: int | None, memo: ValidationMemo | None = None,
                 allowance: Allowance | None = None) -> None:
        self.descriptor = descriptor
        self.now_ms = now_ms
        self._memo = memo
        self.allowance = allowance

    @staticmethod
    def of(envelope: JsonValue, now_ms: int | None, memo: ValidationMemo | None = None,
           allowance: Allowance | None = None) -> DeclaredSchema | None:
        descriptor = envelope.get("mvu_schema") if isinstance(envelope, dict) else None
        return DeclaredSchema(descriptor, now_ms, memo, allowance) if isinstance(descriptor, dict) else None

    def check(self, stat_data: JsonValue, *, code: Code = Code.SCHEMA) -> JsonValue:
        """The parsed (possibly transformed) ``stat_data``, or ``MvuError(code)`` with the issues."""
        result = validate(self.descriptor, stat_data, now_ms=self.now_ms, memo=self._memo, allowance=self.allowance)
        if not result.ok:
            raise MvuError(code, describe(result),
                           issues=[{"code": i.code, "path": list(i.path), "message": i.message}
                                   for i in result.issues[:20]])
        return result.value

    def validate(self, stat_data: JsonValue) -> Validation:
        """The update language's :class:`~mvu_store.lang.CandidateValidator` (v2 path creation)."""
        result = validate(self.descriptor, stat_data, now_ms=self.now_ms, allowance=self.allowance)
        return Validation(result.ok, result.value, tuple(issue.message for issue in result.issues))
