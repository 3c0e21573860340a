"""Templates: discovered cards and configured resources, before any session uses them (DIGEST
I-1, I-4, I-6, I-7, I-10).

A template is a definition in the original's shape (``{id, name?, characterId?, sessionIds,
initial, managementMode, discovered?, sourceError?}``) and is never a state: instances copy its
``initial`` envelope when a session selects it. A definition that cannot be prepared becomes a
template with ``sourceError`` (shown on its instances, blocking execution), except that a
failing re-discovery never replaces a healthy stored template (a parse failure never
overwrites persisted state).
"""

from __future__ import annotations

import copy
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import JsonValue
from mvu_store.schema import compile_schema
from mvu_store.schema.allowance import Allowance
from mvu_store.service.identity import character_template_id
from mvu_store.service.initial import configured_envelope, initial_envelope, with_declaration
from mvu_store.service.models import CharacterDefinition, ResourceConfig, TemplateRecord

EMPTY_ENVELOPE: dict[str, JsonValue] = {"stat_data": {}}

# Definition fields an instance does not copy from its template: the template's own envelope
# (the instance's is its initial blob), per-session boundaries (rows) and card texts (a greeting
# template's one greeting included).
TEMPLATE_ONLY_FIELDS = frozenset({"initial", "activationSeqs", "greetings", "greeting"})


def discovered_definition(card: CharacterDefinition, session_ids: list[str]) -> dict[str, Any]:
    """The template of a discovered card (native by default, I-4), or one carrying ``sourceError``."""
    definition: dict[str, Any] = {"id": character_template_id(card.character_id)}
    if card.name is not None:
        definition["name"] = card.name
    definition.update(characterId=card.character_id, sessionIds=session_ids, managementMode="native",
                      discovered=True)
    sources = [card.schema_source] if isinstance(card.schema_source, str) else list(card.schema_source or [])
    try:
        definition["initial"] = initial_envelope(card.initvar, sources, now_ms=card.at,
                                                 allowance=Allowance("the card's declaration work"))
    except MvuError as error:
        definition.update(sourceError=error.code, initial=copy.deepcopy(EMPTY_ENVELOPE))
    if card.greetings:
        definition["greetings"] = list(card.greetings)
    if card.command_source is not None:
        definition["commandSource"] = card.command_source
    if card.command_source_error is not None:
        definition["commandSourceError"] = card.command_source_error
    return definition


def configured_definition(config: ResourceConfig, card_template: JsonValue) -> dict[str, Any]:
    """A configured resource's definition; with ``characterId`` and no ``initial``, the card's
    discovered envelope (its [initvar] entries and declaration, never its scripts)."""
    definition: dict[str, Any] = {"id": config.id}
    if config.name is not None:
        definition["name"] = config.name
    if config.character_id is not None:
        definition["characterId"] = config.character_id
    definition.update(sessionIds=list(config.session_ids), managementMode=config.management_mode)
    if config.sharing is not None:
        definition["sharing"] = config.sharing
    if config.command_source is not None:
        definition["commandSource"] = config.command_source
    try:
        definition["initial"] = _configured_initial(config, card_template)
    except MvuError as error:
        definition.update(sourceError=error.code, initial=copy.deepcopy(EMPTY_ENVELOPE))
    return definition


def _configured_initial(config: ResourceConfig, card_template: JsonValue) -> dict[str, Any]:
    if config.initial is None and config.character_id is not None:
        if not isinstance(card_template, dict):
            raise MvuError(Code.INITIALIZATION_MISSING, f"no card is registered for character "
                                                        f"{config.character_id!r}: register it first (POST "
                                                        "/mvu/cards, MvuService.discover)")
        if isinstance(card_template.get("sourceError"), str):
            raise MvuError(card_template["sourceError"], "the character's card failed to initialise")
        envelope = copy.deepcopy(card_template["initial"])
    else:
        envelope = configured_envelope(config.initial)
    if config.schema_source is not None:
        existing = envelope.get("mvu_schema")
        if isinstance(existing, dict) and existing.get("source") != config.schema_source:
            raise MvuError(Code.SCHEMA_CONFLICT, "the resource and its card declare different schemas")
        # A configuration has no moment of its own: a declaration that reads the clock is refused.
        envelope = with_declaration(envelope, compile_schema(config.schema_source), now_ms=None)
    result: dict[str, Any] = envelope
    return result


def template_record(definition: dict[str, Any], *, changed: bool, rejected: str | None = None) -> TemplateRecord:
    initial = definition.get("initial")
    descriptor = initial.get("mvu_schema") if isinstance(initial, dict) else None
    version = descriptor.get("interpreterVersion") if isinstance(descriptor, dict) else None
    return TemplateRecord(
        id=definition["id"],
        name=definition.get("name"),
        character_id=definition.get("characterId"),
        discovered=definition.get("discovered") is True,
        session_ids=list(definition.get("sessionIds") or []),
        management_mode=definition.get("managementMode") or "native",
        source_error=definition.get("sourceError"),
        interpreter_version=version if isinstance(version, int) else None,
        changed=changed,
        rejected_error=rejected,
    )


def instance_definition(template: dict[str, Any], resource_id: str, identity: dict[str, JsonValue]) -> dict[str, Any]:
    """An instance's definition: the template's fields, its own id, template link and identity."""
    definition = {key: copy.deepcopy(value) for key, value in template.items() if key not in TEMPLATE_ONLY_FIELDS}
    definition.update(id=resource_id, templateId=template["id"], instance=dict(identity),
                      sessionIds=[identity["sessionId"]])
    return definition
