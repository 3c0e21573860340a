"""The state on its way into a prompt: dependency reads, the state source, management defaults.

A prompt read is a read (it writes no row) that also passes the retrieve side of the usage policy,
``before_model_request`` with the fixed read/render/provide chain. Its result carries a lease,
``check_current()``: synchronous, kept by the host, and False from the moment anything the read
relied on may have changed (the resource's revision, the session's selection or events, the
usage registrations, a policy lease, the caller's signal, the service itself). Of the session's
events it tolerates those request preparation appends (``request_lease``).

Two callers differ in how strict the policy is:

- a *dependency* (a prompt template or a world-book entry that names the state) needs every
  registered handler to allow with a synchronous lease of its own; an abstention refuses. With
  no handler a native source keeps its native permission.
- the *state source* ``tavern.mvu/state`` (a preset block) decides as the store side does: a
  native source runs unless a handler refuses, a managed one only on the manager's decision.

Retrieve facts (``started``, ``triggered`` / ``skipped``) go to observers only: a read writes
nothing, and a read is never ``applied`` (only the host knows what it finally sent).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mvu_store.bounded import Generations
from mvu_store.errors import Code, MvuError
from mvu_store.host import Lease, Leases, SessionEvent, holds
from mvu_store.jsonvalue import JsonValue, copy_json, js_json, sha256_hex
from mvu_store.prompt import expand_message_variables, has_macro
from mvu_store.service.context import PromptContext, Signal, check_signal
from mvu_store.service.models import Scope, StateRecord, check_session_id, parse_scope
from mvu_store.service.offload import off_loop
from mvu_store.service.reads import Reads
from mvu_store.service.request_lease import request_lease
from mvu_store.service.usage import Usage, sync_lease
from mvu_store.service.validation import CHAINS

ADAPTER_ID = "tavern.mvu"
STATE_SOURCE_ID = "tavern.mvu/state"
RETRIEVE = "before_model_request"
STRATEGY_VERSION = 1
# Who may ask for a dependency, by usage: the consumer's adapter must be the one the usage names.
CONSUMERS = {"prompt-template-dependency": "tavern.prompt-templates", "world-book-variable": "tavern.world-books"}
DEFAULT_INSTRUCTIONS = ('Return variable changes as <JSONPatch>[{"op":"replace","path":"/field","value":0}]'
                        "</JSONPatch>. Use delta for numeric changes. Output literal values only.")
_EVENT_KEYS = frozenset({"preview", "turn", "step", "usage", "consumer"})
_REQUIRED_EVENT_KEYS = frozenset({"preview", "usage", "consumer"})
# Resources whose changes a prompt read's lease counts; one forgotten reads as changed.
_RESOURCE_CHANGES = 65_536
# Verified bindings kept for management defaults; an older one reads as none (a read renews it).
_MAX_BINDINGS = 4096
# Why a record cannot be given to the model now: it is then unavailable (None), not an error.
_UNAVAILABLE = frozenset({Code.HISTORY_UNAVAILABLE.value, Code.HISTORY_CHANGED.value, Code.SESSION_IDENTITY.value,
                          Code.SESSION_LEASE.value, Code.MIGRATION_REQUIRED.value})


@dataclass(frozen=True, slots=True)
class PromptDependency:
    """What a dependency read returns: a full copy of the variables at ``revision``."""

    id: str
    content: JsonValue
    revision: int
    config_revision: JsonValue
    check_current: Callable[[], bool] = field(repr=False, compare=False)
    adapter_id: str = ADAPTER_ID

    def to_json(self) -> dict[str, JsonValue]:
        return {"id": self.id, "adapterId": self.adapter_id, "content": self.content, "revision": self.revision,
                "configRevision": self.config_revision}


@dataclass(frozen=True, slots=True)
class RenderedPrompt:
    """Entry texts with their macros expanded (None for an entry that was not active), and the
    read they came from (no id, revision or lease: no active entry named the state)."""

    texts: list[str | None]
    id: str | None
    revision: int | None
    config_revision: JsonValue
    check_current: Callable[[], bool] = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class StateAssembly:
    """What the ``tavern.mvu/state`` source gives a request: text blocks and their diagnostics."""

    blocks: list[dict[str, JsonValue]]
    diagnostics: list[dict[str, JsonValue]]
    check_current: Callable[[], bool] = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class ManagementDefaults:
    """A source's default management configuration, for a binding a read verified."""

    revision: int
    configuration: dict[str, JsonValue]
    check_current: Callable[[], bool] = field(repr=False, compare=False)
    protocol_version: int = 1
    scope_policy: str = "source-bound"

    def to_json(self) -> dict[str, JsonValue]:
        return {"protocolVersion": self.protocol_version, "revision": self.revision,
                "configuration": copy_json(self.configuration), "scopePolicy": self.scope_policy}


def default_configuration() -> dict[str, JsonValue]:
    """MVU's own chains, and nothing else (no grant, no injection)."""
    return {"type": "mvu-state",
            "store": {"on": "assistant_message_committed", "strategy": list(CHAINS["assistant_message_committed"])},
            "retrieve": {"on": RETRIEVE, "strategy": list(CHAINS[RETRIEVE])}}


@dataclass(frozen=True, slots=True)
class _Request:
    resource_id: str | None
    scope: Scope
    session_id: str
    event: dict[str, JsonValue]


class PromptReads:
    def __init__(self, ctx: PromptContext, reads: Reads) -> None:
        self._ctx = ctx
        self._reads = reads
        self._resource_changes: Generations[str] = Generations(_RESOURCE_CHANGES)
        self._bindings: dict[tuple[str, str | None], tuple[int, Callable[[], bool]]] = {}
        # Facts name the resource a commit or an edit changed; counting them here lets a lease
        # notice a change without reading the ledger (it must answer synchronously).
        ctx.usage.observe(self._noticed)

    def _noticed(self, fact: dict[str, JsonValue]) -> None:
        resource_id = fact.get("id")
        if isinstance(resource_id, str) and fact.get("phase") in ("applied", "completed", "failed"):
            self._resource_changes.bump(resource_id)

    # -- dependencies -----------------------------------------------------------------------------

    async def resolve(self, resource_id: Any, scope: Any, event: Any, signal: Signal | None) -> PromptDependency | None:
        found = await self._dependency(resource_id, scope, event, signal)
        return found if isinstance(found, PromptDependency) else None

    async def _dependency(self, resource_id: Any, scope: Any, event: Any,
                          signal: Signal | None) -> PromptDependency | str:
        """What :meth:`resolve` reads, or why nothing can be given to the model now (in words)."""
        check_signal(signal)
        request = _parse_request(resource_id, scope, event)
        world_book = request.event["usage"] == "world-book-variable"
        if request.resource_id is None and not world_book:
            raise MvuError(Code.MISSING, "a prompt template dependency names its resource (id)")
        found = await self._current(request, signal)
        if found is None:
            return "no state of this session can be read (no such resource here, or the session's history is gone)"
        record, lease = found
        content, revision = record.content, record.revision
        turn = request.event.get("turn")
        if world_book and isinstance(turn, int) and request.event["preview"] is not True:
            point = await self._checkpoint(record.id, request, turn, signal)
            if isinstance(point, str):
                return point
            content, revision = point
        facts = _RetrieveFacts(record.id, request.session_id, turn, request.event["usage"])
        leases = await self._leased_decision(record.id, request, content, signal, facts)
        if leases is None:
            await facts.send(self._ctx.usage, "skipped", revision, None, detail="usage-policy")
            return "the usage policy did not allow it"
        policy, config_revision = leases
        check_current = Leases(lease, *policy)
        if not check_current():  # something moved while the policy was deciding
            return "the state changed while it was read: ask again"
        await facts.send(self._ctx.usage, "triggered", revision, config_revision)
        return PromptDependency(id=record.id, content=copy_json(content), revision=revision,
                                config_revision=config_revision, check_current=check_current)

    async def _current(self, request: _Request, signal: Signal | None) -> tuple[StateRecord, Lease] | None:
        """The record a request reads, with the lease of everything but the policy, or None."""
        ctx = self._ctx
        lease = self._lease(request.session_id, request.resource_id, signal)
        try:
            host_lease = await request_lease(ctx, request.session_id)
            if request.resource_id is not None:
                record = await self._reads.read(request.resource_id, request.scope, signal)
            else:  # the session's one state, if it has exactly one
                usable = [item for item in await self._reads.records(request.scope, signal) if _usable(item)]
                record = usable[0] if len(usable) == 1 else None
        except MvuError as error:
            if error.code in _UNAVAILABLE:
                return None
            raise
        if record is None or not _usable(record):
            return None
        resource_lease = self._lease(request.session_id, record.id, signal) if request.resource_id is None else lease
        current = Leases(resource_lease, host_lease)
        for key in ((record.id, request.session_id), (record.id, None)):
            self._bindings.pop(key, None)  # the newest reads last, the oldest forgotten first
            self._bindings[key] = (record.revision, current)
        while len(self._bindings) > _MAX_BINDINGS:
            del self._bindings[next(iter(self._bindings))]
        return record, current

    async def _checkpoint(self, resource_id: str, request: _Request, turn: int,
                          signal: Signal | None) -> tuple[JsonValue, int] | str:
        """A send's state: its turn's pre-request checkpoint, while that turn is the session's
        latest (an older turn never reads a later reply); else why not, in words."""
        log = await self._ctx.sessions.log(request.session_id)
        snapshot = log.snapshot() if log is not None else None
        starts = [event for event in snapshot.events if event.type == "turn/start"] if snapshot is not None else []
        latest = _turn_of(starts[-1]) if starts else None
        if not isinstance(latest, int) or latest < turn:
            return (f"turn {turn} has no turn/start event: send it (with the user's message) before the turn's "
                    "prompt, or ask for a preview")
        if latest != turn:
            return f"turn {turn} is over (the session is at turn {latest}): a prompt reads its session's latest turn"
        try:
            point = await self._reads.checkpoint_state(resource_id, request.scope, turn, signal)
        except MvuError as error:
            if error.code in _UNAVAILABLE:
                return f"turn {turn}'s pre-turn state cannot be read ({error.code})"
            raise
        if point is None:
            return f"turn {turn} has no pre-turn checkpoint of this state: its turn/start was not checkpointed"
        return point.content, point.revision

    async def _leased_decision(self, resource_id: str, request: _Request, content: JsonValue, signal: Signal | None,
                               facts: _RetrieveFacts) -> tuple[list[Lease], JsonValue] | None:
        """Every handler's lease and the configuration revision, or None when one does not allow
        with a synchronous lease. A registration change while they decide gives None too."""
        usage = self._ctx.usage
        await facts.send(self._ctx.usage, "started", None, None)
        try:
            epoch, _, answers = await usage.answers(
                RETRIEVE, resource_id=resource_id, scope=request.scope.to_json(), event=request.event,
                variables=content, signal=signal)
        except MvuError as error:
            if error.code == Code.USAGE_CANCELLED:
                return None
            raise
        check_signal(signal)
        leases: list[Lease] = [lambda: usage.epoch == epoch]
        config_revision: JsonValue = None
        for _, answer in answers:
            if answer is None or answer["enabled"] is not True:
                return None
            lease = sync_lease(answer)
            if lease is None or not holds(lease):
                return None
            leases.append(lease)
            revision = answer.get("configRevision", answer.get("config_revision"))
            config_revision = revision if revision is not None else config_revision
        return leases, config_revision

    def _lease(self, session_id: str, resource_id: str | None, signal: Signal | None) -> Lease:
        """Current while the service is open, the signal unset, the session's work and the
        resource's changes as they were now."""
        ctx = self._ctx
        sessions, resources = ctx.session_changes, self._resource_changes
        session_mark = sessions.generation(session_id)
        resource_mark = resources.generation(resource_id) if resource_id is not None else 0

        def current() -> bool:
            return (not ctx.disposed and (signal is None or not signal.is_set())
                    and sessions.generation(session_id) == session_mark
                    and (resource_id is None or resources.generation(resource_id) == resource_mark))

        return current

    # -- world-book entries ---------------------------------------------------------------------

    async def render(self, resource_id: Any, scope: Any, entries: Any, turn: Any, step: Any, preview: Any,
                     consumer_id: Any, signal: Signal | None) -> RenderedPrompt:
        """Expand the macros of the active entries from one dependency read. Entries that are not
        active, or hold no macro, never read the state; a refused or missing read stops the
        whole prompt (``MVU_USAGE_DENIED``): there is no raw fallback."""
        if not isinstance(entries, list) or not all(_is_entry(entry) for entry in entries):
            raise MvuError(Code.OPERATION, "entries are [{text: string, active?: boolean}]")
        active = [entry.get("active", True) for entry in entries]
        if not await off_loop(lambda: any(is_active and has_macro(entry["text"])
                                          for entry, is_active in zip(entries, active, strict=True))):
            check_signal(signal)
            return RenderedPrompt([entry["text"] if is_active else None
                                   for entry, is_active in zip(entries, active, strict=True)],
                                  None, None, None, lambda: True)
        event: dict[str, JsonValue] = {
            "preview": preview, "turn": turn, "step": step, "usage": "world-book-variable",
            "consumer": {"adapterId": CONSUMERS["world-book-variable"], "id": consumer_id}}
        found = await self._dependency(resource_id, scope, event, signal)
        if isinstance(found, PromptDependency) and not found.check_current():
            found = "the state changed while it was read: ask again"
        if isinstance(found, str):
            raise MvuError(Code.USAGE_DENIED, f"the state these entries name cannot be given to the model now: {found}",
                           id=resource_id if isinstance(resource_id, str) else None)
        content = found.content
        texts = await off_loop(lambda: [expand_message_variables(entry["text"], content) if is_active else None
                                        for entry, is_active in zip(entries, active, strict=True)])
        return RenderedPrompt(texts, found.id, found.revision, found.config_revision, found.check_current)

    # -- the state source ---------------------------------------------------------------------------

    async def assemble(self, session_id: Any, selection: Any, turn: Any, step: Any, preview: Any,
                       signal: Signal | None) -> StateAssembly:
        check_signal(signal)
        check_session_id(session_id)
        if not isinstance(preview, bool):
            raise MvuError(Code.OPERATION, "preview must be a boolean")
        for name, value in (("turn", turn), ("step", step)):
            _check_count(name, value)
        if selection != {"role": "system", "lifetime": "request"}:
            # Not selected (or selected another way): the source injects nothing.
            return StateAssembly([], [], lambda: True)
        scope = parse_scope({"authority": "local", "sessionId": session_id})
        usage = self._ctx.usage
        lease = self._lease(session_id, None, signal)
        try:
            host_lease = await request_lease(self._ctx, session_id)
            check_signal(signal)
            listed = await self._reads.session_records(scope)
        except MvuError as error:
            if error.code in _UNAVAILABLE:
                raise MvuError(Code.USAGE_CANCELLED, "the session's state cannot be read now",
                               session_id=session_id, cause=error.code) from None
            raise
        if preview and any(not allocated for record, allocated in listed if _usable(record)):
            # As the original: a preview never shows state the session does not have yet (nor
            # allocates it: a preview writes nothing).
            raise MvuError(Code.PREVIEW_STATE_UNAVAILABLE, "the session's state is not initialised yet: "
                                                           "nothing to preview", session_id=session_id)
        leases: list[Lease] = [lease, host_lease]
        blocks: list[dict[str, JsonValue]] = []
        diagnostics: list[dict[str, JsonValue]] = []
        event: dict[str, JsonValue] = {"preview": preview, "turn": turn, "step": step}
        for record, _ in listed:
            if not _usable(record):
                continue
            decided = await self._state_block(record, session_id, turn, scope, event, signal)
            if decided is not None:
                block, diagnostic, record_lease = decided
                blocks.append(block)
                diagnostics.append(diagnostic)
                leases.append(record_lease)
        epoch = usage.epoch
        check_current = Leases(lambda: usage.epoch == epoch, *leases)
        if not check_current():
            raise MvuError(Code.USAGE_CANCELLED, "the session changed while its state was assembled",
                           session_id=session_id)
        return StateAssembly(blocks, diagnostics, check_current)

    async def _state_block(self, record: StateRecord, session_id: str, turn: Any, scope: Scope,
                           event: dict[str, JsonValue], signal: Signal | None,
                           ) -> tuple[dict[str, JsonValue], dict[str, JsonValue], Lease] | None:
        """The state source's block for one record, its diagnostic and its lease; None when the
        usage policy skips the record (its retrieve facts told either way)."""
        usage = self._ctx.usage
        facts = _RetrieveFacts(record.id, session_id, turn, "state-source")
        await facts.send(usage, "started", None, None)
        decision = await usage.decide(RETRIEVE, resource_id=record.id, scope=scope.to_json(), event=event,
                                      variables=record.content, signal=signal)
        usage.check_epoch(decision)
        if not decision.enabled:
            await facts.send(usage, "skipped", record.revision, decision.config_revision, detail="usage-policy")
            return None
        lease = self._lease(session_id, record.id, signal)
        block_id = "v1-" + sha256_hex(js_json([record.id, record.revision, decision.config_revision,
                                                STRATEGY_VERSION]))
        block: dict[str, JsonValue] = {
            "type": "text", "role": "system", "id": block_id, "name": record.name,
            "source": {"resourceId": record.id, "field": "stat_data"},
            "text": js_json(_stat_data(record.content)) + "\n" + DEFAULT_INSTRUCTIONS}
        diagnostic: dict[str, JsonValue] = {
            "code": "MVU_RESOURCE_VERSION", "resourceId": record.id, "blockId": block_id, "revision": record.revision,
            "configRevision": decision.config_revision, "strategyRevision": STRATEGY_VERSION}
        await facts.send(usage, "triggered", record.revision, decision.config_revision)
        return block, diagnostic, lease

    # -- management defaults ----------------------------------------------------------------------

    def defaults(self, resource_id: Any, scope: Any) -> ManagementDefaults | None:
        """Synchronous: the defaults of a binding a read in this scope verified and that still
        stands; None before any such read or once it no longer does."""
        if not isinstance(resource_id, str):
            raise MvuError(Code.MISSING, "id must be a string")
        session_id = parse_scope(scope).session_id if scope is not None else None
        known = self._bindings.get((resource_id, session_id))
        if known is None or not known[1]():
            return None
        return ManagementDefaults(revision=known[0], configuration=default_configuration(), check_current=known[1])


@dataclass(slots=True)
class _RetrieveFacts:
    """The retrieve facts of one read, told to observers (never stored: a read writes nothing)."""

    resource_id: str
    session_id: str
    turn: JsonValue
    detail: str
    event_id: str = ""

    def __post_init__(self) -> None:
        self.event_id = f"{self.session_id}:{RETRIEVE}:{time.time_ns()}"

    async def send(self, usage: Usage, phase: str, revision: int | None, config_revision: JsonValue,
                   detail: str | None = None) -> None:
        fact: dict[str, JsonValue] = {"id": self.resource_id, "eventId": self.event_id, "phase": phase,
                                      "sessionId": self.session_id, "on": RETRIEVE, "detail": detail or self.detail,
                                      "recordedAt": int(time.time() * 1000)}
        for key, value in (("turn", self.turn), ("revision", revision), ("configRevision", config_revision)):
            if value is not None:
                fact[key] = value
        await usage.notify([fact])


def _parse_request(resource_id: Any, scope: Any, event: Any) -> _Request:
    if resource_id is not None and (not isinstance(resource_id, str) or not resource_id):
        raise MvuError(Code.MISSING, "id must be a non-empty string")
    if (not isinstance(scope, dict) or scope.get("authority") != "local"
            or set(scope) not in ({"authority", "sessionId"}, {"authority", "session_id"})):
        raise MvuError(Code.SCOPE, "a prompt read's scope is exactly {authority: 'local', sessionId}")
    parsed = parse_scope(scope)
    assert parsed.session_id is not None
    if not isinstance(event, dict) or not _REQUIRED_EVENT_KEYS <= set(event) <= _EVENT_KEYS:
        raise MvuError(Code.SCOPE, "a prompt read's event is {preview, turn?, step?, usage, consumer}")
    if not isinstance(event["preview"], bool):
        raise MvuError(Code.SCOPE, "event.preview must be a boolean")
    adapter = CONSUMERS.get(event["usage"]) if isinstance(event["usage"], str) else None
    consumer = event["consumer"]
    if (adapter is None or not isinstance(consumer, dict) or set(consumer) != {"adapterId", "id"}
            or consumer["adapterId"] != adapter or not isinstance(consumer["id"], str) or not consumer["id"]):
        raise MvuError(Code.SCOPE, "the consumer must be the host adapter its usage names, with its id")
    try:
        for name in ("turn", "step"):
            _check_count(name, event.get(name))
    except MvuError as error:
        raise MvuError(Code.SCOPE, error.message) from None
    return _Request(resource_id, parsed, parsed.session_id, dict(event))


def _is_entry(entry: Any) -> bool:
    return (isinstance(entry, dict) and isinstance(entry.get("text"), str) and set(entry) <= {"text", "active"}
            and isinstance(entry.get("active", True), bool))


def _check_count(name: str, value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise MvuError(Code.OPERATION, f"{name} must be a non-negative integer or null")


def _usable(record: StateRecord) -> bool:
    """A record the model may be given: current content, not legacy, initialised."""
    return not record.legacy and record.source_error is None and isinstance(record.content, dict)


def _stat_data(content: JsonValue) -> JsonValue:
    return content.get("stat_data") if isinstance(content, dict) else None


def _turn_of(event: SessionEvent) -> Any:
    return event.data.get("turn")


