"""The MVU update language: commands in replies, applied to variables (pure: no I/O, no clock).

Public API::

    parse_commands(text) -> list[Command]
    apply_update(variables, text, *, validator=None, check=None) -> UpdateResult
    initialize_variables(entries, *, existing=None) -> dict
    apply_greeting(variables, greeting_text, *, validator=None) -> UpdateResult
    contains_update(text) -> bool

``CandidateValidator`` / ``Validation`` are the protocol through which interpreter-v2 path
creation asks the schema interpreter about a candidate ``stat_data``.
"""

from mvu_store.lang.apply import StateCheck, UpdateResult, apply_update
from mvu_store.lang.commands import Command, contains_update, parse_commands
from mvu_store.lang.creation import CandidateValidator, Validation
from mvu_store.lang.greeting import apply_greeting
from mvu_store.lang.initvar import initialize_variables
from mvu_store.lang.macros import MAX_NAME_CHARS, Names

__all__ = [
    "MAX_NAME_CHARS",
    "CandidateValidator",
    "Command",
    "Names",
    "StateCheck",
    "UpdateResult",
    "Validation",
    "apply_greeting",
    "apply_update",
    "contains_update",
    "initialize_variables",
    "parse_commands",
]
