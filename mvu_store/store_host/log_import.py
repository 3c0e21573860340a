"""Bringing JSONL session logs (``MemoryHost(path=DIR)``'s format) into the store.

Each ``<session id>.jsonl`` (a header line, then one ``{seq, type, data}`` line per event)
becomes a store session with the same events, cut down to what the store keeps. Importing is a
replay: a second run stores nothing new, a log that grew adds its new events, and a log whose
stored part changed is refused for that session (``MVU_EVENT_CONFLICT``) while the others go on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.host import read_log
from mvu_store.store_host.events import MAX_BATCH_EVENTS, Kept, keep
from mvu_store.store_host.host import StoreHost

# A batch is one transaction: bounded by bytes too, since a reply may be 1 MiB.
_BATCH_BYTES = 2 * 1024 * 1024


@dataclass(slots=True)
class LogImport:
    directory: str
    sessions: dict[str, int] = field(default_factory=dict)
    """Per session imported: how many events were new."""
    refused: dict[str, str] = field(default_factory=dict)
    """Per log file refused: the error code and message."""

    def to_dict(self) -> dict[str, Any]:
        return {"directory": self.directory, "sessions": self.sessions, "refused": self.refused,
                "events": sum(self.sessions.values())}


def _batches(events: list[Kept]) -> list[list[Kept]]:
    batches: list[list[Kept]] = []
    size = 0
    for event in events:
        if not batches or len(batches[-1]) >= MAX_BATCH_EVENTS or size + len(event.text) > _BATCH_BYTES:
            batches.append([])
            size = 0
        batches[-1].append(event)
        size += len(event.text)
    return batches


def _logs(folder: Path) -> list[Path]:
    if not folder.is_dir():
        raise MvuError(Code.MISSING, f"{folder} is not a directory")
    return sorted(folder.glob("*.jsonl"))


async def import_logs(host: StoreHost, directory: str | Path,
                      step: Callable[[str], None] = lambda _: None) -> LogImport:
    """Import every ``*.jsonl`` log of ``directory`` (see the module docstring)."""
    folder = Path(directory)
    report = LogImport(str(folder))
    for path in await asyncio.to_thread(_logs, folder):
        step(f"importing {path.name}")
        try:
            read = await asyncio.to_thread(read_log, path)
            if read is None:
                continue
            header, events, _torn = read
            # Every event's shape is checked first: a malformed log leaves no session behind.
            kept = [keep({"seq": event.seq, "type": event.type, "data": dict(event.data)}) for event in events]
            await host.create_session(header.id, created_at=header.created_at, version=header.version,
                                      parent_session=header.parent_session, origin=header.origin,
                                      inherited_event_count=header.inherited_event_count)
            added = 0
            for batch in _batches(kept):
                added += (await host.append_kept(header.id, batch)).appended
            report.sessions[header.id] = added
        except MvuError as error:
            report.refused[path.name] = f"{error.code}: {error.message}"
        except (ValueError, KeyError, TypeError) as error:
            report.refused[path.name] = f"{Code.JSON}: not a session log ({error})"
    return report
