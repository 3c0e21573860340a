"""Capturing and installing seeds: how a fork, a reply swipe or a request retry gets its state
(DIGEST F-1 ... F-7). The coordinate checks are in :mod:`mvu_store.service.seeds`.

Capture (before the host creates the child) freezes, per instance of the source session, the
exact state the child starts from: a fork the version at its reply (edits on it included), a
swipe or retry the pre-turn checkpoint of the target turn (later edits excluded). Install (once
the child exists) checks the child and creates its instances in one unit, linked to the
parent's history up to the cut; the same ticket to the same child is a replay, anything else a
conflict. A child inherits content and stored mode, never policy, grants or operation ids.
"""

from __future__ import annotations

import uuid
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.host import SessionSnapshot, message_id
from mvu_store.jsonvalue import JsonValue, js_json, json_equal, sha256_hex
from mvu_store.ledger.records import CheckpointRecord, NewResource, SeedChild
from mvu_store.service.allocation import Allocation
from mvu_store.service.catalog import Entry
from mvu_store.service.context import BranchingContext, Signal, check_signal
from mvu_store.service.identity import instance_id, session_identity
from mvu_store.service.models import storable
from mvu_store.service.pipeline import Pipeline
from mvu_store.service.seeds import (
    Coordinates,
    check_checkpoint_positions,
    check_child,
    check_lineage,
    coordinates,
    fork_version,
    frozen_prefix,
    target_turn,
)
from mvu_store.service.session_cache import SessionLog
from mvu_store.service.templates import instance_definition


def content_hash(variables: JsonValue) -> str:
    return sha256_hex(js_json(variables))


def _checkpoint_version(point: CheckpointRecord) -> tuple[str | None, int]:
    """The version key and revision a checkpoint stands for. A checkpoint a fork child inherited
    is stored without a version key of its own (the state is an ancestor's version): it names
    that version, visible through the child's lineage, in ``meta.inheritedFrom``."""
    inherited = point.meta.get("inheritedFrom") if isinstance(point.meta, dict) else None
    if point.version_key is None and isinstance(inherited, dict):
        key, revision = inherited.get("versionKey"), inherited.get("revision")
        return (key if isinstance(key, str) else None,
                revision if isinstance(revision, int) and not isinstance(revision, bool) else point.revision)
    return point.version_key, point.revision


class Branching:
    def __init__(self, ctx: BranchingContext, allocation: Allocation, pipeline: Pipeline) -> None:
        self._ctx = ctx
        self._allocation = allocation
        self._pipeline = pipeline

    async def capture(self, *, session_id: str, kind: str, at_event_id: int, prefix_end_event_id: int | None,
                      target_session_id: str | None, signal: Signal | None) -> str | None:
        where = coordinates(kind, at_event_id, prefix_end_event_id, target_session_id)
        check_signal(signal)
        ctx = self._ctx

        async def work() -> str | None:
            # Leases are taken holding the session's lock: an append queued before is read, not refused.
            lease = await ctx.lease(session_id)
            log, identity = await ctx.durable(session_id)
            check_signal(signal)
            # A completed reply not yet ingested has no version yet: apply it before choosing.
            await self._pipeline.ingest_locked(session_id, log, signal=signal, lease=lease)
            active = [entry for entry in await self._allocation.instances(session_id, log, allocate=True)
                      if entry.is_instance and entry.source_error is None]
            if not active:
                return None
            snapshot = log.snapshot()
            turn = target_turn(snapshot, where)
            items = [await self._item(entry, log, where, turn) for entry in active]
            body: dict[str, JsonValue] = {"ticket": str(uuid.uuid4()), "kind": where.kind,
                                          "sourceSessionId": session_id, "sourceIdentity": identity,
                                          "atEventId": where.at_event_id}
            if where.prefix_end_event_id is not None:
                body["prefixEndEventId"] = where.prefix_end_event_id
            if where.target_session_id is not None:
                body["targetSessionId"] = where.target_session_id
            if where.cut is not None:
                body["prefix"] = frozen_prefix(snapshot, where.cut)
            body.update(items=items, installed=False)
            ctx.check_before_commit(signal, lease)
            await ctx.ledger.put_seed(str(body["ticket"]), kind=where.kind, source_session_id=session_id,
                                          target_session_id=where.target_session_id, body=body)
            return str(body["ticket"])

        return await ctx.locked(session_id, work)

    async def _item(self, entry: Entry, log: SessionLog, where: Coordinates, turn: int) -> JsonValue:
        ledger = self._ctx.ledger
        snapshot = log.snapshot()
        await self._ctx.verifier.check(entry, {snapshot.header.id: log})
        versions = await ledger.versions(entry.id)
        if where.kind == "fork":
            message = snapshot.event(where.at_event_id)
            assert message is not None
            index = fork_version(versions, where.at_event_id, message_id(message))
            if index is None:
                raise MvuError(Code.SEED_REQUIRED, "the source reply has no state version", id=entry.id,
                               at_event_id=where.at_event_id)
            version = versions[index]
            variables = await ledger.blob(version.variables_hash)
            version_key: str | None = version.key
            at_key: str | None = version.key
            revision = version.revision
        else:
            point = await ledger.checkpoint(entry.id, session_id=snapshot.header.id, turn=turn)
            if point is None:
                raise MvuError(Code.BASELINE_REQUIRED, "a swipe or retry needs its turn's pre-turn checkpoint",
                               id=entry.id, turn=turn)
            variables = await ledger.blob(point.variables_hash)
            version_key, revision = _checkpoint_version(point)
            at_key = version_key if where.prefix_end_event_id is not None else None
        cut = where.cut
        check_lineage(versions, at_key, cut)
        inherited = [] if cut is None else [
            {"turn": c.turn, "seq": c.seq, "revision": _checkpoint_version(c)[1],
             "versionKey": _checkpoint_version(c)[0], "variablesHash": c.variables_hash}
            for c in await ledger.checkpoints(entry.id) if c.seq <= cut and c.session_id == snapshot.header.id
        ]
        assert entry.row is not None
        return {
            "templateId": entry.row.template_id, "managementMode": entry.stored_management_mode,
            "variables": variables, "history": [], "checkpoints": inherited, "atKey": at_key,
            "source": {"id": entry.id, "identity": entry.instance, "versionKey": version_key, "revision": revision,
                       "contentHash": content_hash(variables), "atEventId": where.at_event_id},
        }

    async def install(self, *, ticket: str, session_id: str, signal: Signal | None) -> list[str]:
        if not isinstance(ticket, str) or not ticket or len(ticket) > 64 or not storable(ticket):
            raise MvuError(Code.SEED_CONFLICT, "unknown seed ticket")
        check_signal(signal)
        ctx = self._ctx
        seed = await ctx.ledger.seed(ticket)
        if seed is None or (seed.installed and seed.target_session_id != session_id):
            raise MvuError(Code.SEED_CONFLICT, "the seed does not belong to this child", session_id=session_id)
        if seed.target_session_id is not None and seed.target_session_id != session_id:
            # A first-turn swipe or retry names its new session: another one is not that branch.
            raise MvuError(Code.SEED_MISMATCH, "the seed was captured for another session", session_id=session_id,
                           target_session_id=seed.target_session_id)

        async def work() -> list[str]:
            source_lease = await ctx.lease(seed.source_session_id)
            target_lease = await ctx.lease(session_id)
            current = await ctx.ledger.seed(ticket)
            assert current is not None
            body = current.body
            child_log, identity = await ctx.durable(session_id)
            child = child_log.snapshot()
            items = [item for item in body.get("items") or [] if isinstance(item, dict)]
            ids = [instance_id(str(item["templateId"]), identity) for item in items]
            if current.installed:
                if current.target_session_id != session_id or not json_equal(body.get("targetIdentity"),
                                                                                 identity):
                    raise MvuError(Code.SEED_CONFLICT, "the seed was already installed in another session")
                ctx.check_before_commit(signal, source_lease, target_lease)
                return ids
            source = await ctx.sessions.snapshot(current.source_session_id)
            if source is None or not json_equal(body.get("sourceIdentity"),
                                                   session_identity(source, current.source_session_id)):
                raise MvuError(Code.SEED_MISMATCH, "the seed's source session identity changed")
            check_child(body, child, source)
            children = [await self._child(item, resource_id, identity, body, child)
                        for item, resource_id in zip(items, ids, strict=True)]
            installed = {**body, "targetSessionId": session_id, "targetIdentity": identity, "installed": True}
            ctx.check_before_commit(signal, source_lease, target_lease)
            await ctx.ledger.install_seed(ticket, target_session_id=session_id, body=installed,
                                          children=children)
            return ids

        return await ctx.locked(session_id, work)

    async def _child(self, item: dict[str, Any], resource_id: str, identity: dict[str, JsonValue],
                     body: dict[str, Any], child: SessionSnapshot) -> SeedChild:
        ledger = self._ctx.ledger
        template = await ledger.template(str(item["templateId"]))
        source = item.get("source") or {}
        if not isinstance(template, dict) or "sourceError" in template or \
                content_hash(item.get("variables")) != source.get("contentHash"):
            raise MvuError(Code.SEED_MISMATCH, "the frozen seed or its template is unavailable", id=resource_id)
        if await ledger.resource(resource_id) is not None:
            raise MvuError(Code.SEED_CONFLICT, "the child's state was initialised before its seed", id=resource_id)
        points = [point for point in item.get("checkpoints") or [] if isinstance(point, dict)]
        check_checkpoint_positions(child, points)
        mode = item.get("managementMode") if item.get("managementMode") in ("native", "managed") else "native"
        new = NewResource(
            id=resource_id, kind="instance", initial=item["variables"],
            definition=instance_definition(template, resource_id, identity), template_id=template["id"],
            session_id=str(identity["sessionId"]), session_created_at=identity["createdAt"], management_mode=mode,
            meta={"seed": {"kind": body["kind"], "ticket": body["ticket"], "anchorKey": None, "source": source}},
        )
        checkpoints = tuple(
            CheckpointRecord(resource_id, index, str(identity["sessionId"]), int(point["turn"]), int(point["seq"]), 0,
                             None, str(point["variablesHash"]),
                             {"inheritedFrom": {"id": source.get("id"), "revision": point.get("revision"),
                                                "versionKey": point.get("versionKey")}})
            for index, point in enumerate(points)
        )
        at_key = item.get("atKey")
        return SeedChild(new=new, source_id=str(source.get("id")), at_key=at_key if isinstance(at_key, str) else None,
                         activation_seq=0, checkpoints=checkpoints)
