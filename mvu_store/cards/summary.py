"""What ``mvu card inspect`` reports: a card's initial state and schema, checked but not run.

The ``[initvar]`` texts go through ``mvu_store.lang`` (name macros read as text, as the service
reads them before a session gives its names) and the declaration through
``mvu_store.schema`` exactly as the service would use them, so a card that inspects cleanly is
one the service can initialise; every refusal becomes a problem line instead of an exception.
"""

from __future__ import annotations

from typing import Any

from mvu_store.cards.reader import CardDefinition
from mvu_store.errors import MvuError
from mvu_store.lang.macros import initialize_keeping_macros
from mvu_store.schema import compile_schema
from mvu_store.schema.syntax import parse_program


def json_type(value: Any) -> str:
    """A JSON value's type as JSON names it (object, array, boolean, number, string, null)."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "null"


def _first_line(text: str) -> str:
    """The first line of data, past the ``<initvar>`` wrapper and fence MagVarUpdate strips."""
    lines = (line.strip() for line in text.splitlines())
    return next((line for line in lines if line and not line.startswith(("```", "<initvar>"))), "")[:80]


def _original_syntax(source: str, problems: list[str]) -> None:
    """A declaration this interpreter reads but the original's refuses (S-8) runs here and fails
    on a host of the original: a problem for whoever must run the card on both."""
    try:
        parse_program(source, original=True)
    except MvuError as error:
        problems.append(f"the original's interpreter would refuse the schema declaration: {error}")


def summarize(card: CardDefinition) -> dict[str, Any]:
    """A JSON-ready report: entries with parse status, ``stat_data`` keys, schema, problems (what
    may be wrong) and notes (what the card means to do, such as a disabled ``[initvar]`` entry)."""
    problems = list(card.problems)
    entries = []
    for index, text in enumerate(card.initvar):
        try:
            initialize_keeping_macros([text])
            status = "ok"
        except MvuError as error:
            status = error.code
            problems.append(f"[initvar] entry {index}: {error}")
        entries.append({"firstLine": _first_line(text), "status": status})
    stat_keys: dict[str, str] = {}
    if card.initvar:
        try:
            stat_data = initialize_keeping_macros(list(card.initvar))["stat_data"]
            stat_keys = {key: json_type(value) for key, value in stat_data.items()}
        except MvuError as error:
            problems.append(f"the merged [initvar] entries do not initialise: {error}")
    schema: dict[str, Any] = {"found": card.schema_source is not None or card.schema_import is not None}
    if card.schema_import is not None:
        # Found, but its text is behind a URL that is never fetched: the card runs without it.
        schema.update(runnable=False, importedFrom=card.schema_import.url, where=card.schema_import.where)
    if card.schema_source is not None:
        schema["chars"] = len(card.schema_source)
        try:
            schema["interpreterVersion"] = compile_schema(card.schema_source)["interpreterVersion"]
            schema["compiles"] = True
            _original_syntax(card.schema_source, problems)
        except MvuError as error:
            schema["compiles"] = False
            schema["error"] = error.code
            problems.append(f"the schema declaration does not compile: {error}")
    return {"name": card.name, "spec": card.spec, "greetings": len(card.greetings), "initvar": entries,
            "statData": stat_keys, "schema": schema, "problems": problems, "notes": list(card.notes)}
