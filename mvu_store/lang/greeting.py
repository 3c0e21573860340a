"""Opening (greeting) initialisation, DIGEST U-7.

The chosen greeting's explicit update blocks run once on the freshly initialised variables.
Unlike a conversation turn, nothing may be skipped silently: any per-command diagnostic refuses
the whole opening with ``MVU_INITIALIZATION_INVALID`` (its details list the diagnostics).
"""

from __future__ import annotations

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import JsonValue
from mvu_store.lang.apply import UpdateResult, apply_update
from mvu_store.lang.creation import CandidateValidator


def apply_greeting(
    variables: JsonValue, greeting_text: str, *, validator: CandidateValidator | None = None
) -> UpdateResult:
    """Apply a greeting's update blocks all-or-nothing; the input is never mutated."""
    result = apply_update(variables, greeting_text, validator=validator)
    if result.diagnostics:
        raise MvuError(
            Code.INITIALIZATION_INVALID,
            f"the greeting's update failed: {result.diagnostics[0]['message']}",
            diagnostics=list(result.diagnostics),
        )
    return result
