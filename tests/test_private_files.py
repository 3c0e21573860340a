"""Every file and folder mvu creates through the Python API is its owner's alone (0600 / 0700),
whatever the process's umask: ledgers and their journals, session logs, exports."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from mvu_store import MvuService, open_ledger
from mvu_store.ledger.transfer import export_directory
from mvu_store.memory_host import MemoryHost
from mvu_store.store_host import StoreHost, play_turn
from tests.service.support import HERO


@pytest.fixture(autouse=True)
def lax_umask() -> Iterator[None]:
    """The usual shell umask, which alone would make files 0644 and folders 0755."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def _modes(root: Path) -> dict[str, int]:
    return {str(path.relative_to(root)): stat.S_IMODE(path.stat().st_mode) for path in [root, *root.rglob("*")]}


def _private(root: Path) -> dict[str, int]:
    return {str(path.relative_to(root)): 0o700 if path.is_dir() else 0o600 for path in [root, *root.rglob("*")]}


def test_a_ledger_its_journals_and_its_export_are_private(tmp_path: Path) -> None:
    ledger_folder = tmp_path / "ledgers" / "deeper"
    export_folder = tmp_path / "exports" / "deeper"

    async def play() -> set[str]:
        ledger = await open_ledger(f"sqlite:///{ledger_folder / 'mvu.sqlite3'}")
        try:
            host = StoreHost(ledger)
            service = MvuService(ledger=ledger, host=host)
            await service.discover(definition=HERO)
            await host.create_session("s1", created_at=1000)
            await service.select_character(session_id="s1", character_id=HERO["character_id"])
            await play_turn(service, host, "s1", turn=1, user="rest", reply="_.set('hp', 50, 70);", message_id="m1")
            open_files = {path.name for path in ledger_folder.iterdir()}  # while open: the journals too
            await export_directory(ledger, export_folder)
            return open_files
        finally:
            await ledger.close()

    open_files = asyncio.run(play())
    assert {"mvu.sqlite3", "mvu.sqlite3-wal", "mvu.sqlite3-shm"} <= open_files
    for root in (tmp_path / "ledgers", tmp_path / "exports"):
        assert _modes(root) == _private(root)
    assert any(export_folder.glob("mvu-*.json"))


def test_a_memory_hosts_logs_are_private(tmp_path: Path) -> None:
    folder = tmp_path / "logs" / "deeper"
    host = MemoryHost(path=folder)
    host.create_session("s1", created_at=1000)
    host.append("s1", "turn/start", {"turn": 1})
    assert (folder / "s1.jsonl").exists()
    assert _modes(tmp_path / "logs") == _private(tmp_path / "logs")
