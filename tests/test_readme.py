"""The README's Python examples run as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_blocks_run(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "the README shows the Python API"
    for block in blocks:
        result = subprocess.run(
            [sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=120,
            env={**os.environ, "PYTHONPATH": str(README.parent)},
        )
        assert result.returncode == 0, result.stderr


def test_the_state_service_example_is_served_by_mvu_serve_afterwards(tmp_path: Path) -> None:
    """The README's first example, then `mvu serve` on its ledger and the README's first curl read."""
    from tests.http.support import MVU, Server

    first = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)[0]
    ran = subprocess.run([sys.executable, "-c", first], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(README.parent)})
    assert ran.returncode == 0, ran.stderr
    instance = ran.stdout.split()[0]
    server = Server.start(f"sqlite:///{tmp_path / 'service-demo.sqlite3'}")
    try:
        answer = httpx.get(f"{server.base}{MVU}/resources", headers=server.auth,
                           params={"scope": '{"authority":"local","sessionId":"s1"}'})
        assert answer.status_code == 200, answer.text
        assert [(r["id"], r["content"]["stat_data"]) for r in answer.json()] == [(instance, {"hp": 20, "gold": 3})]
    finally:
        assert server.stop()[0] == 0
