"""The `mvu` command: status, audit, db; errors end with the code on the last stderr line."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from mvu_api.cli import main
from mvu_store.ledger import open_ledger


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_status_reports_location_usage_and_audit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'var' / 'mvu.sqlite3'}"
    code, _, err = run(capsys, "--db", url, "status")
    assert code != 0  # a read-only command never creates a ledger, not even an empty file
    assert err.strip().splitlines()[-1] == "MVU_MISSING"
    assert not (tmp_path / "var").exists()
    assert run(capsys, "--db", url, "db", "upgrade")[0] == 0
    code, out, _ = run(capsys, "--db", url, "--json", "status")
    assert code == 0
    status = json.loads(out)
    assert status["audit"] == "clean"
    assert status["usedBytes"] == 0 and status["limitBytes"] == 32 * 1024 * 1024
    assert status["formatVersion"] == 1
    assert (tmp_path / "var" / "mvu.sqlite3").exists()


def test_db_upgrade_current_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'l.sqlite3'}"
    assert run(capsys, "--db", url, "--json", "db", "upgrade")[0] == 0
    code, out, _ = run(capsys, "--db", url, "--json", "db", "check")
    assert code == 0 and json.loads(out)["upToDate"] is True


def test_audit_finds_tampering_and_exits_non_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "l.sqlite3"
    url = f"sqlite:///{path}"
    assert run(capsys, "--db", url, "db", "upgrade")[0] == 0
    assert run(capsys, "--db", url, "--json", "audit")[0] == 0
    with sqlite3.connect(path) as raw:
        raw.execute("UPDATE ledger SET used_bytes = 99")
    code, out, _ = run(capsys, "--db", url, "--json", "audit")
    assert code == 1
    report = json.loads(out)
    assert report["clean"] is False
    assert [finding["check"] for finding in report["findings"]] == ["usage"]


def test_failure_prints_the_code_last(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--db", "mysql://nowhere/x", "status")
    assert code != 0
    assert err.strip().splitlines()[-1] == "MVU_CONFIG"


def test_read_only_commands_keep_the_stored_limits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'l.sqlite3'}"

    async def create() -> None:
        ledger = await open_ledger(url, ledger_limit_bytes=64 * 1024 * 1024, state_limit_bytes=4 * 1024 * 1024)
        await ledger.close()

    asyncio.run(create())
    for command in ("status", "audit"):
        assert run(capsys, "--db", url, "--json", command)[0] == 0
    _, out, _ = run(capsys, "--db", url, "--json", "status")
    status = json.loads(out)
    assert (status["limitBytes"], status["stateLimitBytes"]) == (64 * 1024 * 1024, 4 * 1024 * 1024)


def test_an_unreachable_server_ends_with_a_code(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--db", "postgresql://nobody@127.0.0.1:1/none", "status")
    assert code != 0
    assert err.strip().splitlines()[-1] == "MVU_STORAGE_BUSY"


@pytest.mark.parametrize("order", [
    ("--db", "{url}", "--json", "audit"),
    ("audit", "--db", "{url}", "--json"),
    ("--json", "audit", "--db", "{url}"),
    ("--db", "{url}", "audit", "--json"),
])
def test_global_options_work_before_or_after_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         order: tuple[str, ...]) -> None:
    url = f"sqlite:///{tmp_path / 'l.sqlite3'}"
    assert run(capsys, "db", "upgrade", "--db", url)[0] == 0
    code, out, _ = run(capsys, *(part.format(url=url) for part in order))
    assert code == 0
    assert json.loads(out) == {"clean": True, "findings": []}


def test_an_option_after_the_command_wins_over_the_same_one_before(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'l.sqlite3'}"
    assert run(capsys, "--db", url, "--ledger-id", "other", "db", "upgrade")[0] == 0
    code, out, _ = run(capsys, "--ledger-id", "default", "--db", url, "status", "--ledger-id", "other", "--json")
    assert code == 0 and json.loads(out)["ledgerId"] == "other"
    # Given only before the command, it still counts.
    code, out, _ = run(capsys, "--ledger-id", "other", "status", "--db", url, "--json")
    assert code == 0 and json.loads(out)["ledgerId"] == "other"


def test_help_imports_neither_the_store_nor_its_libraries() -> None:
    """`mvu --help` answers at once because nothing heavy loads before the arguments are parsed."""
    probe = ("import sys\nfrom mvu_api.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
             "heavy = ('sqlalchemy', 'fastapi', 'uvicorn', 'alembic', 'rich', 'pydantic', 'tree_sitter', 'mvu_store')\n"
             "print(sorted(name for name in heavy if name in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "usage: mvu" in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "[]"
