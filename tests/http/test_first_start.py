"""A first ``mvu serve`` that fails leaves nothing behind, and the next start is a first start.

Real processes on loopback: a port held by another socket, a start refused after the token file
and folders were made, then a start that works and shows the token it generated.
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import httpx

from tests.http.support import API, Server


def _serve(*args: str) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if key != "MVU_TOKEN"}
    return subprocess.run([sys.executable, "-m", "mvu_api.cli", "serve", *args], capture_output=True, text=True,
                          env=environment, timeout=120, check=False)


def _first_start_shows_its_token(db: str, token_file: Path) -> None:
    server = Server.start(db, token=None)
    try:
        token = token_file.read_text().strip()
        assert f"  token:    {token}" in server.lines, server.lines
        assert any("generated now and shown only this once" in line for line in server.lines)
        answer = httpx.get(f"{server.base}{API}/openapi.json", headers={"Authorization": f"Bearer {token}"})
        assert answer.status_code == 200
    finally:
        assert server.stop()[0] == 0


def test_a_port_in_use_names_the_option_and_creates_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "var"
    db = f"sqlite:///{folder / 'mvu.sqlite3'}"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = _serve("--db", db, "--port", str(port))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert lines[-1] == "MVU_CONFIG"
    assert f"127.0.0.1:{port}" in lines[-2] and "--port" in lines[-2] and "make run PORT=" in lines[-2]
    assert not folder.exists()  # no folder, no token file, no database
    _first_start_shows_its_token(db, folder / "mvu.sqlite3.token")


def test_a_start_refused_after_it_made_files_takes_them_back(tmp_path: Path) -> None:
    """The ledger id is refused when the ledger opens, after the token file and its folders were
    made: they go again, and the retry is a first start, not a lost ledger."""
    folder = tmp_path / "new" / "deeper"
    db = f"sqlite:///{folder / 'mvu.sqlite3'}"
    done = _serve("--db", db, "--port", "0", "--ledger-id", "not an id!")
    assert done.returncode == 2 and done.stderr.strip().splitlines()[-1] == "MVU_CONFIG", done.stderr
    assert list(tmp_path.iterdir()) == []
    _first_start_shows_its_token(db, folder / "mvu.sqlite3.token")
    # What the start made is its owner's alone.
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o700
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()} == {
        p.name: 0o600 for p in folder.iterdir()}


def test_a_token_file_alone_says_how_to_start_afresh(tmp_path: Path) -> None:
    """What an older mvu left when its first start failed: refused (it may be a lost ledger's),
    with the way out named."""
    token_file = tmp_path / "mvu.sqlite3.token"
    token_file.write_text("a-token-of-sufficient-length\n")
    token_file.chmod(0o600)
    done = _serve("--db", f"sqlite:///{tmp_path / 'mvu.sqlite3'}", "--port", "0")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert lines[-1] == "MVU_STORAGE_GONE"
    assert "shows that it existed" in lines[-2] and f"delete {token_file} instead" in lines[-2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mvu.sqlite3.token"]


def test_a_lost_ledger_refused_keeps_no_token_file_of_this_start(tmp_path: Path) -> None:
    (tmp_path / "mvu.sqlite3-wal").write_bytes(b"")  # a trace of a ledger that was there
    done = _serve("--db", f"sqlite:///{tmp_path / 'mvu.sqlite3'}", "--port", "0")
    assert done.returncode == 2 and done.stderr.strip().splitlines()[-1] == "MVU_STORAGE_GONE"
    assert "instead" not in done.stderr  # more than a token file: no advice to delete it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mvu.sqlite3-wal"]
