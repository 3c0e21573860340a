"""Opening (greeting) initialisation, DIGEST U-7.

The chosen greeting's *explicit update blocks* run once on the freshly initialised variables:

* ``<initvar>`` blocks: their data (YAML or JSON5, read like an ``[initvar]`` entry and merged
  in order) **replaces** the ``stat_data`` that came from the card's lorebook, as MagVarUpdate
  does on message 0 (as observed by running it); ``$meta`` becomes schema, and the
  earlier schema's decisions and root flags carry over, as its schema reconciliation keeps them;
* then JSON Patch blocks, and function commands written inside an ``<UpdateVariable>`` block.

A ``_.set(...)`` lying loose in the greeting's prose is not an update block and is not applied
(MagVarUpdate would apply it; see the compatibility table in docs/compatibility.md). Unlike a conversation
turn, nothing may be skipped silently: an unreadable ``<initvar>`` block or any per-command
diagnostic refuses the whole opening with ``MVU_INITIALIZATION_INVALID`` (for commands, its
details list the diagnostics).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import JsonValue
from mvu_store.lang.apply import StateCheck, UpdateResult, private_envelope, run_commands
from mvu_store.lang.commands import Command, inside_spans, parse_commands
from mvu_store.lang.creation import CandidateValidator
from mvu_store.lang.initvar import merge_entries, with_stat_data
from mvu_store.lang.jsvalues import same
from mvu_store.lang.meta import as_node, reconcile

_BLOCK_TAG = re.compile(r"<(/?)UpdateVariable>", re.IGNORECASE)
_INITVAR_TAG = re.compile(r"<(/?)initvar>", re.IGNORECASE)


def _block_spans(text: str, tag: re.Pattern[str]) -> list[tuple[int, int]]:
    """The inner spans of ``<tag>…</tag>`` blocks (an opening tag inside a block is text)."""
    spans: list[tuple[int, int]] = []
    opened = -1
    for found in tag.finditer(text):
        if not found.group(1):
            opened = found.end() if opened == -1 else opened
        elif opened != -1:
            spans.append((opened, found.start()))
            opened = -1
    return spans


def _explicit(commands: list[Command], spans: list[tuple[int, int]]) -> list[Command]:
    in_block = inside_spans(spans)
    return [command for command in commands if command.source == "json_patch" or in_block(command.start)]


def _override(envelope: dict[str, Any], bodies: list[str]) -> dict[str, Any]:
    """The envelope with ``stat_data`` replaced by the greeting's ``<initvar>`` data."""
    data = merge_entries(bodies, label="greeting <initvar> block")
    return with_stat_data(envelope, data, reconcile(data, as_node(envelope.get("schema"))))


def apply_greeting(
    variables: JsonValue,
    greeting_text: str,
    *,
    validator: CandidateValidator | None = None,
    check: StateCheck | None = None,
) -> UpdateResult:
    """Apply a greeting's update blocks all-or-nothing; the input is never mutated."""
    commands = _explicit(parse_commands(greeting_text), _block_spans(greeting_text, _BLOCK_TAG))
    envelope = private_envelope(variables)
    before = envelope["stat_data"]  # never mutated: run_commands builds new states
    bodies = [greeting_text[start:end] for start, end in _block_spans(greeting_text, _INITVAR_TAG)]
    if bodies:
        envelope = _override(envelope, bodies)
    result = run_commands(envelope, commands, validator, check)
    if result.diagnostics:
        raise MvuError(
            Code.INITIALIZATION_INVALID,
            f"the greeting's update failed: {result.diagnostics[0]['message']}",
            diagnostics=list(result.diagnostics),
        )
    return dataclasses.replace(result, changed=not same(before, result.variables["stat_data"]))
