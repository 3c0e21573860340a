"""The guides' examples run as written: the Python blocks of the README and of docs/python-api.md
twice in a row, from a directory that is not the repository's (as a reader runs them: the
installed package, whatever the working directory), and the shell blocks against `make run`.
(docs/lang.md, docs/schema.md and docs/sillytavern.md have tests of their own beside their code.)"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

REPOSITORY = Path(__file__).resolve().parents[1]
README = REPOSITORY / "README.md"
PYTHON_GUIDES = ("README.md", "docs/python-api.md")


def python_blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (REPOSITORY / page).read_text(encoding="utf-8"), flags=re.S)


BLOCKS = [(page, number, block) for page in PYTHON_GUIDES for number, block in enumerate(python_blocks(page))]


def run_block(block: str, directory: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", block], cwd=directory, capture_output=True, text=True, timeout=120,
                          check=False)


def test_the_guides_show_the_python_api() -> None:
    # The README's first turn; the ledger API and the legacy recovery in docs/python-api.md.
    assert len(python_blocks("README.md")) >= 1 and len(python_blocks("docs/python-api.md")) >= 2


@pytest.mark.parametrize(("page", "number", "block"), BLOCKS, ids=[f"{page}#{number}" for page, number, _ in BLOCKS])
def test_each_python_block_of_the_guides_runs_twice_in_a_row(tmp_path: Path, page: str, number: int,
                                                               block: str) -> None:
    # The second run finds whatever the first left in the working directory.
    for attempt in ("first", "second"):
        result = run_block(block, tmp_path)
        assert result.returncode == 0, f"{page} block {number}, {attempt} run: {result.stderr}"


def test_the_state_service_example_is_served_by_mvu_serve_afterwards(tmp_path: Path) -> None:
    """The README's first example (twice), then `mvu serve` on its ledger and the README's first curl read."""
    from tests.http.support import MVU, Server

    played = []
    for _ in range(2):
        ran = run_block(python_blocks("README.md")[0], tmp_path)
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


SHELL_GUIDES = {"README.md": README, "docs/host-protocol.md": REPOSITORY / "docs" / "host-protocol.md"}
DEFAULT_BASE = "http://127.0.0.1:8787"
"""Where `make run` serves; the test's server has a port of its own."""


def shell_examples(path: Path) -> str:
    """A guide's shell blocks that call the API, in order, as one script."""
    blocks = re.findall(r"```sh\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)
    return "\n".join(block for block in blocks if "curl" in block or "API=" in block)


def run_against_make_run(script: str, directory: Path) -> str:
    """``script`` in ``directory`` laid out as the repository's root is after `make run` (its
    ledger and token under var/, the examples beside), against a real `mvu serve` on that ledger.
    Every curl must get an answer below 400, every command must succeed."""
    from tests.conftest import require_tool
    from tests.http.support import Server

    require_tool("jq", "the guides' shell examples")
    (directory / "examples").symlink_to(REPOSITORY / "examples")
    server = Server.start(f"sqlite:///{directory / 'var' / 'mvu.sqlite3'}", token=None)
    try:
        prelude = 'set -euo pipefail\ncurl() { command curl --fail-with-body "$@"; }\n'
        done = subprocess.run(["bash", "-c", prelude + script.replace(DEFAULT_BASE, server.base)], cwd=directory,
                              capture_output=True, text=True, timeout=300, check=False)
    finally:
        assert server.stop()[0] == 0
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def test_the_readme_curl_examples_run_against_make_run(tmp_path: Path) -> None:
    out = run_against_make_run(shell_examples(SHELL_GUIDES["README.md"]), tmp_path)
    assert '"stat_data":{"hp":20,"gold":10}' in out  # the receipt of the edit


def test_the_protocol_guides_shell_examples_run_against_make_run(tmp_path: Path) -> None:
    out = run_against_make_run(shell_examples(SHELL_GUIDES["docs/host-protocol.md"]), tmp_path)
    for shown in ('"fingerprint":"5d80f832', '"fingerprint":"2a5b4f96', '{"current":true}',
                  '"texts":["<status>\\ngold: 5\\nhp: 20\\n</status>","rules"]',
                  '{"sessionId":"s1-w1","instanceIds":["mvu:instance-'):
        assert shown in out, shown
