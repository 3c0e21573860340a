"""The ledger's side of ``mvu import`` / ``mvu export`` (``transfer.py``): an import's rows,
written in one unit of work, and the whole ledger read in one snapshot in the original shapes."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Table, select

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import JsonValue, sha256_hex
from mvu_store.ledger import json_ledger as jl
from mvu_store.ledger import tables as t
from mvu_store.ledger.change_rows import CREATION_POSITION
from mvu_store.ledger.dialect import dialect_of
from mvu_store.ledger.fact_log import FactLog
from mvu_store.ledger.resources import Resources
from mvu_store.ledger.store import Store
from mvu_store.ledger.writer import WriteTx


@dataclass(slots=True)
class Snapshot:
    """The ledger's content in the original shapes (what export writes, what import compares)."""

    templates: dict[str, JsonValue] = field(default_factory=dict)
    resources: dict[str, JsonValue] = field(default_factory=dict)
    seeds: dict[str, JsonValue] = field(default_factory=dict)
    selections: dict[str, str | None] = field(default_factory=dict)
    facts: list[JsonValue] = field(default_factory=list)
    facts_floor: int | None = None
    """Once the facts store has evicted records: the oldest stored ``recordedAt`` (see module doc)."""
    legacy: dict[str, bytes] = field(default_factory=dict)


@dataclass(slots=True)
class ImportWork:
    """What one import writes: the plans minus what the ledger already holds."""

    instances: jl.InstancesPlan
    facts: list[jl.FactPlan]
    legacy: bytes | None
    skipped: dict[str, int]

    def counts(self) -> dict[str, int]:
        resources = self.instances.resources
        return {
            "templates": len(self.instances.templates),
            "resources": len(resources),
            "versions": sum(len(plan.rows.versions) for plan in resources),
            "changes": sum(len(plan.rows.changes) for plan in resources),
            "checkpoints": sum(len(plan.rows.checkpoints) for plan in resources),
            "receipts": sum(len(plan.rows.receipts) for plan in resources),
            "activations": (sum(len(plan.rows.activations) for plan in resources)
                            + sum(len(plan.activations) for plan in self.instances.templates)),
            "seeds": len(self.instances.seeds),
            "discoverySelections": len(self.instances.selections),
            "facts": len(self.facts),
            "legacyFiles": int(self.legacy is not None),
        }


class TransferRows:
    """Writing an import's rows and reading the whole ledger."""

    def __init__(self, store: Store, resources: Resources, facts: FactLog) -> None:
        self._store, self._resources, self._facts = store, resources, facts

    async def import_rows(self, work: ImportWork) -> int:
        """Write ``work`` in one unit of work (all of it or nothing); returns the bytes it charged."""
        return await self._store.write(lambda tx: self._write(tx, work))

    def _write(self, tx: WriteTx, work: ImportWork) -> int:
        store, resources, facts = self._store, self._resources, self._facts
        position = store.next_position(tx, t.templates, None, None)
        for index, template in enumerate(work.instances.templates):
            store.insert_row(tx, t.templates, {"id": template.id, "position": position + index,
                                                "definition_hash": store.put_blob(tx, template.blob)})
            for row in template.activations:
                store.insert_row(tx, t.activations, row)
        for plan in work.instances.resources:
            rows = plan.rows
            # Blobs first: the resource's head and the history rows reference them.
            for blob in rows.blobs.values():
                store.put_blob(tx, blob)
            resources.insert_resource(tx, plan.new, revision=plan.revision, head=(plan.head_key, plan.head_hash))
            for table, values in ((t.versions, rows.versions), (t.checkpoints, rows.checkpoints),
                                  (t.receipts, rows.receipts), (t.activations, rows.activations)):
                for row in values:
                    store.insert_row(tx, table, row)
            if rows.changes:  # the versions' and the creation's, in one statement
                store.insert_rows(tx, t.changes, rows.changes)
        position = store.next_position(tx, t.seeds, None, None)
        for index, seed in enumerate(work.instances.seeds):
            store.insert_row(tx, t.seeds, {**seed.row, "position": position + index,
                                            "body_hash": store.put_blob(tx, seed.blob)})
        for session_id, template_id in work.instances.selections.items():
            store.insert_row(tx, t.selections, {"session_id": session_id, "template_id": template_id})
        facts.insert_facts(tx, [(fact.text, fact.record) for fact in work.facts])
        if work.legacy is not None:
            store.insert_row(tx, t.legacy_files, {"name": jl.LEGACY_FILE, "sha256": sha256_hex(work.legacy),
                                                   "size": len(work.legacy), "body": work.legacy})
            # The legacy bytes count against the budget like any stored byte (``size``, not ``bytes``).
            tx.charge(len(work.legacy))
        return tx.charged

    async def snapshot(self) -> Snapshot:
        """The whole ledger in the original shapes, read in one consistent snapshot."""
        ledger_id = self._store.ledger_id
        return await self._store.read(lambda connection: _snapshot(connection, ledger_id))


class _Reader:
    """An export's reads: a table's rows of one ledger, and stored states checked against their hash."""

    def __init__(self, connection: Any, ledger_id: str) -> None:
        self._connection, self._ledger_id = connection, ledger_id
        self._texts = {row.hash: row.body for row in self.rows(t.blobs, "hash", "body")}
        self._parsed: dict[str, JsonValue] = {}

    def rows(self, table: Table, *columns: str, order: tuple[str, ...] = ()) -> list[Any]:
        query = select(*(table.c[name] for name in columns)).where(table.c.ledger_id == self._ledger_id)
        return list(self._connection.execute(query.order_by(*(table.c[name] for name in order))))

    def blob(self, key: str) -> JsonValue:
        if key not in self._parsed:
            # An export is what a user keeps: a state that is not what its hash says is refused,
            # never written out changed.
            if key not in self._texts or sha256_hex(self._texts[key]) != key:
                raise MvuError(Code.STORAGE_CORRUPT, f"the stored state {key} is missing or does not match its hash: "
                                                     "the ledger is damaged (run mvu audit); nothing was exported",
                               hash=key)
            self._parsed[key] = json.loads(self._texts[key])
        return self._parsed[key]


def _snapshot(connection: Any, ledger_id: str) -> Snapshot:
    isolation = dialect_of(connection).snapshot_isolation
    if isolation is not None:
        # One snapshot for all the reads below (SQLite's reader BEGIN already gives one).
        connection = connection.execution_options(isolation_level=isolation)
    reader = _Reader(connection, ledger_id)
    activations: dict[str, dict[str, int]] = defaultdict(dict)
    for row in reader.rows(t.activations, "owner_id", "session_id", "seq"):
        activations[row.owner_id][row.session_id] = row.seq
    result = Snapshot()
    for row in reader.rows(t.templates, "id", "definition_hash", order=("position",)):
        # A template's activation boundaries are rows (owner_id = template id), as a resource's.
        result.templates[row.id] = jl.fold_activations(reader.blob(row.definition_hash), activations[row.id])
    result.resources = _Histories(reader).resources(activations)
    for row in reader.rows(t.seeds, "ticket", "body_hash", order=("position",)):
        result.seeds[row.ticket] = reader.blob(row.body_hash)
    for row in reader.rows(t.selections, "session_id", "template_id", order=("session_id",)):
        result.selections[row.session_id] = row.template_id
    facts = reader.rows(t.facts, "body", "recorded_at", order=("seq",))
    result.facts = [json.loads(row.body) for row in facts]
    counters = reader.rows(t.ledger, "facts_count", "facts_next_seq")
    # Sequence numbers start at 1 and are never reused: fewer rows than numbers means evictions.
    if facts and counters and counters[0].facts_next_seq - 1 > counters[0].facts_count:
        result.facts_floor = min(row.recorded_at for row in facts)
    result.legacy = {row.name: bytes(row.body) for row in reader.rows(t.legacy_files, "name", "body",
                                                                       order=("name",))}
    return result


class _Histories:
    """Every resource's document: its own versions, checkpoints and receipts, with what it inherits."""

    def __init__(self, reader: _Reader) -> None:
        self._reader = reader
        receipts = reader.rows(t.receipts, "resource_id", "operation_id", "kind", "fingerprint", "version_key",
                               "result", order=("resource_id", "position"))
        self._results = {(r.resource_id, r.version_key): r.result for r in receipts if r.kind == "commit"}
        self._management: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for receipt in receipts:
            if receipt.kind == "management":
                self._management[receipt.resource_id].append(jl.rebuild_management(receipt))
        self._own: dict[str, list[Any]] = defaultdict(list)
        for row in reader.rows(t.versions, "resource_id", "key", "position", "revision", "parent_key",
                               "variables_hash", "operation_id", "fingerprint", "error", "source", "meta",
                               order=("resource_id", "position")):
            self._own[row.resource_id].append(row)
        self._checkpoints: dict[str, list[Any]] = defaultdict(list)
        for row in reader.rows(t.checkpoints, "resource_id", "session_id", "turn", "seq", "revision", "version_key",
                               "variables_hash", "meta", order=("resource_id", "position")):
            self._checkpoints[row.resource_id].append(row)
        # The recorded rows only: derived ones are what the states show, derived again on import.
        self._changes: dict[tuple[str, int], list[Any]] = defaultdict(list)
        for row in reader.rows(t.changes, "resource_id", "position", "path", "status", "actor", "op", "before",
                               "after", "omitted", "command", "code", "reason", "message", "turn", "derived",
                               order=("resource_id", "position", "seq")):
            if not row.derived:
                self._changes[row.resource_id, row.position].append(row)
        self._histories: dict[str, list[dict[str, Any]]] = {}

    def resources(self, activations: dict[str, dict[str, int]]) -> dict[str, JsonValue]:
        # Creation order: a fork's owner comes before the child, so its history is already built.
        return {row.id: self._resource(row, activations[row.id]) for row in self._reader.rows(
            t.resources, "id", "revision", "head_key", "definition_hash", "initial_hash", "management_mode", "meta",
            "session_id", "session_created_at", "parent_id", "parent_position", order=("position",))}

    def _resource(self, row: Any, activations: dict[str, int]) -> JsonValue:
        blob = self._reader.blob
        inherited = _inherited(row, self._histories, self._own)
        # The child's own rows name its fork point by the owner's key; the file names the copy.
        renamed = {copy["inheritedFrom"]["versionKey"]: copy["key"] for copy in inherited}
        versions = [*inherited]
        for version in self._own[row.id]:
            record = jl.rebuild_version(version, blob(version.variables_hash),
                                        self._results.get((row.id, version.key)),
                                        self._changes.get((row.id, version.position)))
            if "parentKey" in record:
                record["parentKey"] = _rename(renamed, record["parentKey"])
            versions.append(record)
        self._histories[row.id] = versions
        points = [jl.rebuild_checkpoint(point, blob(point.variables_hash)) for point in self._checkpoints[row.id]]
        for point in points:
            if "versionKey" in point:
                point["versionKey"] = _rename(renamed, point["versionKey"])
        return jl.rebuild_resource(
            row, blob(row.definition_hash), blob(row.initial_hash), current_key=_rename(renamed, row.head_key),
            versions=versions, checkpoints=points, management=self._management[row.id], activations=activations,
            opening_changes=self._changes.get((row.id, CREATION_POSITION)))


def _rename(renamed: dict[str, str], key: Any) -> Any:
    return renamed.get(key, key) if isinstance(key, str) else key


def _inherited(row: Any, histories: dict[str, list[dict[str, Any]]], own: dict[str, list[Any]]
               ) -> list[dict[str, Any]]:
    """The history a fork made by ``Ledger.fork`` inherits, copied the way the original copies it.

    The ledger links the child to the owner of its fork point (``parent_id``) and a position in
    the owner's own rows instead of copying: the child sees the owner's whole history up to that
    row, the owner's own inherited part included. The original's file holds copies instead
    (``json_ledger.inherited_version``), so export makes them: a grandchild's are copies of its
    owner's copies, as in the original. A fork of an inherited version links to the version's
    owner, not to the resource forked, so it exports as a fork of that owner.
    """
    if row.parent_id is None:
        return []
    owner, owner_rows = histories[row.parent_id], own[row.parent_id]
    seen = len(owner) - len(owner_rows) + sum(1 for version in owner_rows if version.position <= row.parent_position)
    created_at = None if row.session_created_at is None else json.loads(row.session_created_at)
    identity = jl.instance_identity(row.session_id, created_at)
    return [jl.inherited_version(version, row.id, identity) for version in owner[:seen]]
