"""The name macros of SillyTavern that cards write in initial data, greetings and replies.

SillyTavern substitutes ``{{user}}`` and ``{{char}}`` (any letter case) and the older ``<USER>``,
``<BOT>`` and ``<CHAR>`` (any case) with the persona's and the character's names, and MagVarUpdate
runs that substitution over an ``[initvar]`` entry's text before parsing it and over a whole reply
before extracting its commands. Here the host supplies the names (:class:`Names`); a macro whose
name was not supplied stays as it is written, so without names nothing changes.

Where it happens:

* **Replies and greetings**: :func:`substitute` on the whole text, *before* commands are
  extracted, so a command's path or value may use a name (``_.set('{{user}}.好感度', 5);``). The
  reply as stored (its identity and fingerprint) is the text the host sent.
* **Initial data**: a template is built before any session names anybody, so its ``[initvar]``
  texts are parsed with each macro held in a placeholder the data languages read as plain text
  (:func:`initialize_keeping_macros`: ``名字: {{user}}`` parses, as it does once SillyTavern has put
  a name there) and the macros are written back as they were. A session's copy then gets its
  names with :func:`substitute_data`, in every string and key. A name is therefore always text:
  a name such as ``a: b`` never changes the data's shape, where a textual substitution would.
  (The placeholders use the private-use code points U+E000 to U+E005: an entry that holds such a
  sequence of its own could read back differently; no text a card writes does.)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import JsonValue
from mvu_store.lang.initvar import initialize_variables

MAX_NAME_CHARS = 200
MAX_SUBSTITUTED_CHARS = 4 * 1024 * 1024
"""A substituted text may grow (each macro becomes a name); beyond this it is ``MVU_LIMIT``."""

_MACRO = re.compile(r"\{\{(user|char)\}\}|<(user|bot|char)>", re.IGNORECASE)
_ROLE = {"user": "user", "char": "char", "bot": "char"}

# A macro held while data is parsed: the two ends and its own characters, each moved to a
# private-use code point, so JSON, JSON5 and YAML read it as plain text and it comes back as written.
_OPEN, _CLOSE = "\ue000", "\ue001"
_HIDE = str.maketrans({"{": "\ue002", "}": "\ue003", "<": "\ue004", ">": "\ue005"})
_SHOW = str.maketrans({"\ue002": "{", "\ue003": "}", "\ue004": "<", "\ue005": ">"})
_HELD = re.compile(f"{_OPEN}([^{_OPEN}{_CLOSE}]{{1,10}}){_CLOSE}")


@dataclass(frozen=True, slots=True)
class Names:
    """The persona's (``user``) and the character's (``char``) names; None leaves a macro as is."""

    user: str | None = None
    char: str | None = None

    def __post_init__(self) -> None:
        for role in ("user", "char"):
            name = getattr(self, role)
            if name is not None and (not isinstance(name, str) or not 1 <= len(name) <= MAX_NAME_CHARS):
                raise MvuError(Code.OPERATION, f"names.{role} must be a string of 1 to {MAX_NAME_CHARS} characters",
                               field=f"names.{role}")

    @staticmethod
    def of(value: Names | Mapping[str, Any] | None) -> Names:
        """Names from a mapping ``{user?, char?}`` (as JSON bodies and events carry them)."""
        if value is None or isinstance(value, Names):
            return value or Names()
        if not isinstance(value, Mapping) or not set(value) <= {"user", "char"}:
            raise MvuError(Code.OPERATION, "names is an object with optional `user` and `char` strings",
                           field="names")
        return Names(user=value.get("user"), char=value.get("char"))

    def over(self, base: Names) -> Names:
        """These names where given, ``base``'s elsewhere (a call's names over a session's)."""
        return Names(user=self.user if self.user is not None else base.user,
                     char=self.char if self.char is not None else base.char)

    def __bool__(self) -> bool:
        return self.user is not None or self.char is not None

    def to_json(self) -> dict[str, str]:
        return {role: name for role, name in (("user", self.user), ("char", self.char)) if name is not None}


def substitute(text: str, names: Names | None) -> str:
    """``text`` with each macro whose name is given replaced by it, in one pass (a name that
    itself looks like a macro stays as it is)."""
    if not names or ("{{" not in text and "<" not in text):
        return text

    def name_of(found: re.Match[str]) -> str:
        role = _ROLE[(found.group(1) or found.group(2)).lower()]
        name = names.user if role == "user" else names.char
        return found.group(0) if name is None else name

    result = _MACRO.sub(name_of, text)
    if len(result) > MAX_SUBSTITUTED_CHARS:
        raise MvuError(Code.LIMIT, f"the text with its names is over {MAX_SUBSTITUTED_CHARS} characters",
                       limit=MAX_SUBSTITUTED_CHARS, kind="macros")
    return result


def substitute_data(value: JsonValue, names: Names | None) -> JsonValue:
    """A copy of parsed data with the names in every string and key (the input is not changed)."""
    if not names:
        return value
    if isinstance(value, str):
        return substitute(value, names)
    if isinstance(value, dict):
        return {substitute(key, names): substitute_data(item, names) for key, item in value.items()}
    if isinstance(value, list):
        return [substitute_data(item, names) for item in value]
    return value


def _hold(text: str) -> str:
    return _MACRO.sub(lambda found: _OPEN + found.group(0).translate(_HIDE) + _CLOSE, text)


def _release(value: Any) -> Any:
    if isinstance(value, str):
        return _HELD.sub(lambda found: found.group(1).translate(_SHOW), value) if _OPEN in value else value
    if isinstance(value, dict):
        return {_release(key): _release(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_release(item) for item in value]
    return value


def initialize_keeping_macros(entries: Sequence[str | dict[str, Any]], *,
                              existing: dict[str, Any] | None = None) -> dict[str, Any]:
    """:func:`~mvu_store.lang.initialize_variables` with each macro in the texts read as plain
    text and kept as written, so ``名字: {{user}}`` parses before any name is known."""
    held = [_hold(entry) if isinstance(entry, str) else entry for entry in entries]
    envelope = initialize_variables(held, existing=existing)
    released: dict[str, Any] = _release(envelope)
    return released
