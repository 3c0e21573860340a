"""``mvu import DIR`` / ``mvu export DIR``: the original JSON ledger files in and out, losslessly.

Import reads whichever of ``mvu-instances.json``, ``mvu-state.json`` and ``mvu-facts.json``
exist, validates all of them (``json_ledger``: the first problem is refused with its JSON
pointer), and only then writes everything in ONE unit of work: it lands whole or not at all
(``PLAY_STORAGE_LIMIT`` included).

Importing into a ledger that already holds data merges by identity: an entity (template,
resource, seed ticket, discovery selection, legacy file) that exists and is equal as JSON to
the imported one is skipped; one that exists and differs is ``MVU_ID_CONFLICT`` with the path of
the first clash, and nothing is written. So importing the same directory twice changes nothing
(the report says ``unchanged``), and a resource that moved on since it was imported is never
silently overwritten.

Facts are a bounded log without identity (oldest evicted, DIGEST A-5): a record already stored
(same canonical JSON) is skipped, and once the store has evicted anything, so is a record whose
``recordedAt`` is not newer than the oldest stored one. Eviction leaves no trace of what it
dropped, and a stored-content check alone would re-add an imported file's evicted records on
every re-import. The oldest kept time is the evidence that remains: eviction drops the oldest
first, so a record at or before it is one the store held and dropped, or one a store that keeps
only the newest records would not hold anyway; either way skipping it is what the bound means.
Before any eviction the content check is exact. A record without an integer ``recordedAt`` (the
original always writes one) is checked by content alone. (Recording each imported file's digest
would be exact too, but needs a table the schema does not have.)

The comparison reads the ledger before the write unit runs: a resource created
meanwhile by another writer is still refused (``insert_resource`` checks in the unit), a
template or seed created meanwhile fails the unit on its primary key; either way nothing of the
import is written.

Export writes the same formats back from the rows (``json_ledger.rebuild_*``), each file
atomically (temporary file, fsync, rename, fsync of the directory). A fork made by
``Ledger.fork`` links to its ancestry instead of copying it; the original's file has no such
link, so export writes the child as the original's fork child: its inherited history as
inherited versions (``json_ledger.inherited_version``), its head and its own first commit's
``parentKey`` naming the copy of the fork point. Re-importing that file gives a child holding its
copies, whose export is the same file.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from sqlalchemy import Table, select

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import JsonValue, dumps, js_json, sha256_hex
from mvu_store.ledger import json_ledger as jl
from mvu_store.ledger import tables as t
from mvu_store.ledger.dialect import dialect_of
from mvu_store.ledger.repository import Ledger
from mvu_store.ledger.writer import WriteTx
from mvu_store.private_files import make_private_folders

Step = Callable[[str], None]
"""Told what import or export is doing now (the CLI shows it as progress)."""


@dataclass(frozen=True, slots=True)
class ImportReport:
    directory: str
    files: tuple[str, ...]
    created: dict[str, int]
    """Entities written, by kind (templates, resources, versions, ...)."""
    skipped: dict[str, int]
    """Entities already in the ledger, equal to the imported ones."""
    bytes_charged: int

    @property
    def unchanged(self) -> bool:
        return not any(self.created.values())

    def to_dict(self) -> dict[str, Any]:
        return {"directory": self.directory, "files": list(self.files), "created": self.created,
                "skipped": self.skipped, "bytesCharged": self.bytes_charged, "unchanged": self.unchanged}


@dataclass(frozen=True, slots=True)
class ExportReport:
    directory: str
    files: dict[str, int]
    """File name -> bytes written."""
    counts: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {"directory": self.directory, "files": self.files, "counts": self.counts}


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


# -- import -------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Work:
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
            "checkpoints": sum(len(plan.rows.checkpoints) for plan in resources),
            "receipts": sum(len(plan.rows.receipts) for plan in resources),
            "activations": (sum(len(plan.rows.activations) for plan in resources)
                            + sum(len(plan.activations) for plan in self.instances.templates)),
            "seeds": len(self.instances.seeds),
            "discoverySelections": len(self.instances.selections),
            "facts": len(self.facts),
            "legacyFiles": int(self.legacy is not None),
        }


async def import_directory(ledger: Ledger, directory: str | os.PathLike[str], *,
                           step: Step | None = None) -> ImportReport:
    """Import an original storage directory into ``ledger`` in one transaction (see module doc)."""
    tell = step or (lambda _: None)
    root = Path(directory)
    tell("reading files")
    sources = await asyncio.to_thread(_read_sources, root)
    if not sources:
        raise MvuError(Code.MISSING, f"{root} holds none of {jl.INSTANCES_FILE}, {jl.LEGACY_FILE}, {jl.FACTS_FILE}",
                       directory=str(root))
    tell("validating")
    # Seconds of CPU for a large file: off the event loop, like the database work.
    instances, facts = await asyncio.to_thread(_validate, sources, ledger.state_limit_bytes)
    tell("comparing with the ledger")
    work = _subtract(await snapshot(ledger), instances, facts, sources.get(jl.LEGACY_FILE))
    created = work.counts()
    charged = 0
    if any(created.values()):
        tell("writing")
        charged = await ledger.write(lambda tx: _write(ledger, tx, work))
    return ImportReport(str(root), tuple(sorted(sources)), created, work.skipped, charged)


def _validate(sources: dict[str, bytes], state_limit: int) -> tuple[jl.InstancesPlan, list[jl.FactPlan]]:
    """Every file checked completely before anything is written (the legacy one too)."""
    instances = jl.InstancesPlan([], [], [], {})
    if jl.INSTANCES_FILE in sources:
        instances = jl.parse_instances(sources[jl.INSTANCES_FILE], state_limit=state_limit,
                                       now_ms=int(time.time() * 1000))
    facts = jl.parse_facts(sources[jl.FACTS_FILE]) if jl.FACTS_FILE in sources else []
    if jl.LEGACY_FILE in sources:
        jl.check_legacy(sources[jl.LEGACY_FILE])
    return instances, facts


MAX_SOURCE_BYTES = 64 * 1024 * 1024
"""The largest file an import reads: twice the original's own 32 MiB file limit. Files are
parsed whole, so a bigger one is refused by its size before a byte of it is read."""


def _read_sources(root: Path) -> dict[str, bytes]:
    if not root.is_dir():
        raise MvuError(Code.MISSING, f"{root} is not a directory", directory=str(root))
    found: dict[str, bytes] = {}
    for name in (jl.INSTANCES_FILE, jl.LEGACY_FILE, jl.FACTS_FILE):
        path = root / name
        if path.is_file():
            size = path.stat().st_size
            if size > MAX_SOURCE_BYTES:
                raise MvuError(Code.LIMIT, f"{path} is {size} bytes, over the {MAX_SOURCE_BYTES}-byte limit of an "
                                           "import file", path=str(path), limit=MAX_SOURCE_BYTES, requested=size)
            found[name] = path.read_bytes()
    return found


def _subtract(current: Snapshot, instances: jl.InstancesPlan, facts: list[jl.FactPlan],
              legacy: bytes | None) -> _Work:
    """Drop what the ledger already holds (equal as JSON); refuse what it holds otherwise."""
    skipped: dict[str, int] = defaultdict(int)

    def new(section: str, stored: dict[str, Any], key: str, value: JsonValue) -> bool:
        if key not in stored:
            return True
        if dumps(stored[key]) != dumps(value):
            raise jl.refuse(Code.ID_CONFLICT, "the ledger already holds something else here", (section, key),
                            jl.INSTANCES_FILE)
        skipped[section] += 1
        return False

    kept = jl.InstancesPlan(
        [p for p in instances.templates if new("templates", current.templates, p.id, p.definition)],
        [p for p in instances.resources if new("resources", current.resources, p.new.id, p.record)],
        [p for p in instances.seeds if new("seeds", current.seeds, p.ticket, p.seed)],
        {session: template for session, template in instances.selections.items()
         if new("discoverySelections", current.selections, session, template)},
    )
    stored_facts = {dumps(record) for record in current.facts}
    new_facts = [fact for fact in facts if fact.text not in stored_facts and not _evicted(fact, current.facts_floor)]
    if len(new_facts) < len(facts):
        skipped["facts"] = len(facts) - len(new_facts)
    if legacy is not None and jl.LEGACY_FILE in current.legacy:
        if current.legacy[jl.LEGACY_FILE] != legacy:
            raise jl.refuse(Code.ID_CONFLICT, "the ledger already holds another legacy file", (), jl.LEGACY_FILE)
        skipped["legacyFiles"] = 1
        legacy = None
    return _Work(kept, new_facts, legacy, dict(skipped))


def _evicted(fact: jl.FactPlan, floor: int | None) -> bool:
    """Whether ``fact`` is one the store may have held and evicted (so importing it again is not new)."""
    recorded_at = fact.record.get("recordedAt")
    return floor is not None and type(recorded_at) is int and recorded_at <= floor


def _write(ledger: Ledger, tx: WriteTx, work: _Work) -> int:
    """The import's one unit of work; returns the bytes it charged to the budget."""
    position = ledger.next_position(tx, t.templates, None, None)
    for index, template in enumerate(work.instances.templates):
        ledger.insert_row(tx, t.templates, {"id": template.id, "position": position + index,
                                            "definition_hash": ledger.put_blob(tx, template.blob)})
        for row in template.activations:
            ledger.insert_row(tx, t.activations, row)
    for plan in work.instances.resources:
        rows = plan.rows
        # Blobs first: the resource's head and the history rows reference them.
        for blob in rows.blobs.values():
            ledger.put_blob(tx, blob)
        ledger.insert_resource(tx, plan.new, revision=plan.revision, head=(plan.head_key, plan.head_hash))
        for table, values in ((t.versions, rows.versions), (t.checkpoints, rows.checkpoints),
                              (t.receipts, rows.receipts), (t.activations, rows.activations)):
            for row in values:
                ledger.insert_row(tx, table, row)
    position = ledger.next_position(tx, t.seeds, None, None)
    for index, seed in enumerate(work.instances.seeds):
        ledger.insert_row(tx, t.seeds, {**seed.row, "position": position + index,
                                        "body_hash": ledger.put_blob(tx, seed.blob)})
    for session_id, template_id in work.instances.selections.items():
        ledger.insert_row(tx, t.selections, {"session_id": session_id, "template_id": template_id})
    ledger.insert_facts(tx, [(fact.text, fact.record) for fact in work.facts])
    if work.legacy is not None:
        ledger.insert_row(tx, t.legacy_files, {"name": jl.LEGACY_FILE, "sha256": sha256_hex(work.legacy),
                                               "size": len(work.legacy), "body": work.legacy})
        # The legacy bytes count against the budget like any stored byte (``size``, not ``bytes``).
        tx.charge(len(work.legacy))
    return tx.charged


# -- export -------------------------------------------------------------------------------------


async def snapshot(ledger: Ledger) -> Snapshot:
    """The whole ledger in the original shapes, read in one consistent snapshot."""
    return await ledger.read(lambda connection: _snapshot(connection, ledger.ledger_id))


def _snapshot(connection: Any, ledger_id: str) -> Snapshot:
    isolation = dialect_of(connection).snapshot_isolation
    if isolation is not None:
        # One snapshot for all the reads below (SQLite's reader BEGIN already gives one).
        connection = connection.execution_options(isolation_level=isolation)

    def rows(table: Table, *columns: str, order: tuple[str, ...] = ()) -> list[Any]:
        query = select(*(table.c[name] for name in columns)).where(table.c.ledger_id == ledger_id)
        return list(connection.execute(query.order_by(*(table.c[name] for name in order))))

    texts = {row.hash: row.body for row in rows(t.blobs, "hash", "body")}
    parsed: dict[str, JsonValue] = {}

    def blob(key: str) -> JsonValue:
        if key not in parsed:
            # An export is what a user keeps: a state that is not what its hash says is refused,
            # never written out changed.
            if key not in texts or sha256_hex(texts[key]) != key:
                raise MvuError(Code.STORAGE_CORRUPT, f"the stored state {key} is missing or does not match its hash: "
                                                     "the ledger is damaged (run mvu audit); nothing was exported",
                               hash=key)
            parsed[key] = json.loads(texts[key])
        return parsed[key]

    receipts = rows(t.receipts, "resource_id", "operation_id", "kind", "fingerprint", "version_key", "result",
                    order=("resource_id", "position"))
    results = {(r.resource_id, r.version_key): r.result for r in receipts if r.kind == "commit"}
    management: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for receipt in receipts:
        if receipt.kind == "management":
            management[receipt.resource_id].append(jl.rebuild_management(receipt))
    own: dict[str, list[Any]] = defaultdict(list)
    for row in rows(t.versions, "resource_id", "key", "position", "revision", "parent_key", "variables_hash",
                    "operation_id", "fingerprint", "error", "source", "meta", order=("resource_id", "position")):
        own[row.resource_id].append(row)
    checkpoints: dict[str, list[Any]] = defaultdict(list)
    for row in rows(t.checkpoints, "resource_id", "session_id", "turn", "seq", "revision", "version_key",
                    "variables_hash", "meta", order=("resource_id", "position")):
        checkpoints[row.resource_id].append(row)
    activations: dict[str, dict[str, int]] = defaultdict(dict)
    for row in rows(t.activations, "owner_id", "session_id", "seq"):
        activations[row.owner_id][row.session_id] = row.seq
    result = Snapshot()
    for row in rows(t.templates, "id", "definition_hash", order=("position",)):
        # A template's activation boundaries are rows (owner_id = template id), as a resource's.
        result.templates[row.id] = jl.fold_activations(blob(row.definition_hash), activations[row.id])
    # Creation order: a fork's owner comes before the child, so its history is already built.
    histories: dict[str, list[dict[str, Any]]] = {}
    for row in rows(t.resources, "id", "revision", "head_key", "definition_hash", "initial_hash", "management_mode",
                    "meta", "session_id", "session_created_at", "parent_id", "parent_position", order=("position",)):
        inherited = _inherited(row, histories, own)
        # The child's own rows name its fork point by the owner's key; the file names the copy.
        renamed = {copy["inheritedFrom"]["versionKey"]: copy["key"] for copy in inherited}
        versions = [*inherited]
        for version in own[row.id]:
            record = jl.rebuild_version(version, blob(version.variables_hash), results.get((row.id, version.key)))
            if "parentKey" in record:
                record["parentKey"] = _rename(renamed, record["parentKey"])
            versions.append(record)
        histories[row.id] = versions
        points = [jl.rebuild_checkpoint(point, blob(point.variables_hash)) for point in checkpoints[row.id]]
        for point in points:
            if "versionKey" in point:
                point["versionKey"] = _rename(renamed, point["versionKey"])
        result.resources[row.id] = jl.rebuild_resource(
            row, blob(row.definition_hash), blob(row.initial_hash), current_key=_rename(renamed, row.head_key),
            versions=versions, checkpoints=points, management=management[row.id], activations=activations[row.id])
    for row in rows(t.seeds, "ticket", "body_hash", order=("position",)):
        result.seeds[row.ticket] = blob(row.body_hash)
    for row in rows(t.selections, "session_id", "template_id", order=("session_id",)):
        result.selections[row.session_id] = row.template_id
    facts = rows(t.facts, "body", "recorded_at", order=("seq",))
    result.facts = [json.loads(row.body) for row in facts]
    counters = rows(t.ledger, "facts_count", "facts_next_seq")
    # Sequence numbers start at 1 and are never reused: fewer rows than numbers means evictions.
    if facts and counters and counters[0].facts_next_seq - 1 > counters[0].facts_count:
        result.facts_floor = min(row.recorded_at for row in facts)
    result.legacy = {row.name: bytes(row.body) for row in rows(t.legacy_files, "name", "body", order=("name",))}
    return result


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


async def export_directory(ledger: Ledger, directory: str | os.PathLike[str], *,
                           step: Step | None = None) -> ExportReport:
    """Write the ledger as original files into ``directory`` (created if missing).

    ``mvu-instances.json`` always; ``mvu-facts.json`` when there are facts; the imported legacy
    ``mvu-state.json`` byte for byte. Other files in the directory are left alone.
    """
    tell = step or (lambda _: None)
    tell("checking the database file")
    damage = await ledger.damage()
    if damage:
        raise MvuError(Code.STORAGE_CORRUPT, f"{damage[0].subject} is damaged ({damage[0].detail.splitlines()[-1]}); "
                                             "nothing was exported: run mvu audit", findings=len(damage),
                       subject=damage[0].subject)
    tell("reading the ledger")
    content = await snapshot(ledger)
    files: dict[str, bytes] = {
        jl.INSTANCES_FILE: _encode(jl.instances_document(content.resources, content.templates, content.seeds,
                                                         content.selections)),
    }
    if content.facts:
        files[jl.FACTS_FILE] = _encode(jl.facts_document(content.facts))
    files.update(content.legacy)
    root = Path(directory)
    for name, data in files.items():
        tell(f"writing {name}")
        await asyncio.to_thread(write_atomically, root / name, data)
    counts = {"templates": len(content.templates), "resources": len(content.resources), "seeds": len(content.seeds),
              "discoverySelections": len(content.selections), "facts": len(content.facts)}
    return ExportReport(str(root), {name: len(data) for name, data in files.items()}, counts)


def _encode(document: JsonValue) -> bytes:
    # Compact like JSON.stringify, so an export stays within the original's 32 MiB file limit.
    return js_json(document).encode()


@contextlib.contextmanager
def atomic_file(path: Path) -> Iterator[IO[bytes]]:
    """A stream whose bytes replace ``path`` when the block ends (a block that raises leaves the
    old file, and no temporary one): a crash leaves the old file or the new one, never half."""
    make_private_folders(path.parent)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)  # the rename itself is durable only once the directory is
    finally:
        os.close(directory)


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` (:func:`atomic_file`)."""
    with atomic_file(path) as stream:
        stream.write(data)
