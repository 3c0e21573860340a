"""A session's header as a host may give it: the id's alphabet and each field's bounds.

Both hosts check a new session's header here (``StoreHost`` for what arrives over HTTP,
``MemoryHost`` for a test's or the demo's calls), so a header one of them keeps the other keeps
too; the fields' meaning is in ``docs/host-events.md``, their bounds in ``docs/host-protocol.md``.
"""

from __future__ import annotations

import re
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.host.protocol import SESSION_FORMAT_VERSION, SessionHeader
from mvu_store.jsonvalue import normalize, utf8

# Session ids appear in URL paths and file names: a portable, unambiguous alphabet.
SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,159}$")
MAX_CREATED_AT = 200
MAX_ORIGIN = 64
MAX_EVENT_COUNT = 2**53 - 1
"""JavaScript's ``Number.MAX_SAFE_INTEGER``: the largest count a JavaScript host sends exactly."""


def check_session_id(session_id: Any) -> str:
    """``session_id`` if it is one (``MVU_SCOPE`` otherwise)."""
    if not isinstance(session_id, str) or not SESSION_ID.match(session_id):
        raise MvuError(Code.SCOPE, "a session id is 1 to 160 letters, digits or _.:- (starting with a letter or "
                                   "digit)", field="sessionId")
    return session_id


def session_header(session_id: Any, *, created_at: Any, version: Any = SESSION_FORMAT_VERSION,
                   parent_session: Any = None, origin: Any = None, inherited_event_count: Any = None) -> SessionHeader:
    """A checked session header (``MvuError`` naming the first bad field)."""
    check_session_id(session_id)
    if isinstance(created_at, bool) or not isinstance(created_at, int | float | str) or created_at == "" or (
            isinstance(created_at, str) and len(created_at) > MAX_CREATED_AT):
        raise MvuError(Code.OPERATION, f"createdAt must be a number or a string of 1 to {MAX_CREATED_AT} "
                                       "characters: with the id it is the session's durable identity",
                       field="createdAt")
    created_at, _, _ = normalize(created_at)
    if type(version) is not int or not 1 <= version <= 1_000:
        raise MvuError(Code.OPERATION, "formatVersion must be an integer from 1 to 1000", field="formatVersion")
    if parent_session is not None:
        try:
            check_session_id(parent_session)
        except MvuError:
            raise MvuError(Code.OPERATION, "parentSession must be a session id", field="parentSession") from None
        if parent_session == session_id:
            raise MvuError(Code.OPERATION, "a session is not its own parent", field="parentSession")
    if origin is not None and (not isinstance(origin, str) or not 1 <= len(origin) <= MAX_ORIGIN):
        raise MvuError(Code.OPERATION, f"origin must be a string of 1 to {MAX_ORIGIN} characters", field="origin")
    if inherited_event_count is not None and (type(inherited_event_count) is not int
                                              or not 0 <= inherited_event_count <= MAX_EVENT_COUNT):
        raise MvuError(Code.OPERATION, "inheritedEventCount must be a non-negative integer",
                       field="inheritedEventCount")
    if inherited_event_count is not None and parent_session is None:
        raise MvuError(Code.OPERATION, "inheritedEventCount says where a branch's own events start: it needs "
                                       "parentSession", field="inheritedEventCount")
    if isinstance(created_at, str):
        utf8(created_at)
    if isinstance(origin, str):
        utf8(origin)
    return SessionHeader(session_id, version, created_at, parent_session, origin, inherited_event_count)
