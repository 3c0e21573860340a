"""The README's Python examples run as written, twice in a row, from a directory that is not the
repository's (as a reader runs them: the installed package, whatever the working directory)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def run_block(block: str, directory: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", block], cwd=directory, capture_output=True, text=True, timeout=120,
                          check=False)


def test_the_readme_shows_the_python_api() -> None:
    assert len(BLOCKS) >= 3


@pytest.mark.parametrize("number", range(len(BLOCKS)))
def test_each_readme_python_block_runs_twice_in_a_row(tmp_path: Path, number: int) -> None:
    # The second run finds whatever the first left in the working directory.
    for attempt in ("first", "second"):
        result = run_block(BLOCKS[number], tmp_path)
        assert result.returncode == 0, f"{attempt} run: {result.stderr}"


def test_the_state_service_example_is_served_by_mvu_serve_afterwards(tmp_path: Path) -> None:
    """The README's first example (twice), then `mvu serve` on its ledger and the README's first curl read."""
    from tests.http.support import MVU, Server

    played = []
    for _ in range(2):
        ran = run_block(BLOCKS[0], tmp_path)
        assert ran.returncode == 0, ran.stderr
        session, instance = ran.stdout.split()[:2]
        played.append((session, instance))
    assert played[0] != played[1], "each run is a new playthrough"
    server = Server.start(f"sqlite:///{tmp_path / 'service-demo.sqlite3'}")
    try:
        for session, instance in played:
            answer = httpx.get(f"{server.base}{MVU}/resources", headers=server.auth,
                               params={"scope": f'{{"authority":"local","sessionId":"{session}"}}'})
            assert answer.status_code == 200, answer.text
            assert [(r["id"], r["content"]["stat_data"]) for r in answer.json()] == [(instance, {"hp": 20, "gold": 3})]
    finally:
        assert server.stop()[0] == 0
