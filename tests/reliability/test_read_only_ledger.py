"""The commands that only inspect a ledger (``mvu status``, ``mvu audit``, ``mvu export``) work on a
file nobody may write, and say with a typed code when they cannot; never a traceback.

Tests run as root in CI, and root ignores file modes: a directory is made read-only by a
read-only bind mount of it (which refuses root too, ``EROFS``), and a file alone by
``chattr +i``. A process that is not root uses the modes. Where none of these is possible the
test is skipped, saying which one it needed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from mvu_api import cli
from mvu_store.errors import MvuError
from mvu_store.ledger import CommitRequest, NewResource, open_ledger

IS_ROOT = os.geteuid() == 0


async def _ledger_with_history(path: Path) -> None:
    ledger = await open_ledger(f"sqlite:///{path}")
    try:
        await ledger.create_resource(NewResource(id="mvu:a", kind="shared", initial={"stat_data": {"n": 0}},
                                                 definition={}))
        for n in range(5):
            await ledger.commit(CommitRequest("mvu:a", n, "manual", {"stat_data": {"n": n + 1}}, f"fp-{n}",
                                              {"manual": True}, operation_id=f"op-{n}"))
    finally:
        await ledger.close()


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@contextlib.contextmanager
def read_only_directory(source: Path, target: Path) -> Iterator[Path]:
    """``source`` seen read-only at ``target`` (a bind mount for root, the modes otherwise)."""
    target.mkdir()
    if not IS_ROOT:
        for entry in source.iterdir():
            entry.chmod(0o400)
        source.chmod(0o500)
        try:
            yield source
        finally:
            source.chmod(0o700)
        return
    bound = subprocess.run(["mount", "--bind", str(source), str(target)], capture_output=True)
    if bound.returncode != 0:
        pytest.skip(f"a read-only directory for root needs a bind mount, refused here: {bound.stderr!r}")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(target)], check=True, capture_output=True)
        with pytest.raises(OSError, match="Read-only file system"):
            (target / "probe").touch()  # really read-only, for root too
        yield target
    finally:
        subprocess.run(["umount", str(target)], check=True)


@contextlib.contextmanager
def read_only_file(path: Path) -> Iterator[None]:
    """``path`` itself cannot be written (its directory can)."""
    if not IS_ROOT:
        path.chmod(0o400)
        yield
        return
    marked = subprocess.run(["chattr", "+i", str(path)], capture_output=True) if shutil.which("chattr") else None
    if marked is None or marked.returncode != 0:
        pytest.skip("a read-only file for root needs chattr +i, not available here")
    try:
        with pytest.raises(PermissionError):
            path.open("r+b").close()
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def _inspect_all(capsys: pytest.CaptureFixture[str], db: Path, out: Path) -> None:
    """status, audit and export all succeed on ``db`` and see its whole history."""
    url = f"sqlite:///{db}"
    code, text, err = _run(capsys, "--db", url, "--json", "status")
    assert code == 0, err
    assert json.loads(text)["audit"] == "clean"
    code, text, err = _run(capsys, "--db", url, "--json", "audit")
    assert code == 0 and json.loads(text)["clean"] is True, err
    code, text, err = _run(capsys, "--db", url, "--json", "export", str(out))
    assert code == 0, err
    exported = json.loads((out / "mvu-instances.json").read_text())
    assert exported["resources"]["mvu:a"]["revision"] == 5


def test_inspecting_a_ledger_on_a_read_only_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    data.mkdir()
    asyncio.run(_ledger_with_history(data / "l.sqlite3"))
    before = sorted(entry.name for entry in data.iterdir())
    with read_only_directory(data, tmp_path / "ro") as seen:
        _inspect_all(capsys, seen / "l.sqlite3", tmp_path / "out")
        # A write command is refused with the condition's code, not a traceback.
        code, _, err = _run(capsys, "--db", f"sqlite:///{seen / 'l.sqlite3'}", "db", "upgrade")
        assert code == 2 and err.splitlines()[-1].startswith("MVU_STORAGE_"), err
        assert "Traceback" not in err
    assert sorted(entry.name for entry in data.iterdir()) == before  # nothing was left beside it


def test_inspecting_a_read_only_file_in_a_writable_directory(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "l.sqlite3"
    asyncio.run(_ledger_with_history(db))
    with read_only_file(db):
        _inspect_all(capsys, db, tmp_path / "out")


def test_a_journal_that_cannot_be_read_read_only_is_a_typed_refusal_naming_the_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A copy taken while a writer had commits in its ``-wal`` (the file is not whole without it),
    on a read-only directory with no ``-shm`` index: SQLite cannot read it without writing."""
    live, data = tmp_path / "live", tmp_path / "data"
    live.mkdir()
    data.mkdir()
    asyncio.run(_ledger_with_history(live / "l.sqlite3"))
    writer = sqlite3.connect(live / "l.sqlite3")
    try:
        writer.execute("PRAGMA wal_autocheckpoint=0")
        writer.execute("UPDATE ledger SET created_at = created_at + 1")
        writer.commit()
        shutil.copy(live / "l.sqlite3", data / "l.sqlite3")
        shutil.copy(live / "l.sqlite3-wal", data / "l.sqlite3-wal")
    finally:
        writer.close()
    with read_only_directory(data, tmp_path / "ro") as seen:
        for command in (["status"], ["audit"], ["export", str(tmp_path / "out")]):
            code, _, err = _run(capsys, "--db", f"sqlite:///{seen / 'l.sqlite3'}", *command)
            assert code == 2, err
            assert err.splitlines()[-1] == "MVU_STORAGE_READ_ONLY" and "Traceback" not in err
            assert str(seen / "l.sqlite3") in err
        assert not (tmp_path / "out").exists()


async def test_a_ledger_opened_read_only_refuses_writes_on_both_engines(ledger_url: str, ledger_id: str) -> None:
    ledger = await open_ledger(ledger_url, ledger_id=ledger_id)
    await ledger.create_resource(NewResource(id="mvu:a", kind="shared", initial={"stat_data": {}}, definition={}))
    await ledger.close()
    reader = await open_ledger(ledger_url, ledger_id=ledger_id, migrate_to_head=False, read_only=True)
    try:
        assert (await reader.head("mvu:a")).revision == 0
        with pytest.raises(MvuError) as refused:
            await reader.commit(CommitRequest("mvu:a", 0, "manual", {"stat_data": {"n": 1}}, "fp", {"manual": True},
                                              operation_id="op"))
        assert refused.value.code == "MVU_STORAGE_READ_ONLY"
        assert (await reader.head("mvu:a")).revision == 0
    finally:
        await reader.close()


def test_the_inspecting_commands_on_a_damaged_file_report_it_without_a_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.ledger.test_storage_conditions import damaged_ledger_file

    path = asyncio.run(damaged_ledger_file(tmp_path))
    url = f"sqlite:///{path}"
    code, text, err = _run(capsys, "--db", url, "--json", "audit")
    findings = json.loads(text)["findings"]
    assert code == 1 and findings and {finding["check"] for finding in findings} == {"integrity"}, err
    code, text, err = _run(capsys, "--db", url, "--json", "status")
    assert code == 1 and json.loads(text)["audit"].endswith("finding(s)"), err
    code, _, err = _run(capsys, "--db", url, "export", str(tmp_path / "out"))
    assert code == 2 and err.splitlines()[-1] == "MVU_STORAGE_CORRUPT" and str(path) in err
    assert "Traceback" not in err and not (tmp_path / "out").exists()
