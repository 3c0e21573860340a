"""Opening (greeting) initialisation, DIGEST U-7.

The chosen greeting's *explicit update blocks* run once on the freshly initialised variables:
JSON Patch blocks, and function commands written inside an ``<UpdateVariable>`` block. A
``_.set(...)`` lying loose in the greeting's prose is not an update block and is not applied
(MagVarUpdate would apply it; see the compatibility table in README.md). Unlike a conversation turn, nothing may
be skipped silently: any per-command diagnostic refuses the whole opening with
``MVU_INITIALIZATION_INVALID`` (its details list the diagnostics).
"""

from __future__ import annotations

import re

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import JsonValue
from mvu_store.lang.apply import UpdateResult, private_envelope, run_commands
from mvu_store.lang.commands import Command, inside_spans, parse_commands
from mvu_store.lang.creation import CandidateValidator

_BLOCK_TAG = re.compile(r"<(/?)UpdateVariable>", re.IGNORECASE)


def _block_spans(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    opened = -1
    for tag in _BLOCK_TAG.finditer(text):
        if not tag.group(1):
            opened = tag.end() if opened == -1 else opened
        elif opened != -1:
            spans.append((opened, tag.start()))
            opened = -1
    return spans


def _explicit(commands: list[Command], spans: list[tuple[int, int]]) -> list[Command]:
    in_block = inside_spans(spans)
    return [command for command in commands if command.source == "json_patch" or in_block(command.start)]


def apply_greeting(
    variables: JsonValue, greeting_text: str, *, validator: CandidateValidator | None = None
) -> UpdateResult:
    """Apply a greeting's update blocks all-or-nothing; the input is never mutated."""
    commands = _explicit(parse_commands(greeting_text), _block_spans(greeting_text))
    result = run_commands(private_envelope(variables), commands, validator)
    if result.diagnostics:
        raise MvuError(
            Code.INITIALIZATION_INVALID,
            f"the greeting's update failed: {result.diagnostics[0]['message']}",
            diagnostics=list(result.diagnostics),
        )
    return result
