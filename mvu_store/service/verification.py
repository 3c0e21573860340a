"""A record checked against durable history once, then only what is new (DIGEST P-2, I-3).

Every recorded reply of a record must still be in the host's durable history, unchanged, before
the record is read, edited or given more replies: a reply that disappeared is
``MVU_HISTORY_UNAVAILABLE``, one that changed ``MVU_HISTORY_CHANGED``, an instance whose
session identity changed ``MVU_SESSION_IDENTITY``. A version checked against a session log stays
valid while that log keeps its ``generation`` (the host appended, nothing earlier changed), so
the verifier remembers, per record, the last own version it checked and the generations it
checked against, and on the next call checks only the versions written since. A new generation
of any of those sessions (an earlier event edited or removed, a header changed, the log evicted)
means a full check again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from mvu_store.bounded import BoundedCache
from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import json_equal
from mvu_store.ledger import Ledger
from mvu_store.ledger.records import VersionRecord
from mvu_store.service.catalog import Entry
from mvu_store.service.identity import session_identity
from mvu_store.service.session_cache import SessionCache, SessionLog
from mvu_store.service.session_replies import verify_recorded

# Version kinds whose source names a durable message to check against the session.
_AUDITED_KINDS = frozenset({"reply", "failed", "card", "initial", "inherited"})
# Versions that are never a reply (an edit, a card write): the pipeline never asks for their keys.
_NOT_REPLIES = frozenset({"manual", "card"})
# Records whose checked state is remembered, and what those states may hold in all (a record's
# holds about KEY_BYTES a reply it wrote: its version key and text fingerprint, two 64-character
# strings in a dict, measured at about 250 bytes); one beyond either is checked in full when used
# again.
CAPACITY = 4096
MEMORY_BYTES = 64 * 1024 * 1024
KEY_BYTES = 300

Logs = dict[str, SessionLog | None]
"""Session logs already read in this call, by session id (each is read at most once a call)."""


@dataclass(slots=True)
class _Checked:
    through: int = -1
    """The position of the last own version checked."""
    generations: dict[str, int] = field(default_factory=dict)
    """The generation of each session log the versions were checked against."""
    keys: dict[str, str | None] = field(default_factory=dict)
    """Every version seen that a reply wrote (own and inherited): key -> text fingerprint. Edits
    and card writes are never a reply, so a record edited all day keeps no key of theirs."""
    row: tuple[int, int] | None = None
    """The (position, revision) of the resource row read before the last check's versions:
    while the row is the same and at that revision, no version was written since (every
    version claims a revision)."""


class Verifier:
    def __init__(self, ledger: Ledger, sessions: SessionCache) -> None:
        self._ledger = ledger
        self._sessions = sessions
        self._checked: BoundedCache[str, _Checked] = BoundedCache(
            MEMORY_BYTES, weigh=lambda state: KEY_BYTES * (len(state.keys) + 1), max_entries=CAPACITY)

    async def check(self, entry: Entry, logs: Logs | None = None) -> Mapping[str, str | None]:
        """Check ``entry`` against durable history; returns its recorded version keys with their
        text fingerprints (so the pipeline knows which replies are recorded without a read)."""
        known: Logs = logs if logs is not None else {}
        own = await self._check_identity(entry, known)
        if entry.initial is not None:
            return {}  # not allocated yet: no version can exist
        assert entry.row is not None
        row = (entry.row.position, entry.row.revision)
        state = await self._still_checked(entry.id, known)
        if state is not None and state.row == row:
            return state.keys  # nothing written since, checked against the same session logs
        if state is None:
            state = _Checked()
            versions = await self._ledger.versions(entry.id)
        else:
            versions = await self._ledger.versions(entry.id, after_position=state.through)
        generations = await self._verify(entry, versions, own, known)
        # Everything new checked out: remember it (never before, so a refusal repeats until fixed).
        own_log = known.get(own) if own is not None else None
        if own is not None and own_log is not None:
            generations.setdefault(own, own_log.generation)
        state.generations.update(generations)
        state.row = row
        for version in versions:
            if version.kind not in _NOT_REPLIES:
                state.keys[version.key] = version.fingerprint
            if not version.inherited:
                state.through = max(state.through, version.position)
        self._checked.put(entry.id, state)
        return state.keys

    async def _log(self, known: Logs, session_id: str) -> SessionLog | None:
        """A session's log, read at most once a call."""
        if session_id not in known:
            known[session_id] = await self._sessions.log(session_id)
        return known[session_id]

    async def _check_identity(self, entry: Entry, known: Logs) -> str | None:
        """An instance's session, whose durable identity must be the one it was made in."""
        identity = entry.instance
        if identity is None:
            return None
        own = str(identity["sessionId"])
        own_log = await self._log(known, own)
        current = session_identity(own_log.snapshot() if own_log is not None else None, own)
        if not json_equal(identity, current):
            raise MvuError(Code.SESSION_IDENTITY, "the instance's durable session identity changed", id=entry.id)
        return own

    async def _still_checked(self, resource_id: str, known: Logs) -> _Checked | None:
        """What was checked of the record, while every session log it was checked against keeps
        its generation (None: an earlier part of one changed, so everything is checked again)."""
        state = self._checked.get(resource_id)
        if state is None:
            return None
        for session_id, generation in state.generations.items():
            log = await self._log(known, session_id)
            if log is None or log.generation != generation:
                return None
        return state

    async def _verify(self, entry: Entry, versions: list[VersionRecord], own: str | None,
                      known: Logs) -> dict[str, int]:
        """Check ``versions`` against their sessions' logs; the generation of each log used."""
        generations: dict[str, int] = {}
        for version in versions:
            source_session = self._session_of(version, own)
            if source_session is None:
                continue
            log = await self._log(known, source_session)
            if log is None:
                raise MvuError(Code.HISTORY_UNAVAILABLE, f"source session {source_session!r} is unavailable",
                               id=entry.id, session_id=source_session)
            fingerprint = version.meta.get("sourceFingerprint") or version.fingerprint
            verify_recorded(version.source, fingerprint if isinstance(fingerprint, str) else None, log.snapshot(),
                            inherited=version.inherited)
            generations[source_session] = log.generation
        return generations

    def recorded(self, entry: Entry, base_revision: int, revision: int, *, key: str | None, fingerprint: str,
                 evidence: tuple[str, int] | None = None) -> None:
        """The service just wrote version ``key`` (``fingerprint``) of ``entry`` as ``revision``,
        on top of ``base_revision``; ``evidence``: the session, and the generation of its log,
        the version was written from (a reply's). When the record was checked at
        ``base_revision`` against that same log, the new version is known to be good, so the
        next check needs no read. Otherwise nothing is noted and the next check reads it."""
        state = self._checked.get(entry.id)
        if state is None or entry.row is None or key is None or state.row != (entry.row.position, base_revision):
            return
        if evidence is not None and state.generations.get(evidence[0], evidence[1]) != evidence[1]:
            return
        state.row = (entry.row.position, revision)
        if evidence is not None:  # a reply's version (an edit or a card write names no session log)
            state.keys[key] = fingerprint
            state.generations[evidence[0]] = evidence[1]
            self._checked.put(entry.id, state)  # weighed again, with its new key

    @staticmethod
    def _session_of(version: VersionRecord, own: str | None) -> str | None:
        """The session a version's evidence is in, or None when it names none to check."""
        if version.kind not in _AUDITED_KINDS or (version.source.get("manual") and not version.source.get("card")):
            return None
        # An ancestor's version, seen through lineage, is checked against this session's
        # copied prefix: the child stays verifiable on its own (F-1).
        session_id = own if version.inherited and own is not None else version.source.get("sessionId")
        return session_id if isinstance(session_id, str) else None
