"""`mvu sessions import DIR`: JSONL session logs brought into the store, as a replay."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from mvu_api.cli import main
from mvu_store.ledger import open_ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.store_host import StoreHost


def write_logs(directory: Path) -> MemoryHost:
    host = MemoryHost(path=directory)
    host.create_session("s1", created_at=1000)
    host.append("s1", "turn/start", {"turn": 1})
    host.append("s1", "assistant/message", {"turn": 1, "message": {"id": "m1", "content": "_.set('hp', 1, 2);",
                                                                   "model": "dropped"}})
    host.append("s1", "turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    host.create_session("s2", created_at="2026-01-01", parent_session="s1")
    return host


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object]]:
    code = main(list(args))
    return code, json.loads(capsys.readouterr().out.strip().splitlines()[-1])


async def stored(db: str, session_id: str) -> list[tuple[int, str]]:
    ledger = await open_ledger(db)
    try:
        snapshot = await StoreHost(ledger).inspect(session_id)
        assert snapshot is not None
        return [(event.seq, event.type) for event in snapshot.events]
    finally:
        await ledger.close()


def test_logs_import_once_grow_and_a_changed_one_is_refused_alone(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    logs = tmp_path / "sessions"
    host = write_logs(logs)
    db = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    code, report = run(capsys, "--db", db, "--json", "sessions", "import", str(logs))
    assert code == 0 and report["sessions"] == {"s1": 3, "s2": 0} and report["refused"] == {}
    assert asyncio.run(stored(db, "s1")) == [(0, "turn/start"), (1, "assistant/message"), (2, "turn/end")]
    code, report = run(capsys, "--db", db, "--json", "sessions", "import", str(logs))
    assert code == 0 and report["sessions"] == {"s1": 0, "s2": 0}
    host.append("s2", "turn/start", {"turn": 1})
    host.replace_event("s1", 1, "assistant/message", {"turn": 1, "message": {"id": "m1", "content": "edited"}})
    code, report = run(capsys, "--db", db, "--json", "sessions", "import", str(logs))
    assert code == 1 and report["sessions"] == {"s2": 1}
    assert str(report["refused"]).count("MVU_EVENT_CONFLICT") == 1 and "s1.jsonl" in str(report["refused"])
    assert asyncio.run(stored(db, "s1")) == [(0, "turn/start"), (1, "assistant/message"), (2, "turn/end")]


def test_a_missing_directory_ends_with_its_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--db", f"sqlite:///{tmp_path / 'l.sqlite3'}", "sessions", "import", str(tmp_path / "nope")]) != 0
    assert capsys.readouterr().err.strip().splitlines()[-1] == "MVU_MISSING"
