"""Reads: records, history pages, facts and checkpoint states (DIGEST A, A-2, A-4 ... A-6, P-2).

Reads are pure: they allocate nothing and write no row. A session's read lists what exists and
meets the refusals an allocation would (a legacy-bound session, a fork child without its seed);
every record is checked against durable history first (:mod:`mvu_store.service.verification`),
which costs only what changed since the last check.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection
from typing import Any

from mvu_store.bounded import KeptBy
from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import JsonValue
from mvu_store.ledger.records import CheckpointRecord, VersionRecord
from mvu_store.service.allocation import Allocation
from mvu_store.service.catalog import Entry
from mvu_store.service.context import ReadsContext, Signal, check_signal
from mvu_store.service.failures import shown_after_failure
from mvu_store.service.legacy import CAPABILITIES
from mvu_store.service.models import (
    CheckpointState,
    HistoryEntry,
    RecordJson,
    Scope,
    StateRecord,
    parse_scope,
)
from mvu_store.service.processing import registered_receipt
from mvu_store.service.session_view import SessionView
from mvu_store.service.verification import Logs

# Why a record's content cannot be read now (P-2, I-3); the management list still shows the record.
_HISTORY_REFUSALS = frozenset({Code.HISTORY_UNAVAILABLE.value, Code.HISTORY_CHANGED.value,
                               Code.SESSION_IDENTITY.value})
MAX_PAGE = 1000


def check_page(limit: Any, before: Any) -> None:
    for name, value, low in (("limit", limit, 1), ("before", before, 0)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < low):
            raise MvuError(Code.OPERATION, f"{name} must be an integer of at least {low}")
    if limit is not None and limit > MAX_PAGE:
        raise MvuError(Code.OPERATION, f"limit must be at most {MAX_PAGE}")


# The texts of current records kept by what they are made of: a read of an unchanged record
# writes no JSON (its content may be up to the state budget, 2 MiB). One text per record and
# session: a record that changed replaces its text, so a chat's old revisions are not kept.
RECORD_TEXT_BYTES = 32 * 1024 * 1024

_TextKey = tuple[int, int, str | None, str, str | None, str, str, str | None]
"""What a kept text was made of, beside the record and session it is kept under."""


class Reads:
    def __init__(self, ctx: ReadsContext, allocation: Allocation) -> None:
        self._ctx = ctx
        self._allocation = allocation
        self._texts: KeptBy[tuple[str, str], _TextKey, RecordJson] = KeptBy(
            RECORD_TEXT_BYTES, weigh=lambda kept: len(kept.body))

    async def records(self, scope: Scope | dict[str, Any], signal: Signal | None) -> list[StateRecord]:
        check_signal(signal)
        parsed = parse_scope(scope)
        if parsed.session_id is not None:
            return [record for record, _ in await self.session_records(parsed)]
        # The management view lists every record, even one whose session's history broke: it
        # shows that record without content and with the refusal as its source error.
        entries = await self._ctx.catalog.entries() + await self._allocation.unallocated_shared()
        return [await self._listed(entry, parsed) for entry in entries]

    async def session_records(self, scope: Scope) -> list[tuple[StateRecord, bool]]:
        """A session scope's records, each with whether it is allocated yet (False: a read shows
        the content it would start from)."""
        assert scope.session_id is not None
        logs: Logs = {}
        entries, view = await self._session_entries(scope.session_id, logs, heads=None)
        return [(await self.record(entry, scope, logs, view), entry.initial is None)
                for entry in entries if entry.accessible(scope)]

    async def _session_entries(self, session_id: str, logs: Logs,
                               heads: Collection[str] | None) -> tuple[list[Entry], SessionView]:
        """The session's resources, instances still to allocate included (as :class:`Entry.initial`),
        and the view they were read from, with the head states of ``heads`` (None: of all)."""
        ctx = self._ctx
        log, rows = await ctx.sessions.log_with(session_id, ctx.ledger,
                                                SessionView.reader(session_id, configs=ctx.configs, heads=heads))
        logs[session_id] = log
        view = SessionView(ctx.ledger, rows, ctx.catalog.known_definition)
        return await self._allocation.session_entries(session_id, log, allocate=False, view=view), view

    async def _listed(self, entry: Entry, scope: Scope) -> StateRecord:
        try:
            return await self.record(entry, scope)
        except MvuError as error:
            if error.code not in _HISTORY_REFUSALS or entry.row is None:
                raise
            return StateRecord(id=entry.id, name=entry.name, scope=scope.to_json(), content=None,
                               revision=entry.row.revision, current_revision=entry.row.revision, historical=False,
                               version_key=entry.row.head_key, management_mode=self._ctx.management_mode(),
                               stored_management_mode=entry.stored_management_mode,
                               template_id=entry.row.template_id, instance=entry.instance, source_error=error.code)

    async def read(self, resource_id: Any, scope: Scope | dict[str, Any], signal: Signal | None) -> StateRecord | None:
        check_signal(signal)
        parsed = parse_scope(scope)
        if not isinstance(resource_id, str):
            raise MvuError(Code.MISSING, "id must be a string")
        entry, logs, view = await self.accessible(resource_id, parsed)
        return await self.record(entry, parsed, logs, view) if entry is not None else None

    async def read_json(self, resource_id: Any, scope: Scope | dict[str, Any],
                        signal: Signal | None) -> RecordJson | None:
        """:meth:`read` as the wire carries it. A current record is a function of its row (at
        its revision, with its head), its definition, the session, who manages now and its
        command processor registration: its text
        is kept under those and, while they stay, not written again (its history is checked as
        for any read)."""
        check_signal(signal)
        parsed = parse_scope(scope)
        if not isinstance(resource_id, str):
            raise MvuError(Code.MISSING, "id must be a string")
        entry, logs, view = await self.accessible(resource_id, parsed)
        if entry is None:
            return None
        # The card's script registers on the first read: before the key, which names it.
        registration = await self._registration(entry, view)
        key = self._text_key(entry, parsed, view, registration)
        slot = (entry.id, str(parsed.session_id))
        kept = self._texts.get(slot, key) if key is not None else None
        if kept is not None:
            await self._ctx.verifier.check(entry, logs)
            return kept
        text = RecordJson.of(await self._record(entry, parsed, logs, view, registration))
        if key is not None:
            self._texts.put(slot, key, text)
        return text

    def _text_key(self, entry: Entry, scope: Scope, view: SessionView | None,
                  registration: dict[str, JsonValue] | None) -> _TextKey | None:
        """What a current record's text is made of, when it comes from the session's view (its
        row and head from one snapshot); None for the others (historical, legacy, not allocated)."""
        row = entry.row
        if (row is None or scope.historical or scope.session_id is None or entry.legacy is not None
                or entry.initial is not None or view is None or not view.holds_head(entry.id)):
            return None
        # A row's other columns never change; its definition is content-addressed.
        return (row.position, row.revision, row.head_key, row.head_hash, row.management_mode,
                row.definition_hash, self._ctx.management_mode(),
                None if registration is None else f"{registration['registrationId']}/{registration['listenerCount']}")

    async def accessible(self, resource_id: str, scope: Scope) -> tuple[Entry | None, Logs, SessionView | None]:
        """The resource, if ``scope`` may read it, and the session's view it was found in (if
        any); a session's reads meet its refusals first."""
        blocked: MvuError | None = None
        logs: Logs = {}
        entry: Entry | None = None
        view: SessionView | None = None
        if scope.session_id is not None:
            try:
                listed, view = await self._session_entries(scope.session_id, logs, heads=(resource_id,))
                entry = next((item for item in listed if item.id == resource_id), None)
            except MvuError as error:
                # A session bound to legacy state allocates nothing, yet its legacy record stays
                # readable in its old scope: that read is the first step of a recovery (L-3).
                if error.code != Code.MIGRATION_REQUIRED:
                    raise
                blocked = error
        if entry is None:
            entry = await self._ctx.catalog.entry(resource_id)
            if entry is not None and view is not None and entry.is_instance and entry.instance is not None \
                    and entry.instance["sessionId"] == scope.session_id:
                # The session's own instance it does not list: a greeting copy it keeps as a
                # private draft, no live resource of the session (docs/cards.md).
                entry = None
        if entry is None:
            entry = next((item for item in await self._allocation.unallocated_shared() if item.id == resource_id), None)
        if blocked is not None and (entry is None or entry.legacy is None):
            raise blocked
        if entry is not None:
            entry.require_access(scope)
        return entry, logs, view

    async def record(self, entry: Entry, scope: Scope, logs: Logs | None = None,
                     view: SessionView | None = None) -> StateRecord:
        """The record of ``entry`` in ``scope`` (A: the record shape; A-2: historical reads);
        ``view``: the session's view ``entry`` was read from (its head state comes from there)."""
        return await self._record(entry, scope, logs, view, await self._registration(entry, view))

    async def _registration(self, entry: Entry, view: SessionView | None) -> dict[str, JsonValue] | None:
        """The receipt the record shows (its card's script registered on the first read)."""
        return await registered_receipt(self._ctx.processor, entry, view if view is not None else self._ctx.ledger)

    async def _record(self, entry: Entry, scope: Scope, logs: Logs | None, view: SessionView | None,
                      registration: dict[str, JsonValue] | None) -> StateRecord:
        ctx = self._ctx
        common: dict[str, Any] = {
            "id": entry.id, "name": entry.name, "scope": scope.to_json(),
            "management_mode": ctx.management_mode(),
            "stored_management_mode": entry.stored_management_mode,
            "source_error": entry.source_error,
            "command_processor": registration,
        }
        if entry.legacy is not None:
            content, key = entry.legacy.current()
            return StateRecord(**common, content=content, revision=entry.revision, current_revision=entry.revision,
                               historical=scope.historical, version_key=key, legacy=True,
                               capabilities=dict(CAPABILITIES))
        assert entry.row is not None
        # Read before the check, so every version used here is one the check covered.
        versions = await ctx.ledger.versions(entry.id) if scope.historical else []
        await ctx.verifier.check(entry, logs)
        if entry.row.template_id is not None:
            common.update(template_id=entry.row.template_id, instance=entry.instance)
            seed = entry.row.meta.get("seed")
            if isinstance(seed, dict) and isinstance(seed.get("source"), dict):
                common["inherited_from"] = seed["source"]
        if entry.definition.get("discovered") is True:
            common["source"] = {"kind": "character", "characterId": entry.definition.get("characterId"),
                                "discovered": True}
        if entry.initial is not None:  # not allocated yet: it would start from the template
            if scope.historical:
                _historical_version(entry, versions, scope)  # no versions yet: only its refusals apply
            return StateRecord(**common, content=entry.initial, revision=0, current_revision=0,
                               historical=scope.historical, version_key=None)
        if not scope.historical:
            head = await (view or ctx.ledger).head(entry.id)
            # After a failed turn the record shows that failure, not the head's own diagnostics.
            return StateRecord(**common, content=shown_after_failure(head.variables, head.failure),
                               revision=head.revision,
                               current_revision=head.revision, historical=False, version_key=head.version_key)
        version = _historical_version(entry, versions, scope)
        if version is None:
            content = await ctx.ledger.blob(entry.row.initial_hash)
            return StateRecord(**common, content=content, revision=0, current_revision=entry.row.revision,
                               historical=True, version_key=None)
        return StateRecord(**common, content=await ctx.ledger.blob(version.variables_hash),
                           revision=version.revision, current_revision=entry.row.revision, historical=True,
                           version_key=version.key)

    async def history(self, resource_id: Any, scope: Scope | dict[str, Any], include_before: Any, limit: Any,
                      before: Any, signal: Signal | None) -> list[HistoryEntry]:
        ctx = self._ctx
        check_signal(signal)
        parsed = parse_scope(scope)
        if not isinstance(include_before, bool):
            raise MvuError(Code.OPERATION, "include_before must be a boolean")
        check_page(limit, before)
        await self._allocation.unallocated_shared()  # its refusals (a configured id held by legacy state)
        entry = await ctx.catalog.entry(resource_id) if isinstance(resource_id, str) else None
        if entry is None:
            return []
        entry.require_access(parsed)
        if entry.legacy is not None:
            legacy = [(position, version) for position, version in enumerate(entry.legacy.versions)
                      if parsed.session_id is None
                      or (version.get("source") or {}).get("sessionId") == parsed.session_id]
            return [_legacy_entry(position, version) for position, version in _page(legacy, limit, before)]
        versions = await ctx.ledger.versions(entry.id)
        await ctx.verifier.check(entry)  # after the read: every version listed is one it checked
        visible = [(position, version) for position, version in enumerate(versions)
                   if parsed.session_id is None or version.source.get("sessionId") == parsed.session_id
                   or version.inherited or own_version(entry, version)]
        page = _page(visible, limit, before)
        by_key = {version.key: version for version in versions}
        checkpoints = {(c.session_id, c.turn): c for c in await ctx.ledger.checkpoints(entry.id)} \
            if include_before else {}
        befores = {version.key: _before_hash(version, by_key, checkpoints) for _, version in page} \
            if include_before else {}
        states = await ctx.ledger.blobs([version.variables_hash for _, version in page]
                                        + [value for value in befores.values() if value is not None])
        result = []
        for position, version in page:
            fields: dict[str, Any] = {}
            if include_before:
                before_hash = befores[version.key]
                variables = states.get(before_hash) if before_hash is not None else None
                stat_data = variables.get("stat_data") if isinstance(variables, dict) else None
                fields = {"before_available": before_hash is not None, "before": stat_data}
            variables = states.get(version.variables_hash)
            if version.kind == "reply":
                fields["commands"] = history_commands(version.meta, variables)
            result.append(HistoryEntry(
                key=version.key, kind=version.kind, revision=version.revision, position=position,
                source=version.source, variables=variables,
                fingerprint=version.fingerprint, parent_key=version.parent_key, operation_id=version.operation_id,
                error=version.error, inherited=version.inherited or version.kind == "inherited",
                created_at=version.created_at, **fields))
        return result

    async def facts(self, resource_id: Any, scope: Scope | dict[str, Any],
                    signal: Signal | None) -> list[dict[str, JsonValue]]:
        check_signal(signal)
        parsed = parse_scope(scope)
        await self._allocation.unallocated_shared()  # its refusals (a configured id held by legacy state)
        entry = await self._ctx.catalog.entry(resource_id) if isinstance(resource_id, str) else None
        if entry is None:
            return []
        entry.require_access(parsed)
        records = await self._ctx.ledger.facts(session_id=parsed.session_id)
        return [record for record in records if isinstance(record, dict) and record.get("id") == resource_id]

    async def checkpoint_state(self, resource_id: Any, scope: Scope | dict[str, Any], turn: Any,
                               signal: Signal | None) -> CheckpointState | None:
        check_signal(signal)
        parsed = parse_scope(scope)
        if parsed.session_id is None or parsed.historical:
            raise MvuError(Code.SCOPE, "a checkpoint is read in its session's current scope")
        if isinstance(turn, bool) or not isinstance(turn, int) or turn < 0:
            raise MvuError(Code.OPERATION, "turn must be a non-negative integer")
        if not isinstance(resource_id, str):
            raise MvuError(Code.MISSING, "id must be a string")
        entry, logs, _ = await self.accessible(resource_id, parsed)
        if entry is None or entry.row is None or entry.initial is not None:
            return None
        await self._ctx.verifier.check(entry, logs)
        point = await self._ctx.ledger.checkpoint(entry.id, session_id=parsed.session_id, turn=turn)
        if point is None:
            return None
        return CheckpointState(id=entry.id, session_id=point.session_id, turn=point.turn, seq=point.seq,
                               revision=point.revision, version_key=point.version_key,
                               content=await self._ctx.ledger.blob(point.variables_hash))


def history_commands(meta: dict[str, JsonValue], variables: JsonValue) -> list[JsonValue]:
    """Every command of a reply version with its result, in text order: the applied ones its
    ``meta`` keeps, and the refused and ignored ones of its ``update_diagnostics``."""
    applied = meta.get("applied")
    listed = [item for item in applied if isinstance(item, dict)] if isinstance(applied, list) else []
    listed = _with_values(listed, variables)
    diagnostics = variables.get("update_diagnostics") if isinstance(variables, dict) else None
    if isinstance(diagnostics, list):
        listed.extend(item for item in diagnostics
                      if isinstance(item, dict) and item.get("kind") in ("refused", "ignored") and "start" in item)
    return sorted(listed, key=_place)


def _with_values(applied: list[dict[str, JsonValue]], variables: JsonValue) -> list[dict[str, JsonValue]]:
    """The applied commands (in the order they ran) with the value before and after each, from
    the version's ``delta_data``: a command's first change is the first change of its path after
    the previous command's (the meta leaves the values out, to keep them once)."""
    delta = variables.get("delta_data") if isinstance(variables, dict) else None
    changes = delta.get("changes") if isinstance(delta, dict) else None
    if not isinstance(changes, list):
        return applied
    by_path: dict[JsonValue, list[int]] = {}
    for index, change in enumerate(changes):
        if isinstance(change, dict):
            by_path.setdefault(change.get("path"), []).append(index)
    at, shown = 0, []
    for item in applied:
        places = by_path.get(item.get("path"), [])
        next_place = bisect.bisect_left(places, at)
        if next_place == len(places):
            shown.append(item)
            continue
        change, at = changes[places[next_place]], places[next_place] + 1
        values = {name: change[key] for name, key in (("before", "previous"), ("after", "value")) if key in change}
        shown.append({**item, **values})
    return shown


def _place(item: dict[str, JsonValue]) -> tuple[int, int]:
    start, patch = item.get("start"), item.get("patchIndex")
    return (start if isinstance(start, int) else 0), (patch if isinstance(patch, int) else 0)


def _page(entries: list[tuple[int, Any]], limit: int | None, before: int | None) -> list[tuple[int, Any]]:
    """The newest ``limit`` entries whose position is below ``before``, oldest first."""
    if before is not None:
        entries = [item for item in entries if item[0] < before]
    return entries[-limit:] if limit is not None else entries


def _before_hash(version: VersionRecord, by_key: dict[str, VersionRecord],
                 checkpoints: dict[tuple[str, int], CheckpointRecord]) -> str | None:
    """The state before a version: its parent's, or its turn's checkpoint's; None if unknown."""
    if version.inherited or version.kind == "inherited":
        return None
    parent = by_key.get(version.parent_key) if version.parent_key else None
    if parent is not None:
        return parent.variables_hash
    turn = version.source.get("turn")
    checkpoint = checkpoints.get((str(version.source.get("sessionId")), turn)) \
        if isinstance(turn, int) and version.kind in ("reply", "failed") else None
    return checkpoint.variables_hash if checkpoint is not None else None


def _legacy_entry(position: int, version: dict[str, Any]) -> HistoryEntry:
    source = version.get("source")
    return HistoryEntry(key=str(version.get("key")), kind="legacy", revision=int(version.get("revision") or 0),
                        position=position, source=source if isinstance(source, dict) else {},
                        variables=version.get("variables"), fingerprint=version.get("fingerprint"),
                        parent_key=version.get("parentKey"), operation_id=version.get("operationId"),
                        error=version.get("error"), created_at=0)


def own_version(entry: Entry, version: VersionRecord) -> bool:
    """An instance's own version belongs to its one session even when its source names
    another: an edit of an inherited reply keeps that reply's (the ancestor's) coordinates."""
    return entry.is_instance and not version.inherited and version.resource_id == entry.id


def _historical_version(entry: Entry, versions: list[VersionRecord], scope: Scope) -> VersionRecord | None:
    """The version a historical scope names: by message id, or the last at an event id."""
    own = [version for version in versions
           if version.source.get("sessionId") == scope.session_id or (version.inherited and entry.is_instance)
           or own_version(entry, version)]
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
