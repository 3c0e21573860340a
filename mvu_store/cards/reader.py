"""Read a SillyTavern character card (JSON or PNG) into what mvu-store needs from it.

Only data is read: ``[initvar]`` lorebook texts, the Zod declaration's source text and the
greetings. Nothing in a card is executed, imported or fetched (DIGEST I-4, I-10, S-2); the
declaration is handed on as text for ``mvu_store.schema`` to compile without running it.

Choices that follow MagVarUpdate (``src/function/initvar/variable_init.ts``) and Tavern Helper:

* ``[initvar]`` entries are the lorebook entries whose ``comment`` contains ``[initvar]``
  (case-insensitive), in the lorebook's array order. MagVarUpdate merges them in the order its
  entry list comes back and looks at nothing but the comment: neither ``enabled`` nor
  ``insertion_order`` is consulted, so a disabled ``[initvar]`` entry still initialises. Cards
  disable it on purpose (a comment such as ``[InitVar]初始化变量勿开``, "do not enable": its
  text is data, not a prompt), so a disabled one, or one whose comment says so, is a note.
* A declaration may live outside the card: an enabled script that only imports a URL whose
  path or script name says it is the schema (``schema``, ``变量结构``). Nothing is fetched, so
  such a card is reported as having an imported schema that cannot run here, with its URL.
* Scripts live in ``extensions.tavern_helper.scripts`` (an object, or the same object stored as
  ``[[key, value], ...]`` pairs, which is how Tavern Helper writes it) with folders nesting
  scripts; the older ``extensions.TavernHelper_scripts`` list (items flat or under ``value``) is
  read only when ``tavern_helper`` is absent, as Tavern Helper itself migrates it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from mvu_store.cards.imports import imported_urls
from mvu_store.cards.png import MAX_DECODED_BYTES, SIGNATURE, card_json_bytes
from mvu_store.errors import Code, MvuError
from mvu_store.lang.initvar import check_parse_budget
from mvu_store.processor.declaration import card_declaration

MAX_INPUT_BYTES = 32 * 1024 * 1024
SPECS = ("chara_card_v2", "chara_card_v3")
SCHEMA_MARKER = "registerMvuSchema"
INITVAR_MARKER = "[initvar]"
# How authors say an entry stays switched off (Chinese cards mostly write 勿开, "do not open").
KEEP_OFF_MARKERS = ("勿开", "勿启", "别开", "不要开", "禁止开启", "不开启", "do not enable", "don't enable",
                    "do not turn on", "don't turn on", "keep disabled", "keep it disabled", "không mở")
SCHEMA_URL_MARKERS = ("schema", "变量结构")
# Runtimes a schema script imports beside its declaration: never the declaration themselves.
_RUNTIME_URL_MARKERS = ("mvu_zod", "magvarupdate")
_FOLDER_DEPTH = 8  # Tavern Helper nests folders one level; deeper trees are not a card we know


@dataclass(frozen=True)
class SchemaImport:
    """A declaration the card loads from a URL: found, but not runnable here (nothing is fetched)."""

    url: str
    where: str


@dataclass(frozen=True)
class CardDefinition:
    """What a card gives mvu-store: the fields of issue 5's ``discover(definition=...)``."""

    spec: str
    name: str
    initvar: tuple[str, ...]
    schema_source: str | None
    greetings: tuple[str, ...]
    problems: tuple[str, ...] = field(default=())
    notes: tuple[str, ...] = field(default=())
    """Findings that are the card's intent, not a fault (a disabled ``[initvar]`` entry)."""
    schema_import: SchemaImport | None = None
    command_source: str | None = None
    """The card's command processor declaration (``mvu_store.processor``), if it carries one."""
    command_source_error: str | None = None
    """The code its declarations were refused with (two different ones, one that is no complete
    inline script): its replies fail with it rather than run unfiltered."""

    def definition(self, character_id: str) -> dict[str, Any]:
        """The card as ``MvuService.discover(definition=...)`` takes it, under the host's id for it."""
        return {"character_id": character_id, "name": self.name, "initvar": list(self.initvar),
                "schema_source": self.schema_source, "greetings": list(self.greetings),
                "command_source": self.command_source, "command_source_error": self.command_source_error}


def read_card(data: bytes, *, name: str | None = None) -> CardDefinition:
    """Parse a card file's bytes; ``name`` (e.g. the file name) is used when the card has none.

    Malformed input is ``MVU_JSON``, a JSON value that is not a v2/v3 card ``MVU_CONFIG``, an
    oversized one ``MVU_LIMIT``, two different schema declarations ``MVU_SCHEMA_CONFLICT``.
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise MvuError(Code.CONFIG, "a card is read from bytes")
    data = bytes(data)
    if len(data) > MAX_INPUT_BYTES:
        raise MvuError(Code.LIMIT, "the card file is over 32 MiB", limit=MAX_INPUT_BYTES, kind="bytes")
    problems: list[str] = []
    if data.startswith(SIGNATURE):
        key, text = card_json_bytes(data)
        if key == "chara":
            problems.append("PNG has no 'ccv3' chunk; read the 'chara' chunk")
    else:
        text = data
    if len(text) > MAX_DECODED_BYTES:
        raise MvuError(Code.LIMIT, "the card JSON is over 8 MiB", limit=MAX_DECODED_BYTES, kind="bytes")
    return _definition(_load_json(text), name, problems)


def _load_json(text: bytes) -> Any:
    try:
        return json.loads(text.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise MvuError(Code.JSON, f"the card is not JSON: {error}"[:300]) from None


def _definition(card: Any, fallback_name: str | None, problems: list[str]) -> CardDefinition:
    if not isinstance(card, dict) or card.get("spec") not in SPECS:
        raise MvuError(Code.CONFIG, "not a character card (expected spec chara_card_v2 or chara_card_v3)")
    data = card.get("data")
    if not isinstance(data, dict):
        raise MvuError(Code.CONFIG, "the card has no 'data' object")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        problems.append("the card has no name")
        name = fallback_name or ""
    entries = _lorebook_entries(data, problems)
    notes: list[str] = []
    initvar = tuple(_initvar_texts(entries, notes))
    check_parse_budget(initvar)  # before any reader of the card parses them, entry by entry or merged
    scripts = list(_enabled_scripts(data.get("extensions"), problems))
    schema = _schema_source(scripts, entries, problems)
    imported = _schema_import(scripts) if schema is None else None
    if imported is not None:
        notes.append(f"the schema declaration is imported from {imported.url} ({imported.where}); nothing is "
                     "fetched, so it is not checked or applied here")
    command_source, command_error = _command_source(card, problems)
    return CardDefinition(spec=card["spec"], name=name, initvar=initvar, schema_source=schema,
                          greetings=tuple(_greetings(data, problems)), problems=tuple(problems),
                          notes=tuple(notes), schema_import=imported, command_source=command_source,
                          command_source_error=command_error)


def _command_source(card: dict[str, Any], problems: list[str]) -> tuple[str | None, str | None]:
    """The one command processor declaration of the card's enabled scripts, or the code it was
    refused with (two different ones, one that is no complete inline script)."""
    try:
        found = card_declaration(card)
    except MvuError as error:
        problems.append(f"the card's command processor is refused ({error.code}): its replies that update "
                        "fail with that code")
        return None, error.code
    return (found.source if found is not None else None), None


def _lorebook_entries(data: dict[str, Any], problems: list[str]) -> list[dict[str, Any]]:
    book = data.get("character_book")
    if book is None:
        return []
    raw = book.get("entries") if isinstance(book, dict) else None
    if not isinstance(raw, list):
        problems.append("character_book has no entries list; lorebook ignored")
        return []
    entries: list[dict[str, Any]] = []
    for index, entry in enumerate(raw):
        if isinstance(entry, dict) and isinstance(entry.get("content", ""), str):
            entries.append(entry)
        else:
            problems.append(f"lorebook entry {index} is not an entry with text content; skipped")
    return entries


def _keeps_off(entry: dict[str, Any]) -> bool:
    label = " ".join(text for text in (entry.get("comment"), entry.get("name")) if isinstance(text, str)).lower()
    return any(marker in label for marker in KEEP_OFF_MARKERS)


def _initvar_texts(entries: list[dict[str, Any]], notes: list[str]) -> Iterator[str]:
    for entry in entries:
        comment = entry.get("comment")
        if isinstance(comment, str) and INITVAR_MARKER in comment.lower():
            if entry.get("enabled") is False:
                notes.append(f"[initvar] entry {comment!r} is disabled, as such entries usually are; "
                             "its data is still read")
            elif _keeps_off(entry):
                notes.append(f"[initvar] entry {comment!r} says to keep it disabled but is enabled; "
                             "its data is read either way")
            yield entry.get("content", "")


def _schema_source(scripts: list[tuple[str, str, str]], entries: list[dict[str, Any]],
                   problems: list[str]) -> str | None:
    found: list[tuple[str, str]] = []  # (where, source)
    for where, _, content in scripts:
        if SCHEMA_MARKER in content:
            found.append((where, content))
    for index, entry in enumerate(entries):
        content = entry.get("content", "")
        if SCHEMA_MARKER in content:
            if entry.get("enabled") is False:
                problems.append(f"lorebook entry {index} declares a schema but is disabled; ignored")
            else:
                found.append((f"lorebook entry {index}", content))
    distinct = dict.fromkeys(source for _, source in found)
    if len(distinct) > 1:
        raise MvuError(Code.SCHEMA_CONFLICT, "the card carries more than one different schema declaration",
                       sources=[where for where, _ in found])
    return next(iter(distinct), None)


def _schema_import(scripts: list[tuple[str, str, str]]) -> SchemaImport | None:
    """The first enabled script that imports its declaration from a URL (path or script name
    naming the schema), when the card carries none of its own."""
    for where, name, content in scripts:
        for found in imported_urls(content):
            url = found.url
            lowered = url.lower()
            if any(marker in lowered for marker in _RUNTIME_URL_MARKERS):
                continue
            if any(marker in lowered or marker in name.lower() for marker in SCHEMA_URL_MARKERS):
                return SchemaImport(url=url, where=where)
    return None


def _enabled_scripts(extensions: Any, problems: list[str]) -> Iterator[tuple[str, str, str]]:
    """(where, script name, content) of every enabled script."""
    if not isinstance(extensions, dict):
        return
    helper = extensions.get("tavern_helper")
    if helper is not None:
        settings = _settings_object(helper)
        scripts = settings.get("scripts", []) if settings is not None else None
        if not isinstance(scripts, list):
            problems.append("extensions.tavern_helper has no scripts list; scripts ignored")
            return
        yield from _walk_scripts(scripts, "tavern_helper.scripts", problems, 0)
        return
    legacy = extensions.get("TavernHelper_scripts")
    if legacy is None:
        return
    if not isinstance(legacy, list):
        problems.append("extensions.TavernHelper_scripts is not a list; scripts ignored")
        return
    # Legacy items are `{type: 'script', value: {...}}` or the script object itself.
    unwrapped = [item.get("value", item) if isinstance(item, dict) else item for item in legacy]
    yield from _walk_scripts(unwrapped, "TavernHelper_scripts", problems, 0)


def _settings_object(helper: Any) -> dict[str, Any] | None:
    """Tavern Helper's settings, whether stored as an object or as ``Object.entries`` pairs."""
    if isinstance(helper, dict):
        return helper
    if isinstance(helper, list) and all(isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)
                                        for pair in helper):
        return {key: value for key, value in helper}
    return None


def _walk_scripts(items: list[Any], where: str, problems: list[str], depth: int) -> Iterator[tuple[str, str, str]]:
    for index, item in enumerate(items):
        label = f"{where}[{index}]"
        if not isinstance(item, dict):
            problems.append(f"{label} is not a script object; skipped")
            continue
        if item.get("enabled") is False:
            continue  # switched off by the card's author: never a source of truth
        if item.get("type") == "folder":
            children = item.get("scripts")
            if isinstance(children, list) and depth < _FOLDER_DEPTH:
                yield from _walk_scripts(children, f"{label}.scripts", problems, depth + 1)
            else:
                problems.append(f"{label} is a folder without a readable scripts list; skipped")
            continue
        content = item.get("content")
        name = item.get("name")
        if isinstance(content, str):
            yield label, name if isinstance(name, str) else "", content
        elif content is not None:
            problems.append(f"{label} has non-text content; skipped")


def _greetings(data: dict[str, Any], problems: list[str]) -> Iterator[str]:
    first = data.get("first_mes")
    if isinstance(first, str):
        if first:  # an empty first_mes is a card without an opening, not an empty opening
            yield first
    elif first is not None:
        problems.append("first_mes is not text; ignored")
    alternates = data.get("alternate_greetings", [])
    if not isinstance(alternates, list):
        problems.append("alternate_greetings is not a list; ignored")
        return
    for index, greeting in enumerate(alternates):
        if isinstance(greeting, str):
            yield greeting
        else:
            problems.append(f"alternate greeting {index} is not text; ignored")
