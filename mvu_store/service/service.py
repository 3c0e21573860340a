"""MvuService: the host-facing state source (DIGEST I, F-6, P, A, L).

Everything durable lives in the ledger; the service keeps only caches of immutable data
(definitions by hash, the parsed legacy file) and one lock per session. The lock orders the work
of one process on one session (ingest, checkpoint, selection, edits); across processes the
ledger decides: a reply's version key is unique per resource (a processed message is never
applied twice), every head move is a row-version compare-and-swap (a concurrent write is never
lost: the loser re-reads and runs again), and an instance id is derived from its template and
session identity (allocated exactly once: a second creator finds it).
"""

from __future__ import annotations

import asyncio
import builtins
import copy
import time
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from mvu_store.errors import Code, MvuError
from mvu_store.host import Host, Lease, SessionSnapshot
from mvu_store.jsonvalue import JsonValue, js_json, json_equal, sha256_hex
from mvu_store.lang import apply_update, contains_update
from mvu_store.ledger import Ledger
from mvu_store.ledger.records import CommitRequest, NewResource, VersionRecord
from mvu_store.service.branching import Branching, ServiceParts, Signal, check_before_commit, check_signal
from mvu_store.service.catalog import Catalog, Entry
from mvu_store.service.edits import edit_content, edited_envelope
from mvu_store.service.facts import Facts
from mvu_store.service.identity import character_template_id, instance_id, session_identity
from mvu_store.service.initial import DeclaredSchema
from mvu_store.service.legacy import CAPABILITIES, LegacyResource
from mvu_store.service.models import (
    RESOURCE_ID,
    CharacterDefinition,
    CheckpointInfo,
    HistoryEntry,
    IngestReport,
    ManagementReceipt,
    ResourceConfig,
    Scope,
    SelectionResult,
    StateRecord,
    TemplateRecord,
    TurnOutcome,
    UpdateReceipt,
    check_operation_id,
    check_revision,
    check_session_id,
    parse_input,
    parse_scope,
    shown,
)
from mvu_store.service.templates import (
    configured_definition,
    discovered_definition,
    instance_definition,
    template_record,
)
from mvu_store.service.turns import Reply, allocation_boundary, replies, turn_running, verify_recorded
from mvu_store.service.usage import Decision, Dispose, Observer, Usage, UsageHandler
from mvu_store.service.validation import validate_config

T = TypeVar("T")

# Commit attempts for one reply or edit under concurrent writers: each conflict means another
# writer moved the head, so the work is redone on the new head; this bounds a livelock.
_CAS_ATTEMPTS = 16
# Why a record's content cannot be read now (P-2, I-3); the management list still shows the record.
_HISTORY_REFUSALS = frozenset({Code.HISTORY_UNAVAILABLE.value, Code.HISTORY_CHANGED.value,
                               Code.SESSION_IDENTITY.value})
# Version kinds whose source names a durable message to check against the session (P-2).
_AUDITED_KINDS = frozenset({"reply", "failed", "card", "initial", "inherited"})
# Failures of the store itself: nothing is recorded, the reply stays unprocessed for a retry. A
# full ledger is one of them: going over the budget keeps the previous content *and revision*
# (P-4), which a failed receipt (it claims a revision) would not.
_UNRECORDED = frozenset({Code.STORAGE_BUSY.value, Code.DISPOSED.value, Code.STORAGE_CORRUPT.value,
                         Code.STORAGE_LIMIT.value, Code.USAGE_CANCELLED.value, Code.SESSION_LEASE.value})


def _now_ms() -> int:
    return int(time.time() * 1000)


class MvuService:
    """The state source a host calls. All methods are async and take keyword arguments only."""

    protocol_version = 1

    def __init__(
        self, *, ledger: Ledger, host: Host, resources: Sequence[ResourceConfig | dict[str, Any]] = ()
    ) -> None:
        configs = [parse_input(ResourceConfig, resource, Code.CONFIG) for resource in resources]
        ids = [config.id for config in configs]
        if len(set(ids)) != len(ids):
            raise MvuError(Code.CONFIG, "duplicate resource id in the configuration")
        self._ledger = ledger
        self._host = host
        self._catalog = Catalog(ledger)
        self._configs = configs
        self._shared_ready = False
        # One lock per session in use; a lock nobody holds or awaits is dropped with its last user.
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._templates_lock = asyncio.Lock()
        self._disposed = False
        self._usage = Usage()
        self._branching = Branching(ServiceParts(
            ledger=ledger, host=host, locked=self._locked, durable=self._durable,
            ensure_instances=self._ensure_instances, verify=self._verify, lease=self._session_lease,
            alive=self._alive, ingest=lambda session_id, snapshot, signal, lease: self._ingest(
                session_id, snapshot, signal=signal, lease=lease)))

    # -- lifecycle ------------------------------------------------------------------------------

    async def close(self) -> None:
        """Refuse further calls (``MVU_DISPOSED``); the ledger and host stay the caller's."""
        self._disposed = True

    def _alive(self) -> None:
        if self._disposed:
            raise MvuError(Code.DISPOSED, "the service was closed")

    async def _locked(self, session_id: str, work: Callable[[], Awaitable[T]]) -> T:
        lock = self._locks.get(session_id)
        if lock is None:
            lock = self._locks[session_id] = asyncio.Lock()
        async with lock:
            self._alive()
            return await work()

    @staticmethod
    def validate_config(config: Any) -> bool:
        """Check a ``mvu-state`` assembly configuration (DIGEST A-3); ``MVU_CONFIG`` if unsupported."""
        return validate_config(config)

    # -- usage policy and observers (I-8, A-3, A-4) ----------------------------------------------

    def register_usage(self, handler: UsageHandler, *, provider_id: str | None = None) -> Dispose:
        """Register a trusted usage handler; the returned callable removes it. While a
        ``dsh-memory-manager`` handler is registered, sources are managed: nothing runs without
        its explicit decision. Registering or removing one cancels pending decisions."""
        self._alive()
        return self._usage.register(handler, provider_id)

    def observe(self, listener: Observer) -> Dispose:
        """Receive every fact after it is written (outside any transaction); returns a disposer."""
        self._alive()
        return self._usage.observe(listener)

    # -- seeds: forks, swipes, retries (F-1 ... F-7) --------------------------------------------

    async def capture_session_seed(self, *, session_id: str, kind: str, at_event_id: int,
                                   prefix_end_event_id: int | None = None, target_session_id: str | None = None,
                                   signal: Signal | None = None) -> str | None:
        """Freeze the state a branch starts from, before the host creates it; returns the ticket
        (None when the session has no state)."""
        self._alive()
        check_session_id(session_id)
        return await self._branching.capture(session_id=session_id, kind=kind, at_event_id=at_event_id,
                                             prefix_end_event_id=prefix_end_event_id,
                                             target_session_id=target_session_id, signal=signal)

    async def install_session_seed(self, *, ticket: str, session_id: str,
                                   signal: Signal | None = None) -> builtins.list[str]:
        """Install a captured seed into the child the host created; returns the child's instance
        ids. The same ticket to the same child is a replay; any other reuse ``MVU_SEED_CONFLICT``."""
        self._alive()
        check_session_id(session_id)
        return await self._branching.install(ticket=ticket, session_id=session_id, signal=signal)

    async def _session_lease(self, session_id: str) -> Lease:
        """A host session lease, valid now (else ``MVU_SESSION_LEASE``)."""
        try:
            lease = await self._host.capture_session_lease(session_id)
        except MvuError as error:
            if error.code != Code.MISSING:
                raise
            raise MvuError(Code.SESSION_IDENTITY, f"the host has no durable session {session_id!r}",
                           session_id=session_id) from None
        if not callable(lease) or lease() is not True:
            raise MvuError(Code.SESSION_LEASE, "a controlled session mutation lease is required",
                           session_id=session_id)
        return lease

    # -- discovery and selection (I-1 ... I-7) -------------------------------------------------

    async def discover(self, *, definition: CharacterDefinition | dict[str, Any],
                       session_id: str | None = None, signal: Signal | None = None) -> TemplateRecord:
        """Register (or refresh) the template of a card the host discovered.

        Native by default, no wildcard access, nothing executed. A changed card replaces the
        template for future instances only; a card that now fails never replaces a healthy one.
        """
        self._alive()
        check_signal(signal)
        card = parse_input(CharacterDefinition, definition, Code.CONFIG)
        if session_id is not None:
            check_session_id(session_id)
        template_id = character_template_id(card.character_id)
        async with self._templates_lock:
            existing = await self._ledger.template(template_id)
            if isinstance(existing, dict) and (existing.get("discovered") is not True
                                               or existing.get("characterId") != card.character_id):
                raise MvuError(Code.ID_CONFLICT, f"{template_id} is a configured resource, not this card",
                               id=template_id)
            sessions = list(existing.get("sessionIds") or []) if isinstance(existing, dict) else []
            if session_id is not None and session_id not in sessions:
                sessions.append(session_id)
            fresh = discovered_definition(card, sessions)
            healthy = isinstance(existing, dict) and "sourceError" not in existing
            rejected = fresh.get("sourceError") if healthy else None
            if rejected is not None:
                assert isinstance(existing, dict)
                fresh = {**existing, "sessionIds": sessions}
            # Stored definitions come back with sorted keys: compare canonical texts, not key order.
            changed = not (isinstance(existing, dict) and json_equal(existing, fresh))
            if changed:
                await self._ledger.put_template(template_id, fresh)
            return template_record(fresh, changed=changed, rejected=rejected)

    async def select_character(self, *, session_id: str, character_id: str | None,
                               signal: Signal | None = None) -> SelectionResult:
        """Select (or, with None, unselect) a discovered card for a session (I-5).

        The selection persists an activation boundary at the session's current end: replies
        from before it are never applied to the card. Reselecting the selected card changes
        nothing; switching back restores the session's original instance, from now on.
        """
        self._alive()
        check_signal(signal)
        check_session_id(session_id)
        template_id = None
        if character_id is not None:
            if not isinstance(character_id, str) or not character_id:
                raise MvuError(Code.CONFIG, "character_id must be a non-empty string or None")
            template_id = character_template_id(character_id)
            template = await self._ledger.template(template_id)
            if not isinstance(template, dict) or template.get("discovered") is not True:
                raise MvuError(Code.MISSING, f"character {character_id!r} was not discovered", id=template_id)

        async def work() -> SelectionResult:
            lease = await self._session_lease(session_id)
            snapshot, identity = await self._durable(session_id)
            selected, previous = await self._ledger.selection(session_id)
            boundary = snapshot.last_seq + 1
            if not (selected and previous == template_id):
                if template_id is not None and not await self._ledger.resource(instance_id(template_id, identity)):
                    # Refused before anything is stored: a refused selection must not stick (L-1, F-5).
                    self._check_allocatable(template_id, snapshot, await self._catalog.legacy())
                try:
                    # Replies of the outgoing character are applied before its boundary moves.
                    await self._ingest(session_id, snapshot, signal=signal, lease=lease)
                except MvuError as error:
                    # An outgoing selection that could never allocate has nothing to apply:
                    # switching away from it (or unselecting) must stay possible.
                    if error.code not in (Code.MIGRATION_REQUIRED, Code.SEED_REQUIRED):
                        raise
                self._check_lease(lease, signal)
                await self._ledger.write(lambda tx: self._select(tx, session_id, template_id, identity, boundary))
            instances = await self._ensure_instances(session_id, snapshot)
            chosen = next((entry for entry in instances if entry.row and entry.row.template_id == template_id), None)
            boundaries = await self._ledger.activations(session_id)
            return SelectionResult(session_id=session_id, template_id=template_id,
                                   instance_id=chosen.id if chosen else None,
                                   boundary=boundaries.get(chosen.id) if chosen else None)

        return await self._locked(session_id, work)

    def _select(self, tx: Any, session_id: str, template_id: str | None, identity: dict[str, JsonValue],
                boundary: int) -> None:
        self._ledger.set_selection(tx, session_id, template_id)
        if template_id is None:
            return
        self._ledger.set_activation(tx, template_id, session_id, boundary)
        existing = instance_id(template_id, identity)
        if self._ledger.resource_exists(tx, existing):
            self._ledger.set_activation(tx, existing, session_id, boundary)

    async def _active_templates(self, session_id: str) -> list[dict[str, Any]]:
        """The templates this session instantiates: its selected card, and configured templates
        open to it (``'*'`` or its id) whose character, if any, is the selected one."""
        selected, template_id = await self._ledger.selection(session_id)
        templates: list[dict[str, Any]] = []
        card = await self._ledger.template(template_id) if selected and template_id else None
        if isinstance(card, dict) and card.get("discovered") is True:
            templates.append(card)
        for config in self._configs:
            if config.sharing == "shared" or not any(item in ("*", session_id) for item in config.session_ids):
                continue
            if config.character_id is not None and (not isinstance(card, dict)
                                                    or card.get("characterId") != config.character_id):
                continue
            source = await self._ledger.template(character_template_id(config.character_id)) \
                if config.character_id is not None else None
            templates.append(configured_definition(config, source))
        return templates

    async def _ensure_instances(self, session_id: str, snapshot: SessionSnapshot) -> list[Entry]:
        """The session's instances, allocating the missing ones exactly once (I-2, I-3, F-5)."""
        if await self._ledger.seed_pending(session_id):
            raise MvuError(Code.SEED_PENDING, "state inheritance must finish before this session can use variables",
                           session_id=session_id)
        rows = await self._ledger.resources(session_id=session_id, kinds=("instance",))
        templates = await self._active_templates(session_id)
        if not templates:
            return [await self._catalog.entry_of(row) for row in rows]
        identity = session_identity(snapshot, session_id)
        for row in rows:
            if not json_equal({"sessionId": row.session_id, "createdAt": row.session_created_at}, identity):
                raise MvuError(Code.SESSION_IDENTITY, f"session {session_id!r} was reused for another durable identity",
                               session_id=session_id, id=row.id)
        known = {row.id for row in rows}
        # Read only when an instance is missing: usually every one exists already.
        legacy: dict[str, LegacyResource] | None = None
        boundaries: dict[str, int] = {}
        for template in templates:
            resource_id = instance_id(template["id"], identity)
            if resource_id in known:
                continue
            if legacy is None:
                legacy = await self._catalog.legacy()
                boundaries = await self._ledger.activations(session_id)
            self._check_allocatable(template["id"], snapshot, legacy)
            boundary = boundaries.get(template["id"], allocation_boundary(snapshot))
            await self._create_instance(template, resource_id, identity, boundary)
            known.add(resource_id)
        if legacy is not None:  # something was allocated (here or by a concurrent writer)
            rows = await self._ledger.resources(session_id=session_id, kinds=("instance",))
        return [await self._catalog.entry_of(row) for row in rows]

    @staticmethod
    def _check_allocatable(template_id: str, snapshot: SessionSnapshot, legacy: dict[str, LegacyResource]) -> None:
        """A new instance of ``template_id`` may start in this session (L-1, F-5)."""
        old = legacy.get(template_id)
        if old is not None and old.binds(snapshot):
            raise MvuError(Code.MIGRATION_REQUIRED, "this session's state is in the legacy shared ledger: recover "
                                                    "it into a new playthrough explicitly", id=template_id,
                           session_id=snapshot.header.id)
        if snapshot.header.parent_session is not None:
            raise MvuError(Code.SEED_REQUIRED, "a fork child needs its frozen state inheritance (a seed ticket)",
                           session_id=snapshot.header.id, parent_session=snapshot.header.parent_session)

    async def _create_instance(self, template: dict[str, Any], resource_id: str, identity: dict[str, JsonValue],
                               boundary: int) -> None:
        session_id = str(identity["sessionId"])
        new = NewResource(
            id=resource_id, kind="instance", initial=template["initial"],
            definition=instance_definition(template, resource_id, identity), template_id=template["id"],
            session_id=session_id, session_created_at=identity["createdAt"],
            management_mode=template.get("managementMode") or "native",
        )
        if template.get("discovered") is not True:
            # A configured template is stored when first used, so an export carries it.
            await self._ledger.put_template(template["id"], template)

        def work(tx: Any) -> None:
            self._ledger.insert_resource(tx, new)
            self._ledger.set_activation(tx, resource_id, session_id, boundary)

        try:
            await self._ledger.write(work)
        except MvuError as error:
            if error.code != Code.ID_CONFLICT:
                raise
            # Another writer allocated it first: the same id means the same template and identity.

    async def _ensure_shared(self) -> None:
        """Create the configured shared resources once (their configured id is the state id, I-11)."""
        if self._shared_ready:
            return
        legacy = await self._catalog.legacy()
        for config in self._configs:
            if config.sharing != "shared":
                continue
            if config.id in legacy:
                raise MvuError(Code.MIGRATION_REQUIRED, f"{config.id} is legacy shared state: import it explicitly "
                                                        "before using this id", id=config.id)
            if await self._ledger.resource(config.id) is not None:
                continue  # A configuration change is not a reset.
            card = await self._ledger.template(character_template_id(config.character_id)) \
                if config.character_id is not None else None
            definition = configured_definition(config, card)
            new = NewResource(id=config.id, kind="shared", initial=definition["initial"],
                              definition={k: v for k, v in definition.items() if k != "initial"},
                              management_mode=config.management_mode)
            try:
                await self._ledger.create_resource(new)
            except MvuError as error:
                if error.code != Code.ID_CONFLICT:
                    raise
        self._shared_ready = True

    # -- the turn pipeline (F-6, P-1 ... P-5) --------------------------------------------------

    async def checkpoint(self, *, session_id: str, turn_start_seq: int,
                         signal: Signal | None = None) -> list[CheckpointInfo]:
        """Freeze the pre-turn baseline of the turn that starts at ``turn_start_seq`` (F-6).

        Completed turns not yet ingested are applied first, so the baseline is the state the
        turn really starts from. One checkpoint per resource and turn: asking again returns the
        first, unchanged.
        """
        self._alive()
        check_signal(signal)
        check_session_id(session_id)
        if isinstance(turn_start_seq, bool) or not isinstance(turn_start_seq, int) or turn_start_seq < 0:
            raise MvuError(Code.BASELINE_REQUIRED, "turn_start_seq must be the event id of a durable turn/start")

        async def work() -> list[CheckpointInfo]:
            lease = await self._session_lease(session_id)
            snapshot, _ = await self._durable(session_id)
            start = snapshot.event(turn_start_seq)
            turn = start.data.get("turn") if start is not None else None
            if start is None or start.type != "turn/start" or isinstance(turn, bool) or not isinstance(turn, int):
                raise MvuError(Code.BASELINE_REQUIRED, "a checkpoint needs a durable turn/start event",
                               session_id=session_id, seq=turn_start_seq)
            # The entries are listed once: applying replies never adds or removes a resource.
            entries = await self._session_entries(session_id, snapshot)
            await self._ingest(session_id, snapshot, before=turn_start_seq, signal=signal, lease=lease,
                               entries=entries)
            frozen = []
            for entry in entries:
                if not entry.takes_replies:
                    continue
                self._check_lease(lease, signal)
                record = await self._ledger.put_checkpoint(entry.id, session_id=session_id, turn=turn,
                                                           seq=turn_start_seq)
                frozen.append(CheckpointInfo(resource_id=entry.id, session_id=session_id, turn=turn, seq=record.seq,
                                             revision=record.revision, version_key=record.version_key))
            return frozen

        return await self._locked(session_id, work)

    async def ingest(self, *, session_id: str, signal: Signal | None = None) -> IngestReport:
        """Apply, in order, every completed turn of the session not yet processed (P-1 ... P-3)."""
        self._alive()
        check_signal(signal)
        check_session_id(session_id)

        async def work() -> IngestReport:
            lease = await self._session_lease(session_id)
            snapshot = await self._snapshot_of(session_id)
            if snapshot is None:
                raise MvuError(Code.SESSION_IDENTITY, f"the host has no durable session {session_id!r}",
                               session_id=session_id)
            return await self._ingest(session_id, snapshot, signal=signal, lease=lease)

        return await self._locked(session_id, work)

    async def _ingest(self, session_id: str, snapshot: SessionSnapshot | None, *, before: int | None = None,
                      signal: Signal | None = None, lease: Lease | None = None,
                      entries: builtins.list[Entry] | None = None) -> IngestReport:
        """Ingest the session's unprocessed completed turns (those ending before ``before``);
        ``entries`` are the session's, when the caller has just listed them."""
        report = IngestReport(session_id=session_id)
        if snapshot is None or snapshot.header.origin == "subagent":
            return report
        if entries is None:
            entries = await self._session_entries(session_id, snapshot)
        # Read after the instances are ensured: one allocated just now (here, or by a concurrent
        # selection) has its boundary in this map, so replies before it are never its to apply.
        boundaries = await self._ledger.activations(session_id)
        # After an explicit (un)selection only the active templates' instances take replies: an
        # unselected card's instance must not move while another card (or none) is selected (I-5).
        selected, _ = await self._ledger.selection(session_id)
        active = {template["id"] for template in await self._active_templates(session_id)} if selected else None
        ended = list(replies(snapshot))  # read once: only each resource's boundary differs
        for entry in entries:
            if not entry.takes_replies:
                continue
            if active is not None and entry.is_instance and entry.row is not None \
                    and entry.row.template_id not in active:
                continue
            versions = await self._ledger.versions(entry.id)
            await self._verify(entry, versions, {session_id: snapshot})
            recorded = {version.key: version for version in versions}
            for reply in ended:
                if not reply.after(boundaries.get(entry.id, 0)):
                    continue
                known = recorded.get(reply.key)
                if known is not None:
                    if known.fingerprint != reply.fingerprint:
                        raise MvuError(Code.HISTORY_CHANGED, "a recorded reply changed at its durable coordinates",
                                       id=entry.id, message_seq=reply.message.seq)
                    continue
                if not reply.completed or (before is not None and reply.end_seq >= before):
                    continue
                outcome, fact_error = await self._apply_reply(entry, reply, signal, lease)
                report.outcomes.append(outcome)
                if fact_error is not None:
                    report.fact_errors.append(fact_error)
        return report

    async def _apply_reply(self, entry: Entry, reply: Reply, signal: Signal | None = None,
                           lease: Lease | None = None) -> tuple[TurnOutcome, str | None]:
        """Run one reply's commands on the head and commit the result once, or a failed receipt."""
        if entry.is_instance and await self._ledger.checkpoint(
                entry.id, session_id=str(reply.source["sessionId"]), turn=reply.turn) is None:
            raise MvuError(Code.BASELINE_REQUIRED, "an instance needs the turn's persisted pre-turn checkpoint: "
                                                   "call checkpoint() at the turn's start", id=entry.id,
                           turn=reply.turn, turn_start_seq=reply.start_seq)
        facts = Facts(id=entry.id, eventId=reply.key, sessionId=reply.source["sessionId"], turn=reply.turn,
                      turnKind="human" if reply.human else "unknown", on="assistant_message_committed")
        facts.add("started")
        has_update = contains_update(reply.text)
        scope: dict[str, JsonValue] = {"authority": "local", "sessionId": reply.source["sessionId"]}
        baseline = await self._ledger.head(entry.id)
        try:
            decision = await self._usage.decide(
                "assistant_message_committed", resource_id=entry.id, scope=scope,
                # The original's key, and the Python spelling the issue names, for Python handlers.
                event={**reply.source, "text": reply.text, "containsMvuUpdate": has_update,
                       "contains_mvu_update": has_update},
                variables=baseline.variables, signal=signal)
        except MvuError as error:
            if error.code in _UNRECORDED:
                facts.add("failed", detail=error.code)
                await facts.write(self._ledger, self._usage)
                raise
            return await self._fail_reply(entry, reply, baseline.revision, baseline.variables, error, facts,
                                          signal, lease)
        run = has_update and decision.enabled
        if run:
            facts.add("triggered", configRevision=decision.config_revision)
        else:
            facts.add("skipped", detail="no-update" if decision.enabled else "usage-policy",
                      configRevision=decision.config_revision)
        head = baseline
        for attempt in range(_CAS_ATTEMPTS):
            if attempt:
                head = await self._ledger.head(entry.id)  # another writer moved it: run again on top
            variables, diagnostics, changed = head.variables, [], False
            try:
                if run:
                    result = apply_update(head.variables, reply.text, **self._schema_hooks(head.variables))
                    variables, changed = result.variables, result.changed
                    diagnostics = [dict(item) for item in result.diagnostics]
                self._check_decision(decision)
                self._check_lease(lease, signal)
                outcome = await self._ledger.commit(CommitRequest(
                    entry.id, head.revision, "reply", variables, reply.fingerprint, reply.source, key=reply.key,
                    meta={"sourceRevision": head.revision, "configRevision": decision.config_revision}))
            except MvuError as error:
                if error.code == Code.REVISION_CONFLICT:
                    continue
                if error.code in _UNRECORDED:
                    facts.add("failed", detail=error.code)
                    await facts.write(self._ledger, self._usage)
                    raise
                return await self._fail_reply(entry, reply, head.revision, head.variables, error, facts,
                                              signal, lease, decision)
            if outcome.replayed:
                return TurnOutcome(resource_id=entry.id, turn=reply.turn, message_seq=reply.message.seq,
                                   version_key=reply.key, status="replayed", revision=outcome.revision), None
            if changed:
                facts.add("applied", revision=outcome.revision, detail="state-committed",
                          configRevision=decision.config_revision)
            facts.add("completed", revision=outcome.revision, detail="state-committed",
                      configRevision=decision.config_revision)
            return TurnOutcome(resource_id=entry.id, turn=reply.turn, message_seq=reply.message.seq,
                               version_key=reply.key, status="committed" if run else "skipped",
                               revision=outcome.revision, changed=changed,
                               diagnostics=diagnostics), await facts.write(self._ledger, self._usage)
        raise MvuError(Code.REVISION_CONFLICT, "the resource kept changing while this reply was applied", id=entry.id)

    def _check_decision(self, decision: Decision) -> None:
        """Synchronously before a commit: the decision still stands and the service is open."""
        self._usage.check_epoch(decision)
        self._alive()

    async def _fail_reply(self, entry: Entry, reply: Reply, revision: int, baseline: JsonValue, error: MvuError,
                          facts: Facts, signal: Signal | None = None, lease: Lease | None = None,
                          decision: Decision | None = None) -> tuple[TurnOutcome, str | None]:
        """Save the poison receipt: the state unchanged, the reply never applied again (P-3)."""
        for _attempt in range(_CAS_ATTEMPTS):
            try:
                if decision is not None:
                    self._check_decision(decision)  # a receipt also consumes the reply: same rule
                self._check_lease(lease, signal)
            except MvuError as refusal:
                facts.add("failed", detail=refusal.code)
                await facts.write(self._ledger, self._usage)
                raise
            try:
                outcome = await self._ledger.commit(CommitRequest(
                    entry.id, revision, "failed", baseline, reply.fingerprint, reply.source, key=reply.key,
                    error=error.code))
                break
            except MvuError as refusal:
                if refusal.code != Code.REVISION_CONFLICT:
                    raise
                head = await self._ledger.head(entry.id)
                revision, baseline = head.revision, head.variables
        else:
            raise MvuError(Code.REVISION_CONFLICT, "the resource kept changing while a receipt was saved", id=entry.id)
        facts.add("failed", revision=outcome.revision, detail=error.code)
        return TurnOutcome(resource_id=entry.id, turn=reply.turn, message_seq=reply.message.seq,
                           version_key=reply.key, status="replayed" if outcome.replayed else "failed",
                           revision=outcome.revision, error=error.code), await facts.write(self._ledger, self._usage)

    @staticmethod
    def _schema_hooks(variables: JsonValue) -> dict[str, Any]:
        """The declared schema as the update language takes it: after every command, and for
        interpreter-v2 path creation; ``now_ms`` is this commit's clock."""
        declared = DeclaredSchema.of(variables, _now_ms())
        return {} if declared is None else {"check": declared.check, "validator": declared}

    # -- reads (A, A-2, A-6) -------------------------------------------------------------------

    async def list(self, *, scope: Scope | dict[str, Any], signal: Signal | None = None) -> builtins.list[StateRecord]:
        """Every record ``scope`` may read: a session's, or all for a local management scope."""
        self._alive()
        check_signal(signal)
        parsed = parse_scope(scope)
        await self._ensure_shared()
        if parsed.session_id is not None:
            session_id = parsed.session_id
            snapshot, entries = await self._locked(session_id, lambda: self._prepared_entries(session_id))
            known = {session_id: snapshot}  # one inspection serves every record of the session
            return [await self._record(entry, parsed, known) for entry in entries if entry.accessible(parsed)]
        # The management view lists every record, even one whose session's history broke: it
        # shows that record without content and with the refusal as its source error.
        return [await self._listed(entry, parsed) for entry in await self._catalog.entries()]

    async def _listed(self, entry: Entry, scope: Scope) -> StateRecord:
        try:
            return await self._record(entry, scope)
        except MvuError as error:
            if error.code not in _HISTORY_REFUSALS or entry.row is None:
                raise
            return StateRecord(id=entry.id, name=entry.name, scope=scope.to_json(), content=None,
                               revision=entry.row.revision, current_revision=entry.row.revision, historical=False,
                               version_key=entry.row.head_key, management_mode=self._actual_management_mode(),
                               stored_management_mode=entry.stored_management_mode,
                               template_id=entry.row.template_id, instance=entry.instance, source_error=error.code)

    async def read(self, *, id: str, scope: Scope | dict[str, Any], signal: Signal | None = None) -> StateRecord | None:
        """One record, current or historical (``message_id`` / ``end_event_id``); None if missing."""
        self._alive()
        check_signal(signal)
        parsed = parse_scope(scope)
        await self._ensure_shared()
        if not isinstance(id, str):
            raise MvuError(Code.MISSING, "id must be a string")
        blocked: MvuError | None = None
        known: dict[str, SessionSnapshot | None] = {}
        if parsed.session_id is not None:
            session_id = parsed.session_id
            try:
                known[session_id], _ = await self._locked(session_id, lambda: self._prepared_entries(session_id))
            except MvuError as error:
                # A session bound to legacy state allocates nothing, yet its legacy record stays
                # readable in its old scope: that read is the first step of a recovery (L-3).
                if error.code != Code.MIGRATION_REQUIRED:
                    raise
                blocked = error
        entry = await self._catalog.entry(id)
        if blocked is not None and (entry is None or entry.legacy is None):
            raise blocked
        if entry is None:
            return None
        entry.require_access(parsed)
        return await self._record(entry, parsed, known)

    async def _prepared_entries(self, session_id: str) -> tuple[SessionSnapshot | None, builtins.list[Entry]]:
        """A session's snapshot and resources, its instances allocated (reads allocate, as the original)."""
        snapshot = await self._snapshot_of(session_id)
        return snapshot, await self._session_entries(session_id, snapshot)

    async def _session_entries(self, session_id: str, snapshot: SessionSnapshot | None) -> builtins.list[Entry]:
        instances = await self._ensure_instances(session_id, snapshot) if snapshot is not None else None
        await self._ensure_shared()
        scope = Scope(session_id=session_id)
        return [entry for entry in await self._catalog.entries(session_id=session_id, instances=instances)
                if entry.accessible(scope)]

    async def _snapshot_of(self, session_id: str) -> SessionSnapshot | None:
        return await self._host.inspect(session_id)

    async def _durable(self, session_id: str) -> tuple[SessionSnapshot, dict[str, JsonValue]]:
        """A session the host has, with its durable identity (else ``MVU_SESSION_IDENTITY``)."""
        snapshot = await self._snapshot_of(session_id)
        identity = session_identity(snapshot, session_id)
        assert snapshot is not None
        return snapshot, identity

    async def _verify(self, entry: Entry, versions: builtins.list[VersionRecord],
                      known: dict[str, SessionSnapshot | None] | None = None) -> None:
        """Check the record against durable history: identity first, then every recorded reply
        (P-2, I-3). Missing or changed evidence blocks reads and ingest."""
        sessions = dict(known or {})

        async def session(session_id: str) -> SessionSnapshot | None:
            if session_id not in sessions:
                sessions[session_id] = await self._snapshot_of(session_id)
            return sessions[session_id]

        identity = entry.instance
        own: str | None = None
        if identity is not None:
            own = str(identity["sessionId"])
            current = session_identity(await session(own), own)
            if not json_equal(identity, current):
                raise MvuError(Code.SESSION_IDENTITY, "the instance's durable session identity changed", id=entry.id)
        for version in versions:
            if version.kind not in _AUDITED_KINDS or (version.source.get("manual") and not version.source.get("card")):
                continue
            # An ancestor's version, seen through lineage, is checked against this session's
            # copied prefix: the child stays verifiable on its own (F-1).
            session_id = own if version.inherited and own is not None else version.source.get("sessionId")
            if not isinstance(session_id, str):
                continue
            snapshot = await session(session_id)
            if snapshot is None:
                raise MvuError(Code.HISTORY_UNAVAILABLE, f"source session {session_id!r} is unavailable",
                               id=entry.id, session_id=session_id)
            fingerprint = version.meta.get("sourceFingerprint") or version.fingerprint
            verify_recorded(version.source, fingerprint if isinstance(fingerprint, str) else None, snapshot,
                            inherited=version.inherited)

    async def _record(self, entry: Entry, scope: Scope,
                      known: dict[str, SessionSnapshot | None] | None = None) -> StateRecord:
        """The record of ``entry`` in ``scope`` (A: the record shape; A-2: historical reads)."""
        common: dict[str, Any] = {
            "id": entry.id, "name": entry.name, "scope": scope.to_json(),
            "management_mode": self._actual_management_mode(),
            "stored_management_mode": entry.stored_management_mode,
            "source_error": entry.source_error,
        }
        if entry.legacy is not None:
            content, key = entry.legacy.current()
            return StateRecord(**common, content=content, revision=entry.revision, current_revision=entry.revision,
                               historical=scope.historical, version_key=key, legacy=True,
                               capabilities=dict(CAPABILITIES))
        assert entry.row is not None
        versions = await self._ledger.versions(entry.id)
        await self._verify(entry, versions, known)
        if entry.row.template_id is not None:
            common.update(template_id=entry.row.template_id, instance=entry.instance)
            seed = entry.row.meta.get("seed")
            if isinstance(seed, dict) and isinstance(seed.get("source"), dict):
                common["inherited_from"] = seed["source"]
        if entry.definition.get("discovered") is True:
            common["source"] = {"kind": "character", "characterId": entry.definition.get("characterId"),
                                "discovered": True}
        if not scope.historical:
            head = await self._ledger.head(entry.id)
            return StateRecord(**common, content=head.variables, revision=head.revision,
                               current_revision=head.revision, historical=False, version_key=head.version_key)
        version = self._historical_version(entry, versions, scope)
        if version is None:
            content = await self._ledger.blob(entry.row.initial_hash)
            return StateRecord(**common, content=content, revision=0, current_revision=entry.row.revision,
                               historical=True, version_key=None)
        return StateRecord(**common, content=await self._ledger.blob(version.variables_hash),
                           revision=version.revision, current_revision=entry.row.revision, historical=True,
                           version_key=version.key)

    @staticmethod
    def _own_version(entry: Entry, version: VersionRecord) -> bool:
        """An instance's own version belongs to its one session even when its source names
        another: an edit of an inherited reply keeps that reply's (the ancestor's) coordinates."""
        return entry.is_instance and not version.inherited and version.resource_id == entry.id

    @staticmethod
    def _historical_version(entry: Entry, versions: builtins.list[VersionRecord], scope: Scope) -> VersionRecord | None:
        """The version a historical scope names: by message id, or the last at an event id."""
        own = [version for version in versions
               if version.source.get("sessionId") == scope.session_id or (version.inherited and entry.is_instance)
               or MvuService._own_version(entry, version)]
        version: VersionRecord | None = None
        if scope.message_id is not None:
            version = next((v for v in reversed(own) if v.source.get("messageId") == scope.message_id), None)
            if version is None or (scope.end_event_id is not None
                                   and version.source.get("messageSeq") != scope.end_event_id):
                raise MvuError(Code.SCOPE, "the historical coordinates do not identify one source message",
                               id=entry.id)
            return version
        end = scope.end_event_id
        assert end is not None
        candidates = [v for v in own if isinstance(v.source.get("messageSeq"), int)
                      and v.source["messageSeq"] <= end
                      and (not v.source.get("manual") or v.source.get("card") or entry.is_instance)]
        if not candidates:
            return None
        exact = [v for v in candidates if v.source["messageSeq"] == end]
        if entry.is_instance and exact:
            return exact[-1]
        if entry.is_instance:
            return max(candidates, key=lambda v: (v.source["messageSeq"], v.revision))
        return candidates[-1]

    def _actual_management_mode(self) -> str:
        """Who manages execution now: the current registrations decide, not the stored preference (I-8)."""
        return self._usage.mode()

    async def history(self, *, id: str, scope: Scope | dict[str, Any], include_before: bool = False,
                      signal: Signal | None = None) -> builtins.list[HistoryEntry]:
        """The session's versions, successes and failures, oldest first (A-6)."""
        self._alive()
        check_signal(signal)
        parsed = parse_scope(scope)
        if not isinstance(include_before, bool):
            raise MvuError(Code.OPERATION, "include_before must be a boolean")
        await self._ensure_shared()
        entry = await self._catalog.entry(id) if isinstance(id, str) else None
        if entry is None:
            return []
        entry.require_access(parsed)
        if entry.legacy is not None:
            return [self._legacy_entry(version) for version in entry.legacy.versions
                    if parsed.session_id is None or (version.get("source") or {}).get("sessionId") == parsed.session_id]
        versions = await self._ledger.versions(entry.id)
        await self._verify(entry, versions)
        by_key = {version.key: version for version in versions}
        checkpoints = {(c.session_id, c.turn): c for c in await self._ledger.checkpoints(entry.id)} \
            if include_before else {}
        result = []
        for version in versions:
            if parsed.session_id is not None and version.source.get("sessionId") != parsed.session_id \
                    and not version.inherited and not self._own_version(entry, version):
                continue
            fields: dict[str, Any] = {}
            if include_before:
                before = await self._before(version, by_key, checkpoints)
                fields = {"before_available": before is not None, "before": before}
            result.append(HistoryEntry(
                key=version.key, kind=version.kind, revision=version.revision, source=version.source,
                variables=await self._ledger.blob(version.variables_hash), fingerprint=version.fingerprint,
                parent_key=version.parent_key, operation_id=version.operation_id, error=version.error,
                inherited=version.inherited or version.kind == "inherited", created_at=version.created_at, **fields))
        return result

    async def _before(self, version: VersionRecord, by_key: dict[str, VersionRecord],
                      checkpoints: dict[tuple[str, int], Any]) -> JsonValue:
        """``stat_data`` before a version, from its parent or its turn's checkpoint; None if unknown."""
        if version.inherited or version.kind == "inherited":
            return None
        parent = by_key.get(version.parent_key) if version.parent_key else None
        if parent is not None:
            variables = await self._ledger.blob(parent.variables_hash)
        else:
            turn = version.source.get("turn")
            checkpoint = checkpoints.get((str(version.source.get("sessionId")), turn)) \
                if isinstance(turn, int) and version.kind in ("reply", "failed") else None
            if checkpoint is None:
                return None
            variables = await self._ledger.blob(checkpoint.variables_hash)
        return variables.get("stat_data") if isinstance(variables, dict) else None

    @staticmethod
    def _legacy_entry(version: dict[str, Any]) -> HistoryEntry:
        source = version.get("source")
        return HistoryEntry(key=str(version.get("key")), kind="legacy", revision=int(version.get("revision") or 0),
                            source=source if isinstance(source, dict) else {}, variables=version.get("variables"),
                            fingerprint=version.get("fingerprint"), parent_key=version.get("parentKey"),
                            operation_id=version.get("operationId"), error=version.get("error"), created_at=0)

    async def facts(self, *, id: str, scope: Scope | dict[str, Any],
                    signal: Signal | None = None) -> builtins.list[dict[str, JsonValue]]:
        """This session's bounded, content-free trigger observations of one resource (A-4, A-5)."""
        self._alive()
        check_signal(signal)
        parsed = parse_scope(scope)
        await self._ensure_shared()
        entry = await self._catalog.entry(id) if isinstance(id, str) else None
        if entry is None:
            return []
        entry.require_access(parsed)
        records = await self._ledger.facts(session_id=parsed.session_id)
        return [record for record in records if isinstance(record, dict) and record.get("id") == id]

    # -- edits (A, L-3) ------------------------------------------------------------------------

    async def update(self, *, id: str, content: Any, expected_revision: int, operation_id: str,
                     scope: Scope | dict[str, Any], signal: Signal | None = None) -> UpdateReceipt:
        """A CAS edit of the current content; same operation id + same request replays the
        receipt, another request under it is refused. The source's declaration stays (trying to
        replace it is ``MVU_SCHEMA_CODE``) and validates the new ``stat_data`` exactly once."""
        self._alive()
        check_signal(signal)
        parsed = parse_scope(scope)
        check_operation_id(operation_id)
        check_revision(expected_revision)
        if parsed.historical:
            raise MvuError(Code.SCOPE, "historical scopes are read-only: re-read the current scope, then edit")
        entry = await self._writable(id, parsed)
        lease = await self._lease(entry)

        sent = edit_content(content)
        fingerprint = sha256_hex(js_json({"content": sent, "scope": parsed.to_json(),
                                          "expectedRevision": expected_revision}))

        async def work() -> UpdateReceipt:
            versions = await self._check_instance(entry, lease)
            head = await self._ledger.head(entry.id)
            variables = edited_envelope(sent, head.variables, now_ms=_now_ms())
            source, meta = self._edit_source(entry, parsed, operation_id, head.version_key, versions)
            result = {"id": entry.id, "type": "mvu-state", "content": variables, "revision": expected_revision + 1,
                      "scope": parsed.to_json(), "authority": "local"}
            facts = Facts(id=entry.id, eventId=operation_id, sessionId=parsed.session_id, on="manual_update")
            self._check_lease(lease, signal)
            outcome = await self._ledger.commit(CommitRequest(
                entry.id, expected_revision, "manual", variables, fingerprint, source, operation_id=operation_id,
                meta=meta, result=result))
            stored = outcome.result if isinstance(outcome.result, dict) else result
            if not outcome.replayed:
                facts.add("started")
                facts.add("triggered")
                before = head.variables.get("stat_data") if isinstance(head.variables, dict) else None
                # The stored head has sorted keys; key order alone is no change of state.
                if not json_equal(before, variables["stat_data"]):
                    facts.add("applied", revision=outcome.revision, detail="state-committed")
                facts.add("completed", revision=outcome.revision, detail="manual-update")
                await facts.write(self._ledger, self._usage)
            stored_scope = stored.get("scope")
            return UpdateReceipt(id=entry.id, content=stored.get("content"), revision=outcome.revision,
                                 scope=stored_scope if isinstance(stored_scope, dict) else parsed.to_json(),
                                 replayed=outcome.replayed)

        return await self._edit(entry, work)

    @staticmethod
    def _edit_source(entry: Entry, scope: Scope, operation_id: str, head_key: str | None,
                     versions: builtins.list[VersionRecord]) -> tuple[dict[str, JsonValue], dict[str, JsonValue]]:
        """The manual version's source, as the original writes it: the reply it edits, or a
        ``manual:<operation id>`` coordinate."""
        previous = next((v for v in versions if v.key == head_key), None)
        seq = previous.source.get("messageSeq") if previous is not None else None
        if entry.is_instance and previous is not None and isinstance(seq, int) and seq >= 0:
            source = {k: v for k, v in previous.source.items() if k not in ("initial", "inherited")}
            source.update(manual=True, card=False)
            fingerprint = previous.meta.get("sourceFingerprint") or previous.fingerprint
            return source, ({"sourceFingerprint": fingerprint} if isinstance(fingerprint, str) else {})
        own = [v.source.get("messageSeq") for v in versions if v.source.get("sessionId") == scope.session_id]
        last = next((s for s in reversed(own) if isinstance(s, int)), -1)
        manual: dict[str, JsonValue] = {}
        if scope.session_id is not None:
            manual["sessionId"] = scope.session_id
        manual.update(messageId=f"manual:{operation_id}", messageSeq=last, manual=True)
        return manual, {}

    async def set_management_mode(self, *, id: str, mode: str, expected_revision: int, operation_id: str,
                                  scope: Scope | dict[str, Any], signal: Signal | None = None) -> ManagementReceipt:
        """Store the management-mode preference under CAS + idempotency (I-8)."""
        self._alive()
        check_signal(signal)
        parsed = parse_scope(scope)
        if mode not in ("native", "managed"):
            raise MvuError(Code.CONFIG, "mode is 'native' or 'managed'")
        if not isinstance(operation_id, str) or not operation_id or len(operation_id) > 200:
            raise MvuError(Code.CONFIG, "an explicit operation_id is required")
        check_revision(expected_revision)
        if parsed.historical:
            raise MvuError(Code.SCOPE, "historical scopes are read-only")
        entry = await self._writable(id, parsed, allow_source_error=True)
        lease = await self._lease(entry)

        async def work() -> ManagementReceipt:
            await self._check_instance(entry, lease)
            fingerprint = sha256_hex(js_json({"mode": mode, "expectedRevision": expected_revision,
                                              "scope": parsed.to_json()}))
            self._check_lease(lease, signal)
            outcome = await self._ledger.set_management_mode(entry.id, mode=mode, expected_revision=expected_revision,
                                                             operation_id=operation_id, fingerprint=fingerprint)
            stored = outcome.result if isinstance(outcome.result, dict) else {}
            return ManagementReceipt(id=entry.id, management_mode=self._actual_management_mode(),
                                     stored_management_mode=str(stored.get("managementMode", mode)),
                                     revision=outcome.revision, replayed=outcome.replayed)

        return await self._edit(entry, work)

    async def copy(self, *, id: str, new_id: str, scope: Scope | dict[str, Any],
                   signal: Signal | None = None) -> StateRecord:
        """A new shared resource holding the current content (I-11): keeps the access scope; not a
        fork, so no history, schema transform or policy comes along. An existing id is refused."""
        self._alive()
        check_signal(signal)
        parsed = parse_scope(scope)
        if not isinstance(new_id, str) or not RESOURCE_ID.match(new_id) or new_id.startswith(
                ("mvu:instance-", "mvu:character-")):
            raise MvuError(Code.ID_CONFLICT, "a copy needs a new 'mvu:' resource id")
        entry = await self._writable(id, parsed)
        if await self._catalog.entry(new_id) is not None:
            raise MvuError(Code.ID_CONFLICT, f"{new_id} already exists", id=new_id)
        lease = await self._lease(entry)

        async def work() -> StateRecord:
            await self._check_instance(entry, lease)
            assert entry.row is not None
            head = await self._ledger.head(entry.id)
            definition = {k: copy.deepcopy(v) for k, v in entry.definition.items()
                          if k not in ("instance", "templateId", "discovered", "characterId")}
            definition.update(id=new_id, sharing="shared", managementMode="native")
            self._check_lease(lease, signal)
            await self._ledger.create_resource(NewResource(
                id=new_id, kind="copy", initial=head.variables, definition=definition, management_mode="native",
                meta={"copiedFrom": {"id": entry.id, "revision": head.revision}}))
            created = await self._catalog.entry(new_id)
            assert created is not None
            return await self._record(created, Scope(session_id=parsed.session_id))

        return await self._edit(entry, work)

    async def _writable(self, resource_id: Any, scope: Scope, *, allow_source_error: bool = False) -> Entry:
        await self._ensure_shared()  # a configured shared resource exists before anyone read it
        entry = await self._catalog.entry(resource_id) if isinstance(resource_id, str) else None
        if entry is None:
            raise MvuError(Code.MISSING, f"no resource {shown(resource_id)!r}", id=shown(resource_id))
        entry.require_access(scope)
        if not (allow_source_error and entry.legacy is None and entry.source_error is not None):
            entry.require_writable()
        return entry

    async def _lease(self, entry: Entry) -> Lease | None:
        """An instance's session lease, taken before any work is queued (A-1)."""
        identity = entry.instance
        return None if identity is None else await self._session_lease(str(identity["sessionId"]))

    async def _check_instance(self, entry: Entry, lease: Lease | None) -> builtins.list[VersionRecord]:
        """Before an edit: the record's history still checks out (writes are blocked where reads
        are, P-2; for an instance that includes its session identity) and no turn of its session
        is running. Returns the verified history."""
        self._check_lease(lease)
        identity = entry.instance
        snapshot = await self._snapshot_of(str(identity["sessionId"])) if identity is not None else None
        versions = await self._ledger.versions(entry.id)
        await self._verify(entry, versions, {str(identity["sessionId"]): snapshot} if identity is not None else None)
        if snapshot is not None and turn_running(snapshot):
            raise MvuError(Code.READ_ONLY, "the instance cannot be edited while its turn is running", id=entry.id)
        return versions

    def _check_lease(self, lease: Lease | None, signal: Signal | None = None) -> None:
        """After the last await, before the commit is queued: the caller still wants it, the
        service is still open and the session is still the one inspected (A-1)."""
        check_before_commit(signal, self._alive, lease)

    async def _edit(self, entry: Entry, work: Callable[[], Awaitable[T]]) -> T:
        identity = entry.instance
        if identity is None:
            self._alive()
            return await work()
        return await self._locked(str(identity["sessionId"]), work)

