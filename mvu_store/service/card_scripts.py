"""Card scripts: the bubble snapshot, card bindings and card writes (docs/cards.md).

A card script (a status bar, a button in a message bubble) reads the state of its scope with
:meth:`Cards.snapshot`. To write, it first binds: :meth:`Cards.bind` checks the host's grant for
that script, that the scope is the timeline's writable head (or an empty session's opening) and
that exactly one resource is the card's there, and returns a *capability*. A write names the
capability and goes through the grant, the scope's evidence, idempotency, CAS and the source's
declaration, each checked again synchronously just before the commit. Card writes are the
script's own: they never ask the usage policy, and their facts carry ``configRevision: null``.

A capability has no time limit: it lives until it is revoked, its grant or scope stops being
current (for a message: a selection call for the session or a new report of the playthrough;
checked at every write), or the service stops (bindings are kept in memory only).
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.host import CardGrant, CardHost, Lease
from mvu_store.jsonvalue import JsonValue, js_json, json_equal, normalize, sha256_hex
from mvu_store.lang import parse_commands
from mvu_store.lang.apply import private_envelope, run_commands
from mvu_store.ledger import state_changes
from mvu_store.ledger.records import ChangeRow, CommitRequest, Head, VersionRecord
from mvu_store.ledger.rules import operation_key
from mvu_store.schema.allowance import Allowance
from mvu_store.service.allocation import Allocation
from mvu_store.service.card_scopes import HEX64, CardScope, Evidence, parse_card_scope, read_only, resolve
from mvu_store.service.catalog import Entry
from mvu_store.service.context import CardsContext, Signal, check_signal, now_ms
from mvu_store.service.edit_rules import edit_content, edited_envelope
from mvu_store.service.initial import DeclaredSchema
from mvu_store.service.models import Scope, check_operation_id, check_revision
from mvu_store.service.offload import off_loop
from mvu_store.service.processing import registered_receipt
from mvu_store.service.reads import Reads
from mvu_store.service.trigger_facts import Facts

MAX_BINDINGS = 512
"""Live and pending bindings together."""
CAUSES = ("user-interaction", "interval", "script")
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE)
_SKIPPED = (Code.WRITE_DENIED.value, Code.READ_ONLY.value, Code.USAGE_DENIED.value)


def _no_config(facts: Facts, phase: str, **fields: JsonValue) -> None:
    """A fact of a card write: the script's own, so it says ``configRevision: null`` (no policy)."""
    facts.add(phase, **fields)
    facts.records[-1]["configRevision"] = None


def _denied(message: str) -> MvuError:
    return MvuError(Code.WRITE_DENIED, message)


@dataclass(frozen=True, slots=True)
class Binding:
    capability: str
    scope: CardScope
    grant_id: str
    source_identity: dict[str, JsonValue]
    fingerprint: str
    grant_lease: Lease
    resource_id: str
    scope_lease: Lease | None = None
    """Ends with the scope as it was bound (:attr:`Evidence.binding_lease`)."""
    initial_source: dict[str, JsonValue] | None = None
    selection: tuple[bool, str | None] | None = None
    """A message scope's session's selection when it was bound: a write checks it is still that."""


@dataclass(slots=True)
class _Pending:
    fingerprint: str
    task: asyncio.Future[dict[str, Any]]
    cancelled: bool = False


def _current_source_fingerprint(version: VersionRecord | None) -> str | None:
    if version is None:
        return None
    recorded = version.meta.get("sourceFingerprint")
    return recorded if isinstance(recorded, str) else version.fingerprint


def _is_reply_at(version: VersionRecord | None, scope: CardScope, evidence: Evidence) -> bool:
    """Whether a resource's current version is the state after the scope's message."""
    return version is not None and version.source.get("sessionId") == scope.session_id \
        and version.source.get("messageSeq") == scope.end_event_id \
        and version.source.get("messageId") == evidence.message_id \
        and _current_source_fingerprint(version) == evidence.fingerprint


class Cards:
    def __init__(self, ctx: CardsContext, allocation: Allocation, reads: Reads) -> None:
        self._ctx = ctx
        self._allocation = allocation
        self._reads = reads
        self._live: dict[str, Binding] = {}
        self._pending: dict[str, _Pending] = {}

    # -- the resources a scope's card may use ---------------------------------------------------

    async def _active(self, scope: CardScope, evidence: Evidence) -> list[Entry]:
        """The card-active resources of the scope's session: not legacy, not failed; an instance
        only of the selected template; for an opening, only the scope's character's."""
        ctx = self._ctx
        log = await ctx.sessions.log(scope.session_id)
        entries = await self._allocation.session_entries(scope.session_id, log, allocate=False)
        selected = evidence.selected_template
        if selected is None:
            _, selected = await ctx.ledger.selection(scope.session_id)
        active = []
        for entry in entries:
            if entry.legacy is not None or entry.source_error is not None or entry.row is None:
                continue
            if entry.row.kind == "instance" and selected is not None and entry.row.template_id != selected \
                    and entry.definition.get("discovered") is True:
                continue
            if scope.mode is not None and entry.definition.get("characterId") != scope.character_id:
                continue
            active.append(entry)
        return active

    async def _heads(self, entries: list[Entry]) -> list[tuple[Entry, Head, VersionRecord | None]]:
        heads: list[tuple[Entry, Head, VersionRecord | None]] = []
        for entry in entries:
            if entry.initial is not None:  # not allocated: at its initial content, no version
                assert entry.row is not None
                heads.append((entry, Head(entry.id, 0, None, entry.initial), None))
                continue
            head, version = await self._ctx.ledger.head_version(entry.id)
            heads.append((entry, head, version))
        return heads

    # -- the bubble snapshot ----------------------------------------------------------------------

    async def snapshot(self, scope: Any, signal: Signal | None) -> dict[str, JsonValue]:
        check_signal(signal)
        parsed = parse_card_scope(scope)
        evidence = await resolve(self._ctx, parsed)
        return await self._snapshot(parsed, evidence)

    async def _snapshot(self, scope: CardScope, evidence: Evidence) -> dict[str, JsonValue]:
        """The card scope's snapshot, with the resource's command processor receipt when it
        has one (C-5: a binding snapshot shows it as a record does)."""
        snapshot, entry = await self._bare_snapshot(scope, evidence)
        registration = await registered_receipt(self._ctx.processor, entry, self._ctx.ledger) if entry else None
        if registration is not None:
            snapshot["commandProcessor"] = registration
        return snapshot

    async def _bare_snapshot(self, scope: CardScope,
                             evidence: Evidence) -> tuple[dict[str, JsonValue], Entry | None]:
        """The snapshot in its bare shape, and the resource it shows (None: none)."""
        entries = await self._active(scope, evidence)
        base: dict[str, JsonValue] = {"version": 1, "scope": scope.raw}
        if scope.mode is not None:
            if not evidence.check_current():
                raise read_only("the session's opening changed while it was read")
            if len(entries) != 1:
                raise MvuError(Code.AMBIGUOUS, f"{len(entries)} resources are this character's in the session",
                               count=len(entries))
            entry = entries[0]
            base["viewIdentity"] = evidence.view_identity
            if evidence.first_turn is not None:
                return {**base, **await self._opening_checkpoint(entry, scope, evidence.first_turn)}, entry
            record = await self._reads.record(entry, Scope(session_id=scope.session_id))
            return {**base, "revision": record.revision, "currentRevision": record.current_revision,
                    "status": "available", "variables": record.content, "resourceId": entry.id}, entry
        heads = await self._heads(entries)
        if len(heads) > 1:
            heads = [item for item in heads if _is_reply_at(item[2], scope, evidence)]
        if len(heads) > 1:
            raise MvuError(Code.AMBIGUOUS, f"{len(heads)} resources hold this message's state", count=len(heads))
        if not heads:
            return {**base, "revision": 0, "currentRevision": 0, "status": "unavailable", "variables": {}}, None
        entry, head, version = heads[0]
        await self._ctx.verifier.check(entry, None)
        if not _is_reply_at(version, scope, evidence):
            return {**base, "revision": head.revision, "currentRevision": head.revision, "status": "unavailable",
                    "variables": {}, "resourceId": entry.id}, entry
        return {**base, "revision": head.revision, "currentRevision": head.revision, "status": "available",
                "variables": head.variables, "resourceId": entry.id}, entry

    async def _opening_checkpoint(self, entry: Entry, scope: CardScope, turn: int) -> dict[str, JsonValue]:
        """A greeting read after the first send: the state the first turn started from."""
        point = await self._ctx.ledger.checkpoint(entry.id, session_id=scope.session_id, turn=turn) \
            if turn >= 0 and entry.initial is None else None
        if point is None:
            raise MvuError(Code.BASELINE_REQUIRED, "the session's first turn has no checkpoint", id=entry.id)
        return {"revision": point.revision, "currentRevision": entry.revision, "status": "available",
                "variables": await self._ctx.ledger.blob(point.variables_hash), "resourceId": entry.id}

    # -- bindings ---------------------------------------------------------------------------------

    async def bind(self, scope: Any, grant_id: Any, source_identity: Any, binding_id: Any,
                   signal: Signal | None) -> dict[str, Any]:
        check_signal(signal)
        parsed = parse_card_scope(scope)
        if parsed.mode == "greeting":
            raise read_only("a greeting scope is read-only")
        if parsed.mode == "initial" and parsed.greeting_index is not None and parsed.selection_token is None:
            raise MvuError(Code.SCOPE, "an initial scope naming its greeting names the view's selectionToken",
                           field="selectionToken")
        if not isinstance(grant_id, str) or not 1 <= len(grant_id) <= 200:
            raise MvuError(Code.SCOPE, "grantId is a string of 1 to 200 characters", field="grantId")
        _check_identity(source_identity, parsed)
        if binding_id is not None and (not isinstance(binding_id, str) or not _UUID.match(binding_id)):
            raise MvuError(Code.SCOPE, "bindingId is a UUID", field="bindingId")
        capability = binding_id.lower() if isinstance(binding_id, str) else str(uuid.uuid4())
        fingerprint = sha256_hex(js_json({"scope": parsed.raw, "grantId": grant_id,
                                          "sourceIdentity": source_identity}))
        self._purge()  # a binding whose grant ended is not replayed: binding again asks the grant
        live = self._live.get(capability)
        if live is not None:
            if live.fingerprint != fingerprint:
                raise MvuError(Code.IDEMPOTENCY_CONFLICT, "this binding id was bound with other parameters")
            return {"capability": capability, "snapshot": await self._snapshot(
                parsed, await resolve(self._ctx, parsed))}
        pending = self._pending.get(capability)
        if pending is not None:
            if pending.fingerprint != fingerprint:
                raise MvuError(Code.IDEMPOTENCY_CONFLICT, "this binding id is being bound with other parameters")
            return await asyncio.shield(pending.task)
        if len(self._pending) >= MAX_BINDINGS or len(self._live) + len(self._pending) >= MAX_BINDINGS:
            raise MvuError(Code.LIMIT, f"at most {MAX_BINDINGS} card bindings are held", limit=MAX_BINDINGS)
        created = _Pending(fingerprint, asyncio.get_running_loop().create_future())
        self._pending[capability] = created
        try:
            answer = await self._create(capability, parsed, grant_id, source_identity, fingerprint, created)
        except asyncio.CancelledError:
            created.task.cancel()  # whoever shares it is cancelled too
            raise
        except Exception as error:
            created.task.set_exception(error)
            created.task.exception()  # retrieved: a failed bind no one shares is not an unhandled error
            raise
        finally:
            self._pending.pop(capability, None)
        created.task.set_result(answer)
        return answer

    async def _create(self, capability: str, scope: CardScope, grant_id: str, source_identity: dict[str, Any],
                      fingerprint: str, pending: _Pending) -> dict[str, Any]:
        grant = await self._grant(grant_id, source_identity, scope)
        evidence = await resolve(self._ctx, scope)
        if not evidence.writable_head:
            raise read_only("only the timeline's head, after its turn, or an empty session's opening is writable")
        entries = await self._active(scope, evidence)
        heads = await self._heads(entries)
        if scope.mode is None:
            heads = [item for item in heads if _is_reply_at(item[2], scope, evidence)]
        if len(heads) != 1:
            raise read_only(f"{len(heads)} resources hold this scope's state: a card binds exactly one")
        if scope.mode == "initial" and not (evidence.mode == "initial" and evidence.check_current()):
            raise read_only("the session is no longer empty")
        snapshot = await self.snapshot(scope, None)  # a look of its own at the scope, as any read's
        if grant.check_current() is not True:
            raise _denied("the card's grant was revoked")
        if scope.mode == "initial" and evidence.check_current() is not True:
            raise read_only("the session is no longer empty")
        if pending.cancelled:
            raise _denied("the binding was revoked while it was made")
        self._live[capability] = Binding(capability, scope, grant_id, dict(source_identity), fingerprint,
                                         grant.check_current, heads[0][0].id, evidence.binding_lease,
                                         evidence.initial_source, evidence.selection)
        return {"capability": capability, "snapshot": snapshot}

    def revoke(self, capability: Any) -> None:
        if not isinstance(capability, str):
            return
        self._live.pop(capability, None)
        pending = self._pending.get(capability)
        if pending is not None:
            pending.cancelled = True

    def _purge(self) -> None:
        for capability, binding in list(self._live.items()):
            if binding.grant_lease() is not True:
                del self._live[capability]

    async def _grant(self, grant_id: str, source_identity: Mapping[str, Any], scope: CardScope) -> CardGrant:
        host = self._ctx.host
        grant = await host.authorize_card_write(grant_id, source_identity) if isinstance(host, CardHost) else None
        if grant is None or grant.write is not True or not json_equal(dict(grant.scope), scope.raw) \
                or grant.check_current() is not True:
            raise _denied("the host gave this card script no write grant for this scope")
        return grant

    # -- writes -----------------------------------------------------------------------------------

    async def write(self, capability: Any, operation: Any, value: Any, expected_revision: Any, operation_id: Any,
                    cause: Any, signal: Signal | None) -> dict[str, Any]:
        binding = self._live.get(capability) if isinstance(capability, str) else None
        if binding is None:
            raise _denied("no such card binding (revoked, expired with its grant, or never made)")
        if operation not in ("patch", "replace"):
            raise MvuError(Code.OPERATION, "operation is 'patch' or 'replace'", field="operation")
        if cause not in CAUSES:
            raise MvuError(Code.OPERATION, f"cause is one of {', '.join(CAUSES)}", field="cause")
        check_operation_id(operation_id)
        check_revision(expected_revision)
        check_signal(signal)
        value, _, _ = normalize(value)  # JSON only (MVU_JSON), as the request's fingerprint hashes it
        ctx = self._ctx
        scope = binding.scope
        version = None if binding.initial_source is not None else (await ctx.ledger.head_version(
            binding.resource_id))[1]
        turn = version.source.get("turn") if version is not None else None
        facts = Facts(id=binding.resource_id, eventId=operation_id, operationId=operation_id,
                      on="card_variable_update", cause=cause, sessionId=scope.session_id,
                      turn=turn if isinstance(turn, int) else 0)
        facts.add("started")
        try:
            return await ctx.locked(scope.session_id, lambda: self._write(
                binding, operation, value, expected_revision, operation_id, cause, signal, facts))
        except MvuError as error:
            facts.add("skipped" if error.code in _SKIPPED else "failed", reason=error.code)
            await facts.write(ctx.ledger, ctx.usage)
            raise

    async def _write(self, binding: Binding, operation: str, value: Any, expected_revision: int, operation_id: str,
                     cause: str, signal: Signal | None, facts: Facts) -> dict[str, Any]:
        ctx = self._ctx
        scope = binding.scope
        session_lease = await ctx.lease(scope.session_id)
        grant = await self._grant(binding.grant_id, binding.source_identity, scope)
        evidence = await self._evidence(binding)
        entry, head, version = await self._bound_head(binding)
        fingerprint = sha256_hex(js_json({"operation": operation, "value": value, "expectedRevision": expected_revision,
                                          "operationId": operation_id, "cause": cause, "scope": scope.raw,
                                          "sourceIdentity": binding.source_identity}))
        # The resource's own write of this operation decides (an ancestor's operation ids are not
        # this resource's): one indexed read, whatever the history's length.
        previous = await ctx.ledger.own_version(entry.id, operation_key(entry.id, operation_id))
        if previous is not None and previous.fingerprint != fingerprint:
            raise MvuError(Code.IDEMPOTENCY_CONFLICT, "this operation id was used for another card write",
                           operation_id=operation_id)
        if previous is None:
            if head.revision != expected_revision:
                raise MvuError(Code.REVISION_CONFLICT, "the state moved since the card read it",
                               revision=head.revision, expected_revision=expected_revision)
            if scope.mode is None and not _is_reply_at(version, scope, evidence):
                raise read_only("the state is no longer this message's")
        _no_config(facts, "triggered")
        variables = await off_loop(lambda: _candidate(operation, value, head.variables)) if previous is None \
            else head.variables
        revision = expected_revision + 1
        result = {"version": 1, "scope": scope.raw, "revision": revision, "currentRevision": revision,
                  "status": "available", "variables": variables, "resourceId": entry.id}
        before = head.variables.get("stat_data") if isinstance(head.variables, dict) else None
        ended = facts.copy()  # written with the commit only: a refusal keeps only the facts so far
        if previous is None and not json_equal(before, variables.get("stat_data")):
            _no_config(ended, "applied", revision=revision, detail="state-committed")
        _no_config(ended, "completed", revision=revision, detail="card-write")
        await self._still_bound(binding, grant, evidence, session_lease, signal)
        source, meta = _card_source(binding, version, evidence)
        turn = source.get("turn")
        changes: tuple[ChangeRow, ...] = ()
        if previous is None:
            changes = tuple(await off_loop(lambda: state_changes(before, variables.get("stat_data"), "script",
                                                                 turn=turn if isinstance(turn, int) else None)))
        outcome = await ctx.ledger.commit(CommitRequest(
            entry.id, expected_revision, "card", variables, fingerprint, source, operation_id=operation_id,
            meta=meta, result=result, facts=tuple(ended.records), changes=changes))
        if not outcome.replayed:
            ctx.verifier.recorded(entry, expected_revision, outcome.revision, fingerprint=fingerprint,
                                  key=outcome.version_key)
            await ended.committed(outcome, ctx.usage)
        stored = outcome.result if isinstance(outcome.result, dict) else result
        return dict(stored)

    async def _bound_head(self, binding: Binding) -> tuple[Entry, Head, VersionRecord | None]:
        """The bound resource, writable and checked against history, with its head and version."""
        found = await self._ctx.catalog.entry_with_head(binding.resource_id)
        seen = found[1] if found is not None else None
        if found is None or seen is None:
            raise read_only("the bound resource is gone")
        entry, (head, version) = found[0], seen
        entry.require_writable()
        await self._ctx.verifier.check(entry, None)
        return entry, head, version

    async def _still_bound(self, binding: Binding, grant: CardGrant, evidence: Evidence, session_lease: Lease,
                           signal: Signal | None) -> None:
        """The last await before a card write's commit: the second look at the scope, then,
        synchronously, the caller, the service, the grant, the session and the binding."""
        final = await self._evidence(binding)
        if final.message_id != evidence.message_id or final.fingerprint != evidence.fingerprint:
            raise read_only("the scope's message changed")
        check_signal(signal)
        self._ctx.alive()
        if grant.check_current() is not True or binding.grant_lease() is not True:
            raise _denied("the card's grant was revoked")
        if session_lease() is not True or final.check_current() is not True:
            raise read_only("the session changed before the card write")
        if self._live.get(binding.capability) is not binding:
            raise _denied("the card binding was revoked")

    async def _evidence(self, binding: Binding) -> Evidence:
        """The bound scope's evidence now; the binding must still stand on the scope it was made
        on: a message's with the session's selection and the playthrough's report it was bound
        under, an initial scope's with the same opening."""
        scope = binding.scope
        evidence = await resolve(self._ctx, scope)
        if not evidence.writable_head:
            raise read_only("the scope is no longer writable")
        if scope.mode is None:
            assert binding.scope_lease is not None
            if binding.scope_lease() is not True or evidence.selection != binding.selection:
                raise read_only("the session's selection or the playthrough changed since the card bound it")
        if scope.mode == "initial":
            assert binding.scope_lease is not None
            if binding.scope_lease() is not True or evidence.check_current() is not True \
                    or not json_equal(evidence.initial_source, binding.initial_source):
                raise read_only("the session's opening changed since the card bound it")
            active = await self._active(scope, evidence)
            if [entry.id for entry in active] != [binding.resource_id]:
                raise read_only("the session's opening resource changed since the card bound it")
        return evidence


def _check_identity(identity: Any, scope: CardScope) -> None:
    if not isinstance(identity, dict) or set(identity) != {"version", "sha256", "scope"} \
            or identity.get("version") != 1 or type(identity.get("version")) is not int \
            or not isinstance(identity.get("sha256"), str) or not HEX64.match(identity["sha256"]) \
            or not json_equal(identity.get("scope"), scope.raw):
        raise MvuError(Code.SCOPE, "sourceIdentity is {version: 1, sha256: <64 hex>, scope: <this scope>}",
                       field="sourceIdentity")


def _candidate(operation: str, value: Any, current: JsonValue) -> dict[str, Any]:
    """The state after a card write, checked by the source (all or nothing; every operation of a
    patch within one allowance)."""
    if operation == "replace":
        return edited_envelope(edit_content(value), current, now_ms=now_ms())
    if not isinstance(value, list):
        raise MvuError(Code.PARSE, "a patch is a JSON Patch array")
    envelope = private_envelope(current)
    declared = DeclaredSchema.of(envelope, now_ms(), allowance=Allowance("the card write's declaration work"))
    commands = parse_commands(f"<JSONPatch>{json.dumps(value, ensure_ascii=False)}</JSONPatch>")
    result = run_commands(envelope, commands, declared, declared.check if declared is not None else None)
    if result.diagnostics:
        first = result.diagnostics[0]
        raise MvuError(str(first.get("code") or Code.PARSE.value), str(first.get("message")),
                       diagnostics=list(result.diagnostics))
    return dict(result.variables)


def _card_source(binding: Binding, version: VersionRecord | None,
                 evidence: Evidence) -> tuple[dict[str, JsonValue], dict[str, JsonValue]]:
    meta: dict[str, JsonValue] = {"configRevision": None}
    if binding.initial_source is not None:
        return {**binding.initial_source, "manual": True, "card": True, "initial": True}, meta
    base = {k: v for k, v in (version.source if version is not None else {}).items() if k not in ("initial",
                                                                                                   "inherited")}
    if evidence.fingerprint is not None:
        meta["sourceFingerprint"] = evidence.fingerprint
    return {**base, "manual": True, "card": True}, meta
