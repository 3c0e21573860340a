"""A reference host: sessions as append-only logs, in memory or as durable JSONL files.

Used by the tests, the demo and newcomers to drive the whole pipeline without a chat program.
With ``path``, each session is ``<path>/<session id>.jsonl``: the first line is the header, each
further line one event, appended and fsynced, so a restarted process sees the same sessions.
"""

from __future__ import annotations

import copy
import json
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.host import SESSION_FORMAT_VERSION, Lease, SessionEvent, SessionHeader, SessionSnapshot
from mvu_store.jsonvalue import JsonValue, normalize

# Session ids become file names: keep them to a portable, unambiguous alphabet.
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,159}$")


@dataclass(slots=True)
class _Session:
    header: SessionHeader
    events: list[SessionEvent] = field(default_factory=list)
    generation: int = 0


class MemoryHost:
    """Implements :class:`mvu_store.host.Host`, plus the calls a test or demo needs to act as
    the chat program: create sessions, append events, drift identities, invalidate leases."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self._sessions: dict[str, _Session] = {}
        self._path = Path(path) if path is not None else None
        if self._path is not None:
            self._path.mkdir(parents=True, exist_ok=True)
            for log in sorted(self._path.glob("*.jsonl")):
                self._load(log)

    # -- the Host protocol ---------------------------------------------------------------------

    async def inspect(self, session_id: str) -> SessionSnapshot | None:
        session = self._sessions.get(session_id)
        if session is None:
            return None
        # A snapshot is the caller's own: later appends and edits never show through it.
        return SessionSnapshot(session.header, tuple(copy.deepcopy(session.events)))

    async def capture_session_lease(self, session_id: str) -> Lease:
        session = self._require(session_id)
        generation = session.generation

        def valid() -> bool:
            current = self._sessions.get(session_id)
            return current is session and current.generation == generation

        return valid

    # -- acting as the chat program ------------------------------------------------------------

    def create_session(
        self,
        session_id: str,
        *,
        created_at: int | float | str,
        version: int = SESSION_FORMAT_VERSION,
        parent_session: str | None = None,
        origin: str | None = None,
    ) -> SessionHeader:
        if not _SESSION_ID.match(session_id):
            raise MvuError(Code.SCOPE, f"session id {session_id!r} must be 1-160 letters, digits or _.:-")
        if session_id in self._sessions:
            raise MvuError(Code.ID_CONFLICT, f"session {session_id!r} already exists", session_id=session_id)
        header = SessionHeader(session_id, version, created_at, parent_session, origin)
        self._sessions[session_id] = _Session(header)
        self._write(session_id, _header_json(header), truncate=True)
        return header

    def append(self, session_id: str, type: str, data: dict[str, JsonValue] | None = None) -> int:
        """Append an event; returns its seq. Any append invalidates the session's leases."""
        session = self._require(session_id)
        payload, _, _ = normalize(data or {})
        event = SessionEvent(len(session.events), type, payload)
        session.events.append(event)
        session.generation += 1
        self._write(session_id, {"seq": event.seq, "type": type, "data": payload})
        return event.seq

    def set_created_at(self, session_id: str, created_at: int | float | str | None) -> None:
        """Change the durable creation time (simulates identity drift, DIGEST I-3)."""
        session = self._require(session_id)
        session.header = replace(session.header, created_at=created_at)
        session.generation += 1
        self._rewrite(session_id)

    def invalidate_leases(self, session_id: str) -> None:
        self._require(session_id).generation += 1

    def session_ids(self) -> list[str]:
        return list(self._sessions)

    # -- storage -------------------------------------------------------------------------------

    def _require(self, session_id: str) -> _Session:
        session = self._sessions.get(session_id)
        if session is None:
            raise MvuError(Code.MISSING, f"no session {session_id!r}", session_id=session_id)
        return session

    def _write(self, session_id: str, line: dict[str, Any], *, truncate: bool = False) -> None:
        if self._path is None:
            return
        with open(self._path / f"{session_id}.jsonl", "w" if truncate else "a", encoding="utf-8") as log:
            log.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
            log.flush()
            os.fsync(log.fileno())

    def _rewrite(self, session_id: str) -> None:
        if self._path is None:
            return
        session = self._sessions[session_id]
        target = self._path / f"{session_id}.jsonl"
        temporary = target.with_suffix(".jsonl.tmp")
        with open(temporary, "w", encoding="utf-8") as log:
            for line in [_header_json(session.header)] + [
                {"seq": e.seq, "type": e.type, "data": e.data} for e in session.events
            ]:
                log.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
            log.flush()
            os.fsync(log.fileno())
        os.replace(temporary, target)

    def _load(self, log: Path) -> None:
        lines = [line for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
        if not lines:
            return
        head = json.loads(lines[0])
        header = SessionHeader(
            head["id"], int(head["version"]), head.get("createdAt"), head.get("parentSession"), head.get("origin")
        )
        session = _Session(header)
        for line in lines[1:]:
            event = json.loads(line)
            session.events.append(SessionEvent(int(event["seq"]), str(event["type"]), event.get("data") or {}))
        self._sessions[header.id] = session


def _header_json(header: SessionHeader) -> dict[str, Any]:
    line: dict[str, Any] = {"id": header.id, "version": header.version, "createdAt": header.created_at}
    if header.parent_session is not None:
        line["parentSession"] = header.parent_session
    if header.origin is not None:
        line["origin"] = header.origin
    return line
