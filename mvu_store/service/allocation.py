"""Templates, selections and instances (DIGEST I-1 ... I-7, I-10, I-11, L-1, F-5).

A discovered card becomes a template; a session's selection persists an activation boundary; an
instance is allocated once per (template, durable session identity), where the specification
allocates it: at selection, and at a configured session's first checkpoint or ingest. Reads
never allocate: they list what exists, after the same refusals an allocation would meet.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.host import Lease, SessionSnapshot
from mvu_store.jsonvalue import JsonValue, json_equal, measure_state
from mvu_store.lang.macros import Names
from mvu_store.ledger.records import NewResource, ResourceRecord
from mvu_store.schema.allowance import Allowance
from mvu_store.service.catalog import Entry
from mvu_store.service.context import AllocationContext, Signal, check_signal
from mvu_store.service.identity import character_template_id, instance_id, session_identity
from mvu_store.service.legacy import LegacyResource
from mvu_store.service.models import (
    CharacterDefinition,
    Scope,
    SelectionResult,
    TemplateRecord,
    check_session_id,
    parse_input,
)
from mvu_store.service.offload import off_loop
from mvu_store.service.openings import (
    Opening,
    card_template_id_of,
    check_greeting_index,
    drafts,
    first_send,
    greeting_index_of,
    greeting_template,
    live_copy,
    opening_envelope,
)
from mvu_store.service.session_cache import SessionLog
from mvu_store.service.session_view import LedgerReads, SessionView
from mvu_store.service.templates import (
    configured_definition,
    discovered_definition,
    instance_definition,
    template_record,
)

Ingest = Callable[[str, SessionLog, Signal | None, Lease], Awaitable[Any]]
"""Apply a session's completed turns not yet processed (the pipeline's ``ingest_locked``)."""


def _unallocated(new: NewResource) -> Entry:
    """A resource as it will be created, for reads before then: revision 0, its initial content
    as the ledger would store it (checked against the state budget)."""
    _, data, _ = measure_state(new.initial)
    row = ResourceRecord(id=new.id, position=-1, kind=new.kind, template_id=new.template_id,
                         session_id=new.session_id, session_created_at=new.session_created_at, revision=0,
                         head_key=None, head_hash="", definition_hash="", initial_hash="",
                         management_mode=new.management_mode, parent_id=None, parent_position=None, meta={})
    return Entry(new.id, new.definition, row=row, initial=json.loads(data))


def _healthy(template: JsonValue) -> bool:
    """A stored card template whose card worked: a failing discovery never replaces it."""
    return isinstance(template, dict) and "sourceError" not in template


async def _opening(template: dict[str, Any], names: Names) -> Opening:
    """A new instance's initial data: the template's with the session's ``names``, its opening
    greeting applied (``MVU_INITIALIZATION_INVALID`` when that greeting fails), with the rows of
    what the greeting changed, in a worker thread and within one allowance."""
    return await off_loop(lambda: opening_envelope(template, names, Allowance("the greeting's declaration work")))


def _new_instance(template: dict[str, Any], resource_id: str, identity: dict[str, JsonValue],
                  opening: Opening) -> NewResource:
    """The session's instance of ``template``, opened by ``opening`` (:func:`_opening`): its
    creation writes what the greeting changed."""
    return NewResource(
        id=resource_id, kind="instance", initial=opening.initial, changes=opening.changes,
        definition=instance_definition(template, resource_id, identity), template_id=template["id"],
        session_id=str(identity["sessionId"]), session_created_at=identity["createdAt"],
        management_mode=template.get("managementMode") or "native",
    )


async def _apply_outgoing(ingest: Ingest, session_id: str, log: SessionLog, signal: Signal | None,
                          lease: Lease) -> None:
    """Apply the outgoing character's replies before its boundary moves. An outgoing selection
    that could never allocate has nothing to apply: switching away from it (or unselecting) must
    stay possible."""
    try:
        await ingest(session_id, log, signal, lease)
    except MvuError as error:
        if error.code not in (Code.MIGRATION_REQUIRED, Code.SEED_REQUIRED):
            raise


class Allocation:
    def __init__(self, ctx: AllocationContext) -> None:
        self._ctx = ctx
        self._shared_ready = False

    # -- templates (I-1, I-4, I-6, I-7) ---------------------------------------------------------

    async def discover(self, definition: CharacterDefinition | dict[str, Any], session_id: str | None,
                       signal: Signal | None) -> TemplateRecord:
        check_signal(signal)
        card = parse_input(CharacterDefinition, definition, Code.CONFIG)
        if session_id is not None:
            check_session_id(session_id)
        template_id = character_template_id(card.character_id)
        # The card is read once, here; what the stored template contributes (the sessions it
        # names, whether it is healthy) is read in the unit that writes, so a discovery racing in
        # another process can neither lose a session nor replace a healthy card by a failing one.
        fresh = await off_loop(lambda: discovered_definition(card, []))

        def revise(existing: JsonValue) -> JsonValue:
            if isinstance(existing, dict) and (existing.get("discovered") is not True
                                               or existing.get("characterId") != card.character_id):
                raise MvuError(Code.ID_CONFLICT, f"{template_id} is a configured resource, not this card",
                               id=template_id)
            sessions = list(existing.get("sessionIds") or []) if isinstance(existing, dict) else []
            if session_id is not None and session_id not in sessions:
                sessions.append(session_id)
            if _healthy(existing) and "sourceError" in fresh:
                assert isinstance(existing, dict)
                return {**existing, "sessionIds": sessions}
            return {**fresh, "sessionIds": sessions}

        existing, stored = await self._ctx.ledger.revise_template(template_id, revise)
        assert isinstance(stored, dict)
        rejected = fresh.get("sourceError") if _healthy(existing) else None
        # Stored definitions come back with sorted keys: compare canonical texts, not key order.
        changed = not (isinstance(existing, dict) and json_equal(existing, stored))
        return template_record(stored, changed=changed, rejected=rejected)

    # -- selection (I-5) ------------------------------------------------------------------------

    async def select(self, session_id: str, character_id: str | None, signal: Signal | None,
                     ingest: Ingest, names: Names | None = None, greeting_index: int | None = None) -> SelectionResult:
        """``ingest(session_id, log, signal, lease)`` applies the outgoing character's replies first;
        ``names`` (over the session's) go into a newly allocated instance's initial data.
        ``greeting_index``: the greeting the session opens with (None: the one it chose before
        for this card, else the first message); it can change until the first send."""
        ctx = self._ctx
        check_signal(signal)
        check_session_id(session_id)
        if greeting_index is not None:
            check_greeting_index(greeting_index)
        card = await self._registered_card(character_id) if character_id is not None else None

        async def work() -> SelectionResult:
            lease = await ctx.lease(session_id)
            log, identity = await ctx.durable(session_id)
            selected, previous = await ctx.ledger.selection(session_id)
            chosen = await self._greeting_choice(card, previous, greeting_index, log) if card is not None else None
            template_id = chosen["id"] if chosen is not None else None
            opened: dict[str, Opening] = {}
            if not (selected and previous == template_id):
                opened = await self._opened(chosen, log, identity, names)
                await _apply_outgoing(ingest, session_id, log, signal, lease)
                if chosen is not None and chosen is not card:
                    # A greeting template is (re)written from its card when chosen: a card's new
                    # greetings reach the sessions that choose them from now on.
                    await ctx.ledger.put_template(chosen["id"], chosen)
                ctx.check_before_commit(signal, lease)
                await ctx.ledger.record_selection(
                    session_id, template_id, boundary=log.last_seq + 1,
                    instance_id=instance_id(template_id, identity) if template_id is not None else None)
            # Every selection call starts a new generation: a greeting view read before it is old.
            ctx.views.bump(session_id)
            return await self._selection(session_id, log, chosen, names, opened)

        return await ctx.locked(session_id, work)

    async def _registered_card(self, character_id: str) -> dict[str, Any]:
        """The card registered for ``character_id`` (``MVU_MISSING`` without one)."""
        if not isinstance(character_id, str) or not character_id:
            raise MvuError(Code.CONFIG, "character_id must be a non-empty string or None")
        template_id = character_template_id(character_id)
        card = await self._ctx.ledger.template(template_id)
        if not isinstance(card, dict) or card.get("discovered") is not True:
            raise MvuError(Code.MISSING, f"no card is registered for character {character_id!r}: register it "
                                         "first (POST /mvu/cards?characterId=… over HTTP, MvuService.discover in "
                                         "Python), then select it", id=template_id)
        return card

    async def _opened(self, chosen: dict[str, Any] | None, log: SessionLog, identity: dict[str, JsonValue],
                      names: Names | None) -> dict[str, Opening]:
        """The initial data of the chosen template's instance when the session has none yet (by
        template id), its greeting opened once per selection; refused before anything is stored,
        since a refused selection must not stick (L-1, F-5)."""
        if chosen is None or await self._ctx.ledger.resource(instance_id(chosen["id"], identity)):
            return {}
        self.check_allocatable(chosen["id"], log.snapshot(), await self._ctx.catalog.legacy())
        return {chosen["id"]: await _opening(chosen, (names or Names()).over(log.names))}

    async def _selection(self, session_id: str, log: SessionLog, chosen: dict[str, Any] | None,
                         names: Names | None, opened: dict[str, Opening]) -> SelectionResult:
        """The session's selection once recorded, its instances allocated."""
        template_id = chosen["id"] if chosen is not None else None
        instances = await self.instances(session_id, log, allocate=True, names=names, opened=opened)
        entry = next((entry for entry in instances if entry.row and entry.row.template_id == template_id), None)
        boundaries = await self._ctx.ledger.activations(session_id)
        return SelectionResult(session_id=session_id, template_id=template_id,
                               instance_id=entry.id if entry else None,
                               boundary=boundaries.get(entry.id) if entry else None,
                               greeting_index=greeting_index_of(chosen) if chosen is not None else None)

    async def _greeting_choice(self, card: dict[str, Any], previous: str | None, index: int | None,
                               log: SessionLog) -> dict[str, Any]:
        """The template selecting ``card`` with greeting ``index`` means. Without an index the
        session keeps the greeting it chose for this card; after the first send its greeting can
        no longer change (``MVU_READ_ONLY``)."""
        same_card = previous is not None and card_template_id_of(previous) == card["id"]
        if index is None:
            kept = previous if same_card else await self._kept_greeting(card["id"], log.header.id)
            stored = await self._ctx.ledger.template(kept) if kept is not None and kept != card["id"] else None
            return stored if isinstance(stored, dict) else card
        chosen = greeting_template(card, index)
        if same_card and previous != chosen["id"] and first_send(log.snapshot()):
            raise MvuError(Code.READ_ONLY, "the session's opening is fixed once its first turn started",
                           session_id=log.header.id, greeting_index=index)
        return chosen

    async def _kept_greeting(self, card_template_id: str, session_id: str) -> str | None:
        """The greeting template of the card's live copy in the session (None: it has none): a
        card selected again without an index restores the copy it was played with (I-5)."""
        rows = [row for row in await self._ctx.ledger.resources(session_id=session_id, kinds=("instance",))
                if row.template_id is not None and card_template_id_of(row.template_id) == card_template_id]
        copies = [str(row.template_id) for row in rows]
        return live_copy(card_template_id, copies, None, await self._played(rows, None)) if copies else None

    async def active_templates(self, session_id: str,
                               reads: LedgerReads | None = None) -> tuple[bool, list[dict[str, Any]]]:
        """Whether the session ever (un)selected a card, and the templates it instantiates: its
        selected card, and configured templates open to it (``'*'`` or its id) whose character,
        if any, is the selected one. ``reads``: where to look them up (the ledger by default)."""
        ledger = reads or self._ctx.ledger
        selected, template_id = await ledger.selection(session_id)
        templates: list[dict[str, Any]] = []
        card = await ledger.template(template_id) if selected and template_id else None
        if isinstance(card, dict) and card.get("discovered") is True:
            templates.append(card)
        for config in self._ctx.configs:
            if config.sharing == "shared" or not any(item in ("*", session_id) for item in config.session_ids):
                continue
            if config.character_id is not None and (not isinstance(card, dict)
                                                    or card.get("characterId") != config.character_id):
                continue
            source = await ledger.template(character_template_id(config.character_id)) \
                if config.character_id is not None else None
            templates.append(configured_definition(config, source))
        return selected, templates

    # -- instances (I-2, I-3, L-1, F-5) -------------------------------------------------------------

    async def instances(self, session_id: str, log: SessionLog, *, allocate: bool,
                        view: SessionView | None = None, names: Names | None = None,
                        opened: dict[str, Opening] | None = None) -> list[Entry]:
        """The session's instances. With ``allocate`` the missing ones are created, exactly once;
        without, nothing is written, but the refusals an allocation would meet are raised.
        ``view``: where to look rows up (the ledger by default); told when this wrote. A new
        instance's initial data gets the session's names (``names`` of the call over the log's);
        ``opened``: initial data the caller already opened, by template id."""
        ctx = self._ctx
        ledger: LedgerReads = view or ctx.ledger
        if await ledger.seed_pending(session_id):
            raise MvuError(Code.SEED_PENDING, "state inheritance must finish before this session can use variables",
                           session_id=session_id)
        rows = await ledger.resources(session_id=session_id, kinds=("instance",))
        _, chosen = await ledger.selection(session_id)
        _, templates = await self.active_templates(session_id, view)
        if not templates:
            return await self._live(rows, chosen)
        snapshot = log.snapshot()
        identity = session_identity(snapshot, session_id)
        for row in rows:
            if not json_equal({"sessionId": row.session_id, "createdAt": row.session_created_at}, identity):
                raise MvuError(Code.SESSION_IDENTITY, f"session {session_id!r} was reused for another durable identity",
                               session_id=session_id, id=row.id)
        known = {row.id for row in rows}
        planned: list[Entry] = []
        # Read only when an instance is missing: usually every one exists already.
        legacy: dict[str, LegacyResource] | None = None
        boundaries: dict[str, int] = {}
        for template in templates:
            resource_id = instance_id(template["id"], identity)
            if resource_id in known:
                continue
            if legacy is None:
                legacy = await ctx.catalog.legacy(view)
                boundaries = await ledger.activations(session_id)
            self.check_allocatable(template["id"], snapshot, legacy)
            opening = (opened or {}).get(template["id"]) or await _opening(template, (names or Names()).over(log.names))
            if allocate:
                boundary = boundaries.get(template["id"], log.allocation_boundary())
                await self._create_instance(template, resource_id, identity, boundary, opening)
                known.add(resource_id)
            else:
                planned.append(_unallocated(_new_instance(template, resource_id, identity, opening)))
        if allocate and legacy is not None:  # something was allocated (here or by a concurrent writer)
            if view is not None:
                view.wrote()
            rows = await ctx.ledger.resources(session_id=session_id, kinds=("instance",))
        return await self._live(rows, chosen) + planned

    async def _live(self, rows: list[ResourceRecord], chosen: str | None) -> list[Entry]:
        """The session's instances but the greeting copies it keeps as drafts (docs/cards.md)."""
        hidden = drafts((row.template_id for row in rows), chosen, await self._played(rows, chosen))
        return [await self._ctx.catalog.entry_of(row) for row in rows if row.template_id not in hidden]

    async def is_draft(self, entry: Entry, session_id: str) -> bool:
        """Whether ``entry`` is a greeting copy ``session_id`` keeps as a private draft: no
        resource of the session, for a write as for a read (docs/cards.md)."""
        if not entry.is_instance or entry.instance is None or entry.instance["sessionId"] != session_id:
            return False
        _, chosen = await self._ctx.ledger.selection(session_id)
        if entry.row is not None and entry.row.template_id is not None and entry.row.template_id == chosen:
            return False  # the selected copy is live: an edit of it reads no more than this
        rows = await self._ctx.ledger.resources(session_id=session_id, kinds=("instance",))
        hidden = drafts((row.template_id for row in rows), chosen, await self._played(rows, chosen))
        return any(row.id == entry.id and row.template_id in hidden for row in rows)

    async def _played(self, rows: list[ResourceRecord], chosen: str | None) -> set[str]:
        """The templates of copies that took a turn (a checkpoint froze them), looked up only for
        a card the session does not select that has several copies (rare: the answer is then
        needed to tell the played copy from the drafts left before the first send)."""
        cards: dict[str, list[ResourceRecord]] = {}
        for row in rows:
            if row.template_id is not None:
                cards.setdefault(card_template_id_of(row.template_id), []).append(row)
        played: set[str] = set()
        for card, copies in cards.items():
            if len(copies) < 2 or (chosen is not None and card_template_id_of(chosen) == card):
                continue
            for row in copies:
                if row.template_id is not None and await self._ctx.ledger.checkpoints(row.id):
                    played.add(row.template_id)
        return played

    async def allocate(self, session_id: str, resource_id: str) -> Entry | None:
        """Allocate ``resource_id`` if it is one of the session's instances still to allocate (a
        write to an instance a read showed before its first turn); None when it is not."""
        ctx = self._ctx
        log = await ctx.sessions.log(session_id)
        if log is None or not any(entry.id == resource_id and entry.row is not None and entry.initial is not None
                                  for entry in await self.instances(session_id, log, allocate=False)):
            return None

        async def work() -> None:
            # What to allocate, and from which boundary, is read again under the session's lock.
            current = await ctx.sessions.log(session_id)
            if current is not None:
                await self.instances(session_id, current, allocate=True)

        await ctx.locked(session_id, work)
        return await ctx.catalog.entry(resource_id)

    async def session_entries(self, session_id: str, log: SessionLog | None, *, allocate: bool,
                              view: SessionView | None = None) -> list[Entry]:
        """Every resource the session may use: its instances, then shared and configured ones
        (without ``allocate``, those still to create as :attr:`Entry.initial`). ``view``: the
        session's rows, read in one round trip (told when an allocation wrote)."""
        instances = await self.instances(session_id, log, allocate=allocate, view=view) if log is not None else None
        planned = [] if allocate else await self.unallocated_shared()
        if allocate:
            await self.ensure_shared()
            # A shared resource the view does not list was created since it was read (just now,
            # or by another process): the ledger has it.
            if view is not None and any(config.sharing == "shared" and not view.lists(config.id)
                                        for config in self._ctx.configs):
                view.wrote()
        scope = Scope(session_id=session_id)
        entries = await self._ctx.catalog.entries(session_id=session_id, instances=instances, reads=view) + planned
        return [entry for entry in entries if entry.accessible(scope)]

    @staticmethod
    def check_allocatable(template_id: str, snapshot: SessionSnapshot, legacy: dict[str, LegacyResource]) -> None:
        """A new instance of ``template_id`` may start in this session (L-1, F-5)."""
        old = legacy.get(card_template_id_of(template_id))
        if old is not None and old.binds(snapshot):
            raise MvuError(Code.MIGRATION_REQUIRED, "this session's state is in the legacy shared ledger: recover "
                                                    "it into a new playthrough explicitly", id=template_id,
                           session_id=snapshot.header.id)
        if snapshot.header.parent_session is not None:
            raise MvuError(Code.SEED_REQUIRED, "a fork child needs its frozen state inheritance (a seed ticket)",
                           session_id=snapshot.header.id, parent_session=snapshot.header.parent_session)

    async def _create_instance(self, template: dict[str, Any], resource_id: str, identity: dict[str, JsonValue],
                               boundary: int, opening: Opening) -> None:
        ledger = self._ctx.ledger
        new = _new_instance(template, resource_id, identity, opening)
        if template.get("discovered") is not True:
            # A configured template is stored when first used, so an export carries it.
            await ledger.put_template(template["id"], template)
        try:
            await ledger.create_instance(new, boundary=boundary)
        except MvuError as error:
            if error.code != Code.ID_CONFLICT:
                raise
            # Another writer allocated it first: the same id means the same template and identity.

    async def ensure_shared(self) -> None:
        """Create the configured shared resources once (their configured id is the state id, I-11),
        before the first write that could need them."""
        for new in await self._missing_shared():
            try:
                await self._ctx.ledger.create_resource(new)
            except MvuError as error:
                if error.code != Code.ID_CONFLICT:
                    raise
        self._shared_ready = True

    async def unallocated_shared(self) -> list[Entry]:
        """The configured shared resources not created yet, as reads show them (nothing written)."""
        missing = await self._missing_shared()
        self._shared_ready = not missing
        return [_unallocated(new) for new in missing]

    async def _missing_shared(self) -> list[NewResource]:
        if self._shared_ready:
            return []
        ctx = self._ctx
        legacy = await ctx.catalog.legacy()
        missing = []
        for config in ctx.configs:
            if config.sharing != "shared":
                continue
            if config.id in legacy:
                raise MvuError(Code.MIGRATION_REQUIRED, f"{config.id} is legacy shared state: import it explicitly "
                                                        "before using this id", id=config.id)
            if await ctx.ledger.resource(config.id) is not None:
                continue  # A configuration change is not a reset.
            card = await ctx.ledger.template(character_template_id(config.character_id)) \
                if config.character_id is not None else None
            definition = configured_definition(config, card)
            missing.append(NewResource(id=config.id, kind="shared", initial=definition["initial"],
                                       definition={k: v for k, v in definition.items() if k != "initial"},
                                       management_mode=config.management_mode))
        return missing
