"""Manual writes: edits, management-mode preferences and copies (DIGEST A, I-8, I-11, L-3).

Each is refused wherever a read would be (drifted history, a changed identity) and while the
instance's turn is running; each commits once under the caller's expected revision (its conflict
is the caller's to resolve, so no retry loop applies) and is idempotent under the caller's
operation id. What an edit may
change is decided in :mod:`mvu_store.service.edit_rules`.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from mvu_store.errors import Code, MvuError
from mvu_store.host import Lease
from mvu_store.jsonvalue import JsonValue, js_json, json_equal, sha256_hex
from mvu_store.ledger import state_changes
from mvu_store.ledger.records import CommitRequest, NewResource, VersionRecord
from mvu_store.service.allocation import Allocation
from mvu_store.service.catalog import Entry, SeenHead
from mvu_store.service.context import EditingContext, Signal, check_signal, now_ms
from mvu_store.service.edit_rules import edit_content, edited_envelope
from mvu_store.service.models import (
    RESOURCE_ID,
    ManagementReceipt,
    Scope,
    StateRecord,
    UpdateReceipt,
    check_operation_id,
    check_revision,
    parse_scope,
    shown,
)
from mvu_store.service.offload import off_loop
from mvu_store.service.reads import Reads
from mvu_store.service.trigger_facts import Facts

T = TypeVar("T")


class Editing:
    def __init__(self, ctx: EditingContext, allocation: Allocation, reads: Reads) -> None:
        self._ctx = ctx
        self._allocation = allocation
        self._reads = reads

    async def update(self, resource_id: Any, content: Any, expected_revision: Any, operation_id: Any,
                     scope: Scope | dict[str, Any], signal: Signal | None) -> UpdateReceipt:
        ctx = self._ctx
        check_signal(signal)
        parsed = parse_scope(scope)
        check_operation_id(operation_id)
        check_revision(expected_revision)
        if parsed.historical:
            raise MvuError(Code.SCOPE, "historical scopes are read-only: re-read the current scope, then edit")
        sent = edit_content(content)  # refused before anything is allocated for it
        entry, seen = await self._writable(resource_id, parsed)
        fingerprint = sha256_hex(js_json({"content": sent, "scope": parsed.to_json(),
                                          "expectedRevision": expected_revision}))

        async def work() -> UpdateReceipt:
            lease = await self._check_instance(entry)
            # The head read with the entry serves when it is the revision the caller expects:
            # the commit's CAS then proves nothing moved since. Any other (a stale caller, a
            # replay, a head that moved) is read again under the lock, so no envelope is ever
            # built on a head other than the one the CAS expects.
            head, previous = seen if seen is not None and seen[0].revision == expected_revision else \
                await ctx.ledger.head_version(entry.id)
            variables = await off_loop(lambda: edited_envelope(sent, head.variables, now_ms=now_ms()))
            source, meta = _reply_edit_source(entry, previous) or _manual_source(
                parsed, operation_id, await ctx.ledger.last_message_seq(entry.id, parsed.session_id))
            result = {"id": entry.id, "type": "mvu-state", "content": variables, "revision": expected_revision + 1,
                      "scope": parsed.to_json(), "authority": "local"}
            facts = Facts(id=entry.id, eventId=operation_id, sessionId=parsed.session_id, on="manual_update")
            facts.add("started")
            facts.add("triggered")
            before = head.variables.get("stat_data") if isinstance(head.variables, dict) else None
            turn = source.get("turn")
            changes = tuple(await off_loop(lambda: state_changes(before, variables["stat_data"], "manual",
                                                                 turn=turn if isinstance(turn, int) else None)))
            # The stored head has sorted keys; key order alone is no change of state.
            if not json_equal(before, variables["stat_data"]):
                facts.add("applied", revision=expected_revision + 1, detail="state-committed")
            facts.add("completed", revision=expected_revision + 1, detail="manual-update")
            ctx.check_before_commit(signal, lease)
            # The expected revision is the caller's: a conflict is theirs to resolve, never retried here.
            outcome = await ctx.ledger.commit(CommitRequest(
                entry.id, expected_revision, "manual", variables, fingerprint, source,
                operation_id=operation_id, meta=meta, result=result, facts=tuple(facts.records), changes=changes))
            stored = outcome.result if isinstance(outcome.result, dict) else result
            if not outcome.replayed:
                ctx.verifier.recorded(entry, expected_revision, outcome.revision, fingerprint=fingerprint,
                                      key=outcome.version_key)
                await facts.committed(outcome, ctx.usage)
            stored_scope = stored.get("scope")
            return UpdateReceipt(id=entry.id, content=stored.get("content"), revision=outcome.revision,
                                 scope=stored_scope if isinstance(stored_scope, dict) else parsed.to_json(),
                                 replayed=outcome.replayed)

        return await self._edit(entry, work)

    async def set_management_mode(self, resource_id: Any, mode: Any, expected_revision: Any, operation_id: Any,
                                  scope: Scope | dict[str, Any], signal: Signal | None) -> ManagementReceipt:
        ctx = self._ctx
        check_signal(signal)
        parsed = parse_scope(scope)
        if mode not in ("native", "managed"):
            raise MvuError(Code.CONFIG, "mode is 'native' or 'managed'")
        if not isinstance(operation_id, str) or not operation_id or len(operation_id) > 200:
            raise MvuError(Code.CONFIG, "an explicit operation_id is required")
        check_revision(expected_revision)
        if parsed.historical:
            raise MvuError(Code.SCOPE, "historical scopes are read-only")
        entry, _ = await self._writable(resource_id, parsed, allow_source_error=True)

        async def work() -> ManagementReceipt:
            lease = await self._check_instance(entry)
            fingerprint = sha256_hex(js_json({"mode": mode, "expectedRevision": expected_revision,
                                              "scope": parsed.to_json()}))
            ctx.check_before_commit(signal, lease)
            outcome = await ctx.ledger.set_management_mode(entry.id, mode=mode, expected_revision=expected_revision,
                                                           operation_id=operation_id, fingerprint=fingerprint)
            stored = outcome.result if isinstance(outcome.result, dict) else {}
            return ManagementReceipt(id=entry.id, management_mode=ctx.management_mode(),
                                     stored_management_mode=str(stored.get("managementMode", mode)),
                                     revision=outcome.revision, replayed=outcome.replayed)

        return await self._edit(entry, work)

    async def copy(self, resource_id: Any, new_id: Any, scope: Scope | dict[str, Any],
                   signal: Signal | None) -> StateRecord:
        ctx = self._ctx
        check_signal(signal)
        parsed = parse_scope(scope)
        if not isinstance(new_id, str) or not RESOURCE_ID.match(new_id) or new_id.startswith(
                ("mvu:instance-", "mvu:character-")):
            raise MvuError(Code.ID_CONFLICT, "a copy needs a new 'mvu:' resource id")
        entry, _ = await self._writable(resource_id, parsed)
        if await ctx.catalog.entry(new_id) is not None:
            raise MvuError(Code.ID_CONFLICT, f"{new_id} already exists", id=new_id)

        async def work() -> StateRecord:
            lease = await self._check_instance(entry)
            assert entry.row is not None
            head = await ctx.ledger.head(entry.id)
            definition = {k: copy.deepcopy(v) for k, v in entry.definition.items()
                          if k not in ("instance", "templateId", "discovered", "characterId")}
            definition.update(id=new_id, sharing="shared", managementMode="native")
            ctx.check_before_commit(signal, lease)
            await ctx.ledger.create_resource(NewResource(
                id=new_id, kind="copy", initial=head.variables, definition=definition, management_mode="native",
                meta={"copiedFrom": {"id": entry.id, "revision": head.revision}}))
            created = await ctx.catalog.entry(new_id)
            assert created is not None
            return await self._reads.record(created, Scope(session_id=parsed.session_id))

        return await self._edit(entry, work)

    async def _writable(self, resource_id: Any, scope: Scope, *,
                        allow_source_error: bool = False) -> tuple[Entry, SeenHead | None]:
        """The resource to write, with its head as the same read saw it (None when it was
        allocated here, or is not a ledger row)."""
        await self._allocation.ensure_shared()  # a configured shared resource exists before anyone read it
        found = await self._ctx.catalog.entry_with_head(resource_id) if isinstance(resource_id, str) else None
        entry, seen = found if found is not None else (None, None)
        if entry is None and isinstance(resource_id, str) and scope.session_id is not None:
            entry = await self._allocation.allocate(scope.session_id, resource_id)
        if entry is None or (scope.session_id is not None and await self._allocation.is_draft(entry, scope.session_id)):
            raise MvuError(Code.MISSING, f"no resource {shown(resource_id)!r}", id=shown(resource_id))
        entry.require_access(scope)
        if not (allow_source_error and entry.legacy is None and entry.source_error is not None):
            entry.require_writable()
        return entry, seen

    async def _check_instance(self, entry: Entry) -> Lease | None:
        """Before an edit, holding the session's lock: its lease (A-1; taken under the lock, so an
        append queued before the edit is simply read, in one process as across processes), then
        the record's history still checks out (writes are blocked where reads are, P-2; for an
        instance that includes its session identity) and no turn of its session is running."""
        ctx = self._ctx
        identity = entry.instance
        lease = None if identity is None else await ctx.lease(str(identity["sessionId"]))
        log = await ctx.sessions.log(str(identity["sessionId"])) if identity is not None else None
        await ctx.verifier.check(entry, {str(identity["sessionId"]): log} if identity is not None else None)
        if log is not None and log.turn_running():
            raise MvuError(Code.READ_ONLY, "the instance cannot be edited while its turn is running", id=entry.id)
        return lease

    async def _edit(self, entry: Entry, work: Callable[[], Awaitable[T]]) -> T:
        identity = entry.instance
        if identity is None:
            self._ctx.alive()
            return await work()
        return await self._ctx.locked(str(identity["sessionId"]), work)


Source = tuple[dict[str, JsonValue], dict[str, JsonValue]]
"""A version's source and meta."""


def _reply_edit_source(entry: Entry, previous: VersionRecord | None) -> Source | None:
    """The manual version's source, as the original writes it, when it edits an instance's head
    that a message wrote: that message's coordinates; None otherwise."""
    seq = previous.source.get("messageSeq") if previous is not None else None
    if not (entry.is_instance and previous is not None and isinstance(seq, int) and seq >= 0):
        return None
    source = {k: v for k, v in previous.source.items() if k not in ("initial", "inherited")}
    source.update(manual=True, card=False)
    fingerprint = previous.meta.get("sourceFingerprint") or previous.fingerprint
    return source, ({"sourceFingerprint": fingerprint} if isinstance(fingerprint, str) else {})


def _manual_source(scope: Scope, operation_id: str, last: int | None) -> Source:
    """The source of any other edit: a ``manual:<operation id>`` coordinate after ``last``, the
    session's last message the history names (-1 when it names none)."""
    manual: dict[str, JsonValue] = {}
    if scope.session_id is not None:
        manual["sessionId"] = scope.session_id
    manual.update(messageId=f"manual:{operation_id}", messageSeq=-1 if last is None else last, manual=True)
    return manual, {}
