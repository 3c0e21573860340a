"""``examples/node-host.mjs``, a host that is not Python, plays a whole chat against a real
``mvu serve`` on a fresh ledger; what it reports is checked against what the server says."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_tool
from tests.http.support import API, MVU, Server, scope, served

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "node-host.mjs"


@pytest.fixture(scope="module")
def node() -> str:
    return require_tool("node", "examples/node-host.mjs")


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with served(f"sqlite:///{tmp_path_factory.mktemp('node') / 'mvu.sqlite3'}") as server:
        yield server


def run(node: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if key not in ("MVU_URL", "MVU_TOKEN")}
    return subprocess.run([node, str(EXAMPLE)], env={**environment, **env}, capture_output=True, text=True,
                          timeout=120, check=False)


def q(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def test_the_node_host_plays_a_whole_chat_and_reports_what_the_server_holds(node: str, fresh: Server) -> None:
    done = run(node, {"MVU_URL": f"{fresh.base}{API}", "MVU_TOKEN": fresh.token})
    assert done.returncode == 0, done.stderr
    last = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(last) == {"sessionId", "instanceId", "revision"}
    with fresh.client() as client:
        read = client.get(f"{MVU}/resource", params={"id": last["instanceId"], "scope": q(scope(last["sessionId"]))})
        assert read.status_code == 200, read.text
        record = read.json()
        assert record["revision"] == last["revision"] and read.headers["etag"].startswith(f'"r{last["revision"]}-')
        # The swiped third reply, then the edit of gold, on the state after turn 2.
        assert record["content"]["stat_data"] == {"hp": 25, "max_hp": 30, "gold": 99, "pack": {"rope": 2, "bread": 1}}
        branch = client.get(f"{MVU}/sessions/{last['sessionId']}").json()
        assert branch["lastSeq"] >= 0 and branch["parentSession"]
        history = client.get(f"{MVU}/history", params={"id": last["instanceId"], "scope": q(scope(last["sessionId"]))})
        assert [(entry["kind"], entry["inherited"]) for entry in history.json()] == [
            ("reply", True), ("reply", True), ("reply", False), ("manual", False)]
        # The original chat kept its own third reply.
        parent = branch["parentSession"]
        [original] = client.get(f"{MVU}/resources", params={"scope": q(scope(parent))}).json()
        assert original["content"]["stat_data"] == {"hp": 10, "max_hp": 30, "gold": 20,
                                                    "pack": {"rope": 1, "bread": 1}}
        assert original["revision"] == 3


def test_the_node_host_fails_with_a_message_on_an_answer_it_did_not_expect(node: str, fresh: Server) -> None:
    done = run(node, {"MVU_URL": f"{fresh.base}{API}", "MVU_TOKEN": "not-the-token-0123456789"})
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip().splitlines()[-1].startswith("node-host: POST /cards")
    assert "401" in done.stderr and "MVU_UNAUTHORIZED" in done.stderr


def test_the_node_host_needs_its_url_and_token(node: str) -> None:
    done = run(node, {"MVU_URL": "http://127.0.0.1:9/pmp-dsh-tavern/api/v1"})
    assert done.returncode == 2 and "MVU_TOKEN" in done.stderr
