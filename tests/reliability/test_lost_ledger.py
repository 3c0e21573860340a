"""A database file deleted under a running ``mvu serve``: writes are refused while it runs, and a
restart does not create an empty ledger in its place (which would present every acknowledged
write as never made) until an operator asks for a new one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.http.support import MVU, SHARED, Server, scope, seed


def _edit(server: Server, n: int, operation: str) -> tuple[int, dict[str, object]]:
    """Set the shared resource's ``n`` on top of its current revision."""
    with server.client() as client:
        read = client.get(f"{MVU}/resource", params={"id": SHARED[0], "scope": json.dumps(scope("s1"))})
        assert read.status_code == 200, read.text
        answer = client.post(f"{MVU}/update", json={
            "id": SHARED[0], "scope": scope("s1"), "content": {"stat_data": {"n": n}},
            "expectedRevision": read.json()["revision"], "operationId": operation})
    return answer.status_code, answer.json()


def _serve_once(db: str) -> subprocess.CompletedProcess[str]:
    """``mvu serve`` that is expected to refuse to start (it would otherwise run for ever)."""
    return subprocess.run([sys.executable, "-m", "mvu_api.cli", "serve", "--db", db, "--port", "0"],
                          capture_output=True, text=True, timeout=120, check=False)


def test_a_ledger_deleted_under_the_server_is_not_replaced_by_an_empty_one(tmp_path: Path) -> None:
    seeded = seed(tmp_path)
    path = tmp_path / "ledger.sqlite3"
    server = Server.start(seeded.db, token=None)  # the token file is made, as `make run` does
    token_file = Path(f"{path}.token")
    server.token = token_file.read_text().strip()
    try:
        status, body = _edit(server, 1, "before")
        assert status == 200, body
        path.unlink()
        status, body = _edit(server, 2, "after")
        assert (status, body["code"]) == (500, "MVU_STORAGE_GONE"), body
    finally:
        code, _, log = server.stop()
    assert code == 0 and "Traceback" not in log

    refused = _serve_once(seeded.db)
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.splitlines()[-1] == "MVU_STORAGE_GONE" and str(path) in refused.stderr
    assert "Traceback" not in refused.stderr
    assert not path.exists()  # nothing made in its place

    # An operator who wants a new ledger there says so; then it serves.
    upgraded = subprocess.run([sys.executable, "-m", "mvu_api.cli", "--db", seeded.db, "--json", "db", "upgrade"],
                              capture_output=True, text=True, timeout=120, check=False)
    assert upgraded.returncode == 0 and json.loads(upgraded.stdout)["upToDate"] is True, upgraded.stderr
    fresh = Server.start(seeded.db, token=None)
    try:
        assert "token:    from" in fresh.stdout()  # the old token file still stands
    finally:
        assert fresh.stop()[0] == 0


def test_a_first_start_creates_the_ledger(tmp_path: Path) -> None:
    """What `make run` does on a fresh clone: nothing there yet, so the ledger and its token are made."""
    db = f"sqlite:///{tmp_path / 'var' / 'mvu.sqlite3'}"
    server = Server.start(db, token=None)
    try:
        assert "generated now" in server.stdout()
    finally:
        assert server.stop()[0] == 0
    assert (tmp_path / "var" / "mvu.sqlite3").exists()
