"""MvuService: the host-facing state source (DIGEST I, F-6, P, A, L).

The front door only: it checks that the service is open and hands each call to the part whose
one job it is, all sharing one :class:`~mvu_store.service.context.ServiceContext` (each through
the protocol of what it reads, in :mod:`~mvu_store.service.context`):

- :mod:`allocation`: templates, selections, instances;
- :mod:`pipeline`: checkpoints and ingest, a reply in stages (decide, parse, process, apply, commit);
- :mod:`reads`: records, history pages, facts, checkpoint states (pure: no row written);
- :mod:`editing`: manual edits, management-mode preferences, copies;
- :mod:`branching`: seeds for forks, swipes and retries;
- :mod:`verification` with :mod:`session_cache`: recorded history checked against the host once,
  then only what is new.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.host import Host, Lease
from mvu_store.jsonvalue import JsonValue
from mvu_store.lang.macros import Names
from mvu_store.ledger import Ledger
from mvu_store.processor.port import CardRegistry, CommandProcessor, Registered
from mvu_store.processor.registry import CardProcessors
from mvu_store.service.allocation import Allocation
from mvu_store.service.branching import Branching
from mvu_store.service.card_scripts import Cards
from mvu_store.service.change_reads import ChangeReads
from mvu_store.service.context import ServiceContext, Signal
from mvu_store.service.editing import Editing
from mvu_store.service.models import (
    Changes,
    CharacterDefinition,
    CheckpointInfo,
    CheckpointState,
    HistoryEntry,
    IngestReport,
    ManagementReceipt,
    RecordJson,
    ResourceConfig,
    Scope,
    SelectionResult,
    StateDiff,
    StateRecord,
    TemplateRecord,
    UpdateReceipt,
    check_session_id,
    parse_input,
)
from mvu_store.service.observed_requests import observe_request
from mvu_store.service.pipeline import Pipeline
from mvu_store.service.prompting import (
    ManagementDefaults,
    PromptDependency,
    PromptReads,
    RenderedPrompt,
    StateAssembly,
)
from mvu_store.service.reads import Reads
from mvu_store.service.session_cache import DEFAULT_MEMORY_BYTES as DEFAULT_SESSION_MEMORY_BYTES
from mvu_store.service.session_cache import MIN_MEMORY_BYTES as MIN_SESSION_MEMORY_BYTES
from mvu_store.service.usage import Dispose, Observer, UsageHandler
from mvu_store.service.validation import validate_config


class MvuService:
    """The state source a host calls. All methods are async and take keyword arguments only."""

    protocol_version = 1

    def __init__(self, *, ledger: Ledger, host: Host, resources: Sequence[ResourceConfig | dict[str, Any]] = (),
                 processor: CommandProcessor | None = None,
                 session_memory_bytes: int = DEFAULT_SESSION_MEMORY_BYTES) -> None:
        if type(session_memory_bytes) is not int or session_memory_bytes < MIN_SESSION_MEMORY_BYTES:
            raise MvuError(Code.CONFIG, f"session_memory_bytes must be an integer of at least "
                                        f"{MIN_SESSION_MEMORY_BYTES} (1 MiB)")
        configs = [parse_input(ResourceConfig, resource, Code.CONFIG) for resource in resources]
        ids = [config.id for config in configs]
        if len(set(ids)) != len(ids):
            raise MvuError(Code.CONFIG, "duplicate resource id in the configuration")
        if processor is not None and not isinstance(processor, CommandProcessor):
            raise MvuError(Code.CONFIG, "processor must have an async process(commands, turn) method")
        self._ctx = ctx = ServiceContext.open(ledger=ledger, host=host, configs=configs,
                                              processor=processor if processor is not None else CardProcessors(),
                                              session_memory_bytes=session_memory_bytes)
        self._allocation = Allocation(ctx)
        self._pipeline = Pipeline(ctx, self._allocation)
        self._reads = Reads(ctx, self._allocation)
        self._changes = ChangeReads(ctx, self._allocation, self._reads)
        self._editing = Editing(ctx, self._allocation, self._reads)
        self._branching = Branching(ctx, self._allocation, self._pipeline)
        self._prompts = PromptReads(ctx, self._reads)
        self._cards = Cards(ctx, self._allocation, self._reads)

    # -- lifecycle ------------------------------------------------------------------------------

    async def close(self) -> None:
        """Refuse further calls (``MVU_DISPOSED``); the ledger and host stay the caller's."""
        self._ctx.close()
        if isinstance(self._ctx.processor, CardRegistry):
            self._ctx.processor.dispose()  # every registration ends; running scripts are interrupted

    @staticmethod
    def validate_config(config: Any) -> bool:
        """Check a ``mvu-state`` assembly configuration (DIGEST A-3); ``MVU_CONFIG`` if unsupported."""
        return validate_config(config)

    # -- usage policy and observers (I-8, A-3, A-4) ----------------------------------------------

    def register_usage(self, handler: UsageHandler, *, provider_id: str | None = None) -> Dispose:
        """Register a trusted usage handler; the returned callable removes it. While a
        ``dsh-memory-manager`` handler is registered, sources are managed: nothing runs without
        its explicit decision. Registering or removing one cancels pending decisions."""
        self._ctx.alive()
        return self._ctx.usage.register(handler, provider_id)

    def observe(self, listener: Observer) -> Dispose:
        """Receive every fact after it is written (outside any transaction); returns a disposer."""
        self._ctx.alive()
        return self._ctx.usage.observe(listener)

    # -- card command processors -----------------------------------------------------------------

    async def register_command_processor(self, *, id: str, source: str, lease: Lease | None = None) -> Registered:
        """Run ``source`` (a command processor declaration) before each commit of resource ``id``,
        replacing its current one; returns the receipt and a disposer that removes this
        registration only (never a newer one). ``MVU_MISSING`` for an unknown id. ``lease``: the
        host's word that ``source`` is still the one to run (True while it is), checked before
        each reply, after the script answers and before the commit; once it no longer holds the
        registration ends, and a reply it was processing is cancelled (``MVU_USAGE_CANCELLED``,
        nothing recorded, the reply left for a retry)."""
        ctx = self._ctx
        ctx.alive()
        if not isinstance(ctx.processor, CardRegistry):
            raise MvuError(Code.CONFIG, "this service was given its own command processor")
        configured = isinstance(id, str) and any(config.id == id for config in ctx.configs)
        if not configured and (not isinstance(id, str) or await ctx.catalog.entry(id) is None):
            raise MvuError(Code.MISSING, "no such resource", id=id if isinstance(id, str) else None)
        return await ctx.processor.register(id, source, lease=lease)

    # -- templates and selection (I-1 ... I-7) ----------------------------------------------------

    async def discover(self, *, definition: CharacterDefinition | dict[str, Any],
                       session_id: str | None = None, signal: Signal | None = None) -> TemplateRecord:
        """Register (or refresh) the template of a card the host discovered.

        Native by default, no wildcard access, nothing executed. A changed card replaces the
        template for future instances only; a card that now fails never replaces a healthy one.
        """
        self._ctx.alive()
        return await self._allocation.discover(definition, session_id, signal)

    async def select_character(self, *, session_id: str, character_id: str | None,
                               signal: Signal | None = None,
                               names: Names | dict[str, Any] | None = None,
                               greeting_index: int | None = None) -> SelectionResult:
        """Select (or, with None, unselect) a discovered card for a session (I-5).

        The selection persists an activation boundary at the session's current end: replies
        from before it are never applied to the card. Reselecting the selected card changes
        nothing; switching back restores the session's original instance, from now on.
        ``names`` (``{user?, char?}``, over the session's ``session/names``) go into the
        ``{{user}}`` / ``{{char}}`` macros of a newly allocated instance's initial data.
        ``greeting_index`` chooses the greeting the session opens with (docs/cards.md): each
        greeting has its own instance, initialised by it; the choice can change until the first
        send, and None keeps the one chosen before (the first message at first).
        """
        self._ctx.alive()
        pipeline = self._pipeline
        return await self._allocation.select(
            session_id, character_id, signal,
            lambda sid, log, sig, lease: pipeline.ingest_locked(sid, log, signal=sig, lease=lease),
            names=Names.of(names), greeting_index=greeting_index)

    # -- the turn pipeline (F-6, P-1 ... P-5) --------------------------------------------------

    async def checkpoint(self, *, session_id: str, turn_start_seq: int, signal: Signal | None = None,
                         names: Names | dict[str, Any] | None = None) -> builtins.list[CheckpointInfo]:
        """Freeze the pre-turn baseline of the turn that starts at ``turn_start_seq`` (F-6).

        Completed turns not yet ingested are applied first, so the baseline is the state the
        turn really starts from. One checkpoint per resource and turn: asking again returns the
        first, unchanged. ``names`` as for :meth:`ingest`.
        """
        self._ctx.alive()
        return await self._pipeline.checkpoint(session_id, turn_start_seq, signal, Names.of(names))

    async def ingest(self, *, session_id: str, signal: Signal | None = None,
                     names: Names | dict[str, Any] | None = None) -> IngestReport:
        """Apply, in order, every completed turn of the session not yet processed (P-1 ... P-3).

        Each reply's ``{{user}}`` / ``{{char}}`` macros get ``names`` (``{user?, char?}``) where
        given, else the session's names at the reply (its last ``session/names`` event), before
        its commands are extracted; its declaration reads the turn's time (``turn/end`` ``at``).
        """
        self._ctx.alive()
        return await self._pipeline.ingest(session_id, signal, Names.of(names))

    # -- reads (A, A-2, A-6): pure, they write nothing -------------------------------------------

    async def list(self, *, scope: Scope | dict[str, Any], signal: Signal | None = None) -> builtins.list[StateRecord]:
        """Every record ``scope`` may read: a session's, or all for a local management scope."""
        self._ctx.alive()
        return await self._reads.records(scope, signal)

    async def read(self, *, id: str, scope: Scope | dict[str, Any], signal: Signal | None = None) -> StateRecord | None:
        """One record, current or historical (``message_id`` / ``end_event_id``); None if missing."""
        self._ctx.alive()
        return await self._reads.read(id, scope, signal)

    async def read_json(self, *, id: str, scope: Scope | dict[str, Any],
                        signal: Signal | None = None) -> RecordJson | None:
        """:meth:`read` as JSON bytes (``to_json()``, compact) with its revision and their sha256,
        for transports; an unchanged current record's text is kept, not written again."""
        self._ctx.alive()
        return await self._reads.read_json(id, scope, signal)

    async def history(self, *, id: str, scope: Scope | dict[str, Any], include_before: bool = False,
                      limit: int | None = None, before: int | None = None,
                      signal: Signal | None = None) -> builtins.list[HistoryEntry]:
        """The session's versions, successes and failures, oldest first (A-6).

        A page: ``limit`` (1 to 1,000) keeps the newest entries whose ``position`` is below
        ``before``; the next older page is ``before=`` the first entry's position.
        """
        self._ctx.alive()
        return await self._reads.history(id, scope, include_before, limit, before, signal)

    async def changes(self, *, id: str, scope: Scope | dict[str, Any], path: str | None = None,
                      revision: int | None = None, turn: int | None = None, session_id: str | None = None,
                      before: int | None = None, limit: int | None = None, signal: Signal | None = None) -> Changes:
        """What the resource's versions changed, path by path, with the commands they refused or
        ignored: exactly one of ``path`` (a JSON pointer into ``stat_data``: its story, paged like
        :meth:`history` by ``before`` / ``limit``, 100 by default, through a fork child's lineage),
        ``revision`` (that version's changes) or ``turn`` (that turn's, of ``session_id``, by
        default the scope's session). Scope and refusals as :meth:`history`; an unknown id is
        ``MVU_MISSING``."""
        self._ctx.alive()
        return await self._changes.changes(id, scope, path=path, revision=revision, turn=turn, session_id=session_id,
                                           before=before, limit=limit, signal=signal)

    async def changes_json(self, *, id: str, scope: Scope | dict[str, Any], path: str | None = None,
                           revision: int | None = None, turn: int | None = None, session_id: str | None = None,
                           before: int | None = None, limit: int | None = None,
                           signal: Signal | None = None) -> RecordJson:
        """:meth:`changes` as the wire carries it: the JSON of its ``to_json()``, compact, UTF-8,
        written from the rows without the models (values as stored), for transports; with the
        resource's current revision and the digest of the bytes. The bytes are kept by the query
        and the resource's head: while no version is written, the same query is answered from
        them (its scope and history still checked)."""
        self._ctx.alive()
        return await self._changes.changes_json(id, scope, path=path, revision=revision, turn=turn,
                                                session_id=session_id, before=before, limit=limit, signal=signal)

    async def diff(self, *, id: str, scope: Scope | dict[str, Any], from_revision: int,
                   to_revision: int | None = None, to_id: str | None = None, signal: Signal | None = None) -> StateDiff:
        """What differs in ``stat_data`` from revision ``from_revision`` of ``id`` to revision
        ``to_revision`` (None: the current one) of ``to_id`` (None: ``id``): another branch,
        swipe or session of the playthrough. Revision 0 is what a resource started from (a fork
        child's: its fork point). At most 1,000 differences (``truncated`` beyond)."""
        self._ctx.alive()
        return await self._changes.diff(id, scope, from_revision=from_revision, to_revision=to_revision, to_id=to_id,
                                        signal=signal)

    async def diff_json(self, *, id: str, scope: Scope | dict[str, Any], from_revision: int,
                        to_revision: int | None = None, to_id: str | None = None,
                        signal: Signal | None = None) -> RecordJson:
        """:meth:`diff` as the wire carries it: the JSON of its ``to_json()``, compact, UTF-8,
        written without the models, for transports; with the ``to`` point's revision and the
        digest of the bytes. Kept as :meth:`changes_json` is, by both ends' heads."""
        self._ctx.alive()
        return await self._changes.diff_json(id, scope, from_revision=from_revision, to_revision=to_revision,
                                             to_id=to_id, signal=signal)

    async def facts(self, *, id: str, scope: Scope | dict[str, Any],
                    signal: Signal | None = None) -> builtins.list[dict[str, JsonValue]]:
        """This session's bounded, content-free trigger observations of one resource (A-4, A-5)."""
        self._ctx.alive()
        return await self._reads.facts(id, scope, signal)

    async def checkpoint_state(self, *, id: str, scope: Scope | dict[str, Any], turn: int,
                               signal: Signal | None = None) -> CheckpointState | None:
        """The state an instance had at a turn's pre-request checkpoint (None when that turn has
        no checkpoint), in the session's current scope."""
        self._ctx.alive()
        return await self._reads.checkpoint_state(id, scope, turn, signal)

    # -- the state in the prompt (R-1 ... R-4, P-6): reads with a lease -------------------------

    async def resolve_prompt_dependency(self, *, scope: dict[str, Any], event: dict[str, Any], id: str | None = None,
                                        signal: Signal | None = None) -> PromptDependency | None:
        """The variables a prompt template or world-book entry depends on, with a lease
        (``check_current``); None when missing, unavailable or denied. Every registered handler
        must allow with a synchronous lease; a world-book send at a turn reads that turn's
        checkpoint; without ``id`` only the session's one state resolves."""
        self._ctx.alive()
        return await self._prompts.resolve(id, scope, event, signal)

    async def render_world_book(self, *, scope: dict[str, Any], entries: builtins.list[dict[str, Any]],
                                id: str | None = None, turn: int | None = None, step: int | None = None,
                                preview: bool = False, consumer_id: str = "world-book:host",
                                signal: Signal | None = None) -> RenderedPrompt:
        """Expand ``{{format_message_variable::...}}`` in the active entries (``{text, active?}``)
        from one dependency read; ``MVU_USAGE_DENIED`` when the state they name is refused."""
        self._ctx.alive()
        return await self._prompts.render(id, scope, entries, turn, step, preview, consumer_id, signal)

    async def resolve_request(self, *, session_id: str, selection: dict[str, Any] | None, turn: int | None = None,
                              step: int | None = None, preview: bool = False,
                              signal: Signal | None = None) -> StateAssembly:
        """The ``tavern.mvu/state`` source's blocks for one model request: nothing unless it is
        selected as ``{role: 'system', lifetime: 'request'}``."""
        self._ctx.alive()
        return await self._prompts.assemble(session_id, selection, turn, step, preview, signal)

    async def observe_request(self, *, session_id: str, messages: builtins.list[Any],
                              signal: Signal | None = None) -> builtins.list[dict[str, JsonValue]]:
        """The model request the host gives the model: when its messages are those of the
        session's last recorded ``request/assembly``, the ``dsh-request-observed`` facts of each
        state block it carries (stored, and returned); otherwise none (docs/prompt.md)."""
        self._ctx.alive()
        return await observe_request(self._ctx, session_id, messages, signal)

    def get_management_defaults(self, *, id: str, scope: dict[str, Any] | None = None) -> ManagementDefaults | None:
        """Synchronous, for a trusted manager: MVU's default chains for a binding a read verified."""
        self._ctx.alive()
        return self._prompts.defaults(id, scope)

    # -- manual writes (A, I-8, I-11, L-3) -----------------------------------------------------

    async def update(self, *, id: str, content: Any, expected_revision: int, operation_id: str,
                     scope: Scope | dict[str, Any], signal: Signal | None = None) -> UpdateReceipt:
        """A CAS edit of the current content; same operation id + same request replays the
        receipt, another request under it is refused. The source's declaration stays (trying to
        replace it is ``MVU_SCHEMA_CODE``) and validates the new ``stat_data`` exactly once."""
        self._ctx.alive()
        return await self._editing.update(id, content, expected_revision, operation_id, scope, signal)

    async def set_management_mode(self, *, id: str, mode: str, expected_revision: int, operation_id: str,
                                  scope: Scope | dict[str, Any], signal: Signal | None = None) -> ManagementReceipt:
        """Store the management-mode preference under CAS + idempotency (I-8)."""
        self._ctx.alive()
        return await self._editing.set_management_mode(id, mode, expected_revision, operation_id, scope, signal)

    async def copy(self, *, id: str, new_id: str, scope: Scope | dict[str, Any],
                   signal: Signal | None = None) -> StateRecord:
        """A new shared resource holding the current content (I-11): keeps the access scope; not a
        fork, so no history, schema transform or policy comes along. An existing id is refused."""
        self._ctx.alive()
        return await self._editing.copy(id, new_id, scope, signal)

    # -- seeds: forks, swipes, retries (F-1 ... F-7) --------------------------------------------

    async def capture_session_seed(self, *, session_id: str, kind: str, at_event_id: int,
                                   prefix_end_event_id: int | None = None, target_session_id: str | None = None,
                                   signal: Signal | None = None) -> str | None:
        """Freeze the state a branch starts from, before the host creates it; returns the ticket
        (None when the session has no state)."""
        self._ctx.alive()
        check_session_id(session_id)
        return await self._branching.capture(session_id=session_id, kind=kind, at_event_id=at_event_id,
                                             prefix_end_event_id=prefix_end_event_id,
                                             target_session_id=target_session_id, signal=signal)

    async def install_session_seed(self, *, ticket: str, session_id: str,
                                   signal: Signal | None = None) -> builtins.list[str]:
        """Install a captured seed into the child the host created; returns the child's instance
        ids. The same ticket to the same child is a replay; any other reuse ``MVU_SEED_CONFLICT``."""
        self._ctx.alive()
        check_session_id(session_id)
        return await self._branching.install(ticket=ticket, session_id=session_id, signal=signal)

    # -- card scripts: the bubble snapshot, bindings and writes (docs/cards.md) ------------------

    async def snapshot(self, *, scope: dict[str, Any], signal: Signal | None = None) -> dict[str, JsonValue]:
        """The read-only state a card script's scope sees (a message, a greeting or an empty
        session's opening), in the bare snapshot shape; ``MVU_AMBIGUOUS`` when several resources
        match. Needs a :class:`~mvu_store.host.CardHost`."""
        self._ctx.alive()
        return await self._cards.snapshot(scope, signal)

    async def create_card_binding(self, *, scope: dict[str, Any], grant_id: str, source_identity: dict[str, Any],
                                  binding_id: str | None = None, signal: Signal | None = None) -> dict[str, Any]:
        """Bind an enabled card script (its host grant ``grant_id`` and ``source_identity``) to the
        scope's one resource: ``{capability, snapshot}``. The same ``binding_id`` with the same
        parameters binds once; with others it is ``MVU_IDEMPOTENCY_CONFLICT``."""
        self._ctx.alive()
        return await self._cards.bind(scope, grant_id, source_identity, binding_id, signal)

    async def card_write(self, *, capability: str, operation: str, value: Any, expected_revision: int,
                         operation_id: str, cause: str, signal: Signal | None = None) -> dict[str, Any]:
        """A card script's ``patch`` (a JSON Patch array) or ``replace`` (a variables envelope)
        through its capability, under CAS and idempotency; never asks the usage policy."""
        self._ctx.alive()
        return await self._cards.write(capability, operation, value, expected_revision, operation_id, cause, signal)

    def revoke_card_binding(self, *, capability: str) -> None:
        """End a capability (one still being made is refused when it completes)."""
        self._cards.revoke(capability)
