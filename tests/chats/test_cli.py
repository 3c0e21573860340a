"""``mvu chat import`` / ``mvu chat export``: the summary, the card, the same file again, refusals
ending with their code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mvu_api.cli import main
from tests.chats.synthetic import ChatSpec, chat_lines, chat_text, write_chat
from tests.chats.test_import import ERIN_SCHEMA


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def card_file(path: Path) -> Path:
    book = {"entries": [{"comment": "[initvar]", "enabled": False,
                         "content": "Erin:\n  affection: [10, '0 to 100']\n  gold: 5\nturn: 0\n"},
                        {"comment": "schema", "enabled": True, "content": ERIN_SCHEMA}]}
    path.write_text(json.dumps({"spec": "chara_card_v2", "spec_version": "2.0",
                                "data": {"name": "Erin", "first_mes": "Hello.", "character_book": book}}))
    return path


def test_import_with_a_card_then_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = f"sqlite:///{tmp_path / 'l.sqlite3'}"
    chat = write_chat(tmp_path / "chat.jsonl", ChatSpec(language="en", turns=4, gap=0, edited=(3,)))
    card = card_file(tmp_path / "erin.json")
    code, out, _ = run(capsys, "--db", db, "chat", "import", str(chat), "--card", str(card), "--session", "erin-1",
                       "--json")
    assert code == 0
    summary = json.loads(out)
    assert summary["sessionId"] == "erin-1" and summary["templateFrom"] == "card" and summary["imported"]
    assert summary["transitions"] == {"agreed": 5, "differed": 1, "unchecked": 1}
    assert [difference["paths"] for difference in summary["differences"]] == [["/Erin/gold"]]
    code, out, _ = run(capsys, "--db", db, "--json", "chat", "import", str(chat), "--session", "erin-1")
    assert code == 0 and json.loads(out) == {**summary, "imported": False}
    code, out, _ = run(capsys, "--db", db, "chat", "export", "erin-1", str(tmp_path / "back.jsonl"), "--json")
    assert code == 0 and json.loads(out)["messages"] == summary["messages"]
    assert (tmp_path / "back.jsonl").read_bytes() == chat.read_bytes()
    # On a terminal: a table, the difference by message and line.
    code, out, _ = run(capsys, "--db", db, "chat", "import", str(chat))
    assert code == 0 and "already imported" in out and "/Erin/gold" in out


def test_a_bad_file_ends_with_its_code_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = f"sqlite:///{tmp_path / 'l.sqlite3'}"
    lines = chat_text(chat_lines(ChatSpec(language="zh", turns=2))).splitlines()
    lines[3] = b'{"mes": "a", "variables": [1]}'
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"\n".join(lines))
    code, _, err = run(capsys, "--db", db, "chat", "import", str(bad))
    assert code == 2 and err.strip().splitlines()[-1] == "MVU_JSON" and "line 4" in err
    code, out, _ = run(capsys, "--db", db, "--json", "status")
    assert code == 0 and json.loads(out)["usedBytes"] == 0
    code, _, err = run(capsys, "--db", db, "chat", "export", "st-nothing", str(tmp_path / "out.jsonl"))
    assert code == 2 and err.strip().splitlines()[-1] == "MVU_MISSING" and not (tmp_path / "out.jsonl").exists()
