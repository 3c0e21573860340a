"""The JSONL session log: ``MemoryHost(path=DIR)`` writes it, ``mvu sessions import`` reads it.

A log is ``<session id>.jsonl``: the first line is the header (:func:`header_line`), each further
line one event (:func:`event_line`), appended whole and fsynced by its writer.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.host.headers import SESSION_ID
from mvu_store.host.protocol import SessionEvent, SessionHeader


def read_log(log: Path) -> tuple[SessionHeader, list[SessionEvent], bool] | None:
    """A session log file: its header, its events and whether a crash tore the last line (that
    line is left out: everything before it was fsynced whole). None for an empty file.

    A log is ``<session id>.jsonl`` and its header names that id (one the session id pattern
    admits): any other file is refused with a typed error naming it, as are a symbolic link, a
    file that is not a regular one (a device, a pipe) and a log that is not what this host
    writes (``MVU_JSON``)."""
    try:
        status = os.lstat(log)
    except OSError as error:
        raise MvuError(Code.MISSING, f"{log.name}: {error.strerror}", path=str(log)) from None
    if not stat.S_ISREG(status.st_mode):
        raise MvuError(Code.SCOPE, f"{log.name} is not a regular file (a link, a device or a pipe): not read",
                       path=str(log))
    try:
        lines = [line for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
        if not lines:
            return None
        head = json.loads(lines[0])
        header = SessionHeader(head["id"], int(head["version"]), head.get("createdAt"), head.get("parentSession"),
                               head.get("origin"), head.get("inheritedEventCount"))
    except (ValueError, KeyError, TypeError, AttributeError) as error:  # UnicodeDecodeError is a ValueError
        raise MvuError(Code.JSON, f"{log.name}: not a session log ({error!r})", path=str(log)) from None
    if not isinstance(header.id, str) or not SESSION_ID.match(header.id) or log.name != f"{header.id}.jsonl":
        raise MvuError(Code.SCOPE, f"{log.name}: its header names session {header.id!r}, not the one its file "
                                   "name does", path=str(log))
    events: list[SessionEvent] = []
    for number, line in enumerate(lines[1:], start=2):
        try:
            event = json.loads(line)
        except ValueError as error:
            if number == len(lines):
                return header, events, True  # torn by a crash: the line never finished
            raise MvuError(Code.JSON, f"{log.name}: line {number} is not JSON ({error})", path=str(log)) from None
        try:
            events.append(SessionEvent(int(event["seq"]), str(event["type"]), event.get("data") or {}))
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise MvuError(Code.JSON, f"{log.name}: line {number} is not an event ({error!r})",
                           path=str(log)) from None
    return header, events, False


def header_line(header: SessionHeader) -> dict[str, Any]:
    """A log's first line: the header, its absent optional fields left out."""
    line: dict[str, Any] = {"id": header.id, "version": header.version, "createdAt": header.created_at}
    if header.parent_session is not None:
        line["parentSession"] = header.parent_session
    if header.origin is not None:
        line["origin"] = header.origin
    if header.inherited_event_count is not None:
        line["inheritedEventCount"] = header.inherited_event_count
    return line


def event_line(event: SessionEvent) -> dict[str, Any]:
    """A log line after the header: one event."""
    return {"seq": event.seq, "type": event.type, "data": event.data}
