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
import os
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import JsonValue, dumps, js_json
from mvu_store.ledger import json_ledger as jl
from mvu_store.ledger.facade import Ledger
from mvu_store.ledger.transfer_rows import ImportWork, Snapshot
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


# -- import -------------------------------------------------------------------------------------


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
    work = _subtract(await ledger.snapshot(), instances, facts, sources.get(jl.LEGACY_FILE))
    created = work.counts()
    charged = 0
    if any(created.values()):
        tell("writing")
        charged = await ledger.import_rows(work)
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
              legacy: bytes | None) -> ImportWork:
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
    return ImportWork(kept, new_facts, legacy, dict(skipped))


def _evicted(fact: jl.FactPlan, floor: int | None) -> bool:
    """Whether ``fact`` is one the store may have held and evicted (so importing it again is not new)."""
    recorded_at = fact.record.get("recordedAt")
    return floor is not None and type(recorded_at) is int and recorded_at <= floor


# -- export -------------------------------------------------------------------------------------


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
    content = await ledger.snapshot()
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
