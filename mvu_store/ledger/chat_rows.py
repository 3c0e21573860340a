"""A SillyTavern chat's rows (``mvu_store.chats``): its import as one unit of work, its export
from one snapshot.

An import reads its file a line at a time inside its unit, so that memory is bounded by the
longest line and a refused file writes nothing: the importer (``chats.importer``) is handed a
:class:`ChatImportRows` for the length of the unit and tells it, a step at a time, what the file
holds (sessions, events, lines, instances, versions); the steps, their SQL and the transaction
stay here. An export likewise reads through a :class:`ChatExportRows` over one read snapshot,
writing its file page by page.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import and_, bindparam, select, text

from mvu_store.errors import Code, MvuError
from mvu_store.host import SessionEvent, SessionHeader
from mvu_store.jsonvalue import JsonValue
from mvu_store.ledger import tables as t
from mvu_store.ledger.host_sessions import HostSessions, StoredTail, stored_tail
from mvu_store.ledger.query import LEDGER, Query, ReadRows, Row
from mvu_store.ledger.records import ChangeRow, NewResource
from mvu_store.ledger.resources import Resources
from mvu_store.ledger.row_batch import RowBatch, insert_batch
from mvu_store.ledger.selections import Selections
from mvu_store.ledger.store import USAGE, Store, now_ms
from mvu_store.ledger.writer import WriteTx

T = TypeVar("T")

LINES_PAGE = 512
"""Lines an export reads at a time."""
QUEUED_BYTES = 4 * 1024 * 1024
"""An import's rows are written in batches of about this many bytes (memory bounded by it)."""

_c, _l, _v, _b, _s, _r = (t.chat_imports.c, t.chat_lines.c, t.versions.c, t.blobs.c, t.selections.c,
                          t.resources.c)

_IMPORT = Query("chat-import", lambda: select(_c.sha256, _c.summary).where(
    _c.ledger_id == LEDGER, _c.session_id == bindparam("session_id")))
_SAME_FILE = Query("chat-import-by-digest", lambda: select(_c.summary).where(
    _c.ledger_id == LEDGER, _c.sha256 == bindparam("sha256")).order_by(_c.session_id).limit(1))
_LINES = Query("chat-export-lines", lambda: select(_l.position, _l.body, _l.states).where(
    _l.ledger_id == LEDGER, _l.session_id == bindparam("session_id"), _l.position >= bindparam("first"),
).order_by(_l.position).limit(LINES_PAGE))
_STATE = Query("chat-export-state", lambda: select(_v.meta, _b.body).select_from(
    t.versions.join(t.blobs, and_(_b.ledger_id == _v.ledger_id, _b.hash == _v.variables_hash))).where(
    _v.ledger_id == LEDGER, _v.resource_id == bindparam("resource_id"), _v.key == bindparam("key")))
_REPLIES = Query("chat-export-replies", lambda: select(_v.message_seq, _b.body).select_from(
    t.versions.join(t.blobs, and_(_b.ledger_id == _v.ledger_id, _b.hash == _v.variables_hash))).where(
    _v.ledger_id == LEDGER, _v.resource_id == bindparam("resource_id"), text("kind IN ('reply', 'import')"),
    _v.message_seq > bindparam("after")).order_by(_v.position))
_INITIAL = Query("chat-export-initial", lambda: select(_b.body).select_from(
    t.resources.join(t.blobs, and_(_b.ledger_id == _r.ledger_id, _b.hash == _r.initial_hash))).where(
    _r.ledger_id == LEDGER, _r.id == bindparam("resource_id")))
_SELECTED = Query("chat-export-selection", lambda: select(_s.template_id).where(
    _s.ledger_id == LEDGER, _s.session_id == bindparam("session_id")))


@dataclass(frozen=True, slots=True)
class ImportedVersion:
    """A recorded state as the next version of a resource (kind ``import``)."""

    resource_id: str
    key: str
    position: int
    revision: int
    parent_key: str | None
    variables_hash: str
    session_id: str
    message_seq: int
    source: str
    meta: str
    created_at: int | None
    """When the message was sent (None: unknown, the time of the import)."""
    changes: tuple[ChangeRow, ...] = ()
    """What the version changed from the state before it (the ``changes`` rows, actor ``import``)."""


S = TypeVar("S", "ChatImportRows", "ChatExportRows")


def _closing_after(steps: S, run: Callable[[S], T]) -> T:
    """``run(steps)``, then ``steps`` closed whatever happened: they live as long as their unit."""
    try:
        return run(steps)
    finally:
        steps.closed = True


def _ended(what: str) -> MvuError:
    return MvuError(Code.DISPOSED, f"the chat {what}'s unit of work has ended: its steps run only inside it")


class ChatImportRows:
    """The steps of one chat import, inside its unit of work (valid only during
    :meth:`ChatRows.import_chat_rows`, on the writer's thread)."""

    def __init__(self, parts: ChatRows, tx: WriteTx) -> None:
        self._parts, self._open_tx = parts, tx
        self.closed = False
        """Set when the unit of work ends: a step kept and called later is refused, never run
        on a finished transaction."""
        usage = tx.one(USAGE)
        self.room = (int(usage["limit_bytes"]) - int(usage["used_bytes"])) if usage else 0
        """The bytes the ledger had free when the import began."""
        self._queued = RowBatch()
        """States, lines, versions and a branch's selection and activations, written a batch at
        a time (:meth:`write_queued`): one statement per table and batch."""

    @property
    def _tx(self) -> WriteTx:
        if self.closed:
            raise _ended("import")
        return self._open_tx

    @property
    def charged(self) -> int:
        """The bytes the import's rows charged so far, the rows queued at their most (a state
        stored before is not charged again): exact once they are written."""
        return self._tx.charged + self._queued.size

    def write_queued(self) -> None:
        """Write the rows queued (done by itself once they pass :data:`QUEUED_BYTES`)."""
        insert_batch(self._parts.store, self._tx, self._queued)

    def _queue(self, table: str, row: dict[str, Any]) -> None:
        self._queued.add_row(table, row)
        self._write_when_full()

    def _write_when_full(self) -> None:
        if self._queued.size >= QUEUED_BYTES:
            self.write_queued()

    def create_session(self, header: SessionHeader) -> None:
        self._parts.hosts.insert_host_session(self._tx, header)

    def append_events(self, session_id: str, events: Sequence[tuple[SessionEvent, str]]) -> None:
        self._parts.hosts.insert_host_events(self._tx, session_id, events)

    def add_line(self, session_id: str, position: int, body: str, states: str | None) -> None:
        """A line of the file (``body``, its recorded states taken out, ``states`` naming them)."""
        self._queue("chat_lines", {"session_id": session_id, "position": position, "body": body, "states": states})

    def keep_template(self, template_id: str, definition: JsonValue) -> JsonValue:
        """The stored template, or ``definition`` stored as it (a card discovered before stands)."""
        return self._parts.selections.keep_template(self._tx, template_id, definition)

    def create_instance(self, new: NewResource, *, fork_of: tuple[str, str | None] | None = None) -> None:
        """Create ``new``; ``fork_of``: as a fork of (resource, version key)."""
        if fork_of is None:
            self._parts.resources.insert_resource(self._tx, new)
        else:
            self._parts.resources.insert_fork(self._tx, fork_of[0], new, fork_of[1])

    def add_branch(self, new: NewResource, *, fork_of: tuple[str, int, str] | None, head: tuple[int, str, str],
                   boundary: int) -> None:
        """A swipe's branch instance, created at its version: ``fork_of`` (resource, position,
        key) is the version it forks from (None: it has no parent), ``head`` its own (revision,
        key, state hash); its session selects the template, which and it are active from
        ``boundary``. The parent's version may still be queued: it is not looked up."""
        revision, key, state_hash = head
        queued = self._queued.take_blob(state_hash)
        if queued is not None:  # the resource row names its state: stored first
            self._parts.store.put_blob(self._tx, queued)
        self._parts.resources.insert_resource(self._tx, new, revision=revision, head=(key, state_hash),
                                              lineage=fork_of[:2] if fork_of is not None else None)
        self._queue("selections", {"session_id": new.session_id, "template_id": new.template_id})
        for owner in (new.template_id, new.id):
            self._queue("activations", {"owner_id": owner, "session_id": new.session_id, "seq": boundary})

    def put_state(self, variables: JsonValue, encoded: bytes, text: str | None = None) -> str:
        """Store a recorded state (its canonical bytes ``encoded``, checked against the state
        budget now; ``text``: the same as text, when known); returns its hash. It is queued with
        the versions that name it, and written before them."""
        blob = self._parts.store.prepare_state(variables, encoded, text)
        self._queued.add_blob(blob)
        self._write_when_full()
        return blob.hash

    def add_version(self, version: ImportedVersion) -> None:
        self._queue("versions", {
            "resource_id": version.resource_id, "key": version.key, "position": version.position, "kind": "import",
            "revision": version.revision, "parent_key": version.parent_key, "variables_hash": version.variables_hash,
            "session_id": version.session_id, "message_seq": version.message_seq, "operation_id": None,
            "fingerprint": None, "error": None, "source": version.source, "meta": version.meta,
            "created_at": now_ms() if version.created_at is None else version.created_at})

    def settle(self, resource_id: str, head: tuple[int, str, str] | None, session_id: str, template_id: str,
               boundary: int) -> None:
        """Move the resource's head to (revision, key, state hash) when it has versions; the
        session selects ``template_id``, which and the resource are active from ``boundary``."""
        parts, tx = self._parts, self._tx
        if head is not None:
            self.write_queued()  # the head names its state and version: stored first
            revision, key, state_hash = head
            parts.store.update_row(tx, t.resources, {"id": resource_id},
                                   {"revision": revision, "head_key": key, "head_hash": state_hash})
        parts.selections.set_selection(tx, session_id, template_id)
        parts.selections.set_activation(tx, template_id, session_id, boundary)
        parts.selections.set_activation(tx, resource_id, session_id, boundary)

    def finish(self, session_id: str, sha256: str, size: int, summary: str) -> None:
        """The import's record, last: the summary of a file imported again."""
        self.write_queued()
        self._parts.store.insert_row(self._tx, t.chat_imports, {"session_id": session_id, "sha256": sha256,
                                                                "size": size, "summary": summary})


class ChatExportRows:
    """What a chat's export reads, in one snapshot (valid only during
    :meth:`ChatRows.export_chat_rows`)."""

    def __init__(self, rows: ReadRows, session_id: str) -> None:
        self._open_rows, self.session_id = rows, session_id
        self.closed = False
        """Set when the snapshot ends (as :attr:`ChatImportRows.closed`)."""

    @property
    def _rows(self) -> ReadRows:
        if self.closed:
            raise _ended("export")
        return self._open_rows

    def tail(self) -> StoredTail | None:
        """The session's header and every event (None without the session)."""
        return stored_tail(self._rows, self.session_id, -1)

    def imported(self) -> str | None:
        """The summary of the session's import, if it was imported."""
        found = self._rows.one(_IMPORT, session_id=self.session_id)
        return None if found is None else str(found["summary"])

    def lines(self) -> Iterator[Row]:
        """The imported lines (``position``, ``body``, ``states``) in order, a page at a time."""
        first = 0
        while True:
            page = self._rows.all(_LINES, session_id=self.session_id, first=first)
            yield from page
            if len(page) < LINES_PAGE:
                return
            first = int(page[-1]["position"]) + 1

    def state(self, resource_id: str, key: str) -> Row | None:
        """A version's ``meta`` and state ``body``."""
        return self._rows.one(_STATE, resource_id=resource_id, key=key)

    def replies(self, resource_id: str, after_seq: int) -> list[Row]:
        """The states (``message_seq``, ``body``) replies and imports wrote after message ``after_seq``."""
        return self._rows.all(_REPLIES, resource_id=resource_id, after=after_seq)

    def initial(self, resource_id: str) -> str | None:
        found = self._rows.one(_INITIAL, resource_id=resource_id)
        return None if found is None else str(found["body"])

    def selected_template(self) -> str | None:
        found = self._rows.one(_SELECTED, session_id=self.session_id)
        return None if found is None else found["template_id"]


class ChatRows:
    """Importing and exporting a chat's rows."""

    def __init__(self, store: Store, resources: Resources, selections: Selections, hosts: HostSessions) -> None:
        self.store, self.resources, self.selections, self.hosts = store, resources, selections, hosts

    async def import_chat_rows(self, session_id: str, sha256: str, *, any_session: bool,
                               write: Callable[[ChatImportRows], T], again: Callable[[str], T]) -> T:
        """Import a chat in one unit of work: ``write`` writes it through :class:`ChatImportRows`.

        A file imported before is not: ``again`` answers with its stored summary (the same
        digest under ``session_id`` or, with ``any_session``, under any session); another file
        under ``session_id`` is ``MVU_ID_CONFLICT``."""

        def work(tx: WriteTx) -> T:
            same = tx.one(_SAME_FILE, sha256=sha256) if any_session else None
            if same is not None:
                return again(same["summary"])
            stored = tx.one(_IMPORT, session_id=session_id)
            if stored is not None:
                if stored["sha256"] != sha256:
                    raise MvuError(Code.ID_CONFLICT, f"session {session_id!r} holds another imported chat",
                                   session_id=session_id, sha256=stored["sha256"])
                return again(stored["summary"])
            return _closing_after(ChatImportRows(self, tx), write)

        return await self.store.write(work)

    async def export_chat_rows(self, session_id: str, read: Callable[[ChatExportRows], T]) -> T:
        """Run ``read`` over the session's rows in one snapshot (off the loop)."""
        return await self.store.read_rows(lambda rows: _closing_after(ChatExportRows(rows, session_id), read))
