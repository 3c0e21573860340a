"""`mvu demo`: the bundled card reads, the scripted chat does what its schema says, the CLI runs it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mvu_api.cli import main
from mvu_api.demo import changed_paths, leaves, run_demo
from mvu_store.cards import read_card, summarize
from mvu_store.demo import TURNS, sample_card_bytes
from mvu_store.lang import initialize_variables


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_read_card_finds_the_initvar_schema_and_greeting() -> None:
    card = read_card(sample_card_bytes())
    assert (card.spec, card.name) == ("chara_card_v3", "Tamsin of Ashgrove Road")
    assert len(card.initvar) == 1
    assert initialize_variables(list(card.initvar))["stat_data"]["hero"]["hp"] == 30
    assert card.schema_source is not None and "registerMvuSchema(Schema)" in card.schema_source
    assert "_.clamp" in card.schema_source and "z.coerce.number()" in card.schema_source
    assert card.greetings and card.greetings[0].startswith("The fog lies thick")
    assert card.problems == ()
    report = summarize(card)
    assert report["schema"] == {"found": True, "chars": len(card.schema_source), "interpreterVersion": 2,
                                "compiles": True}
    assert [entry["status"] for entry in report["initvar"]] == ["ok"]
    assert report["problems"] == []


def _check_report(report: dict[str, Any]) -> None:
    turns = report["turns"]
    assert len(turns) == len(TURNS) == 5
    assert [turn["outcome"] for turn in turns] == ["reply", "reply", "failed", "reply", "reply"]
    assert report["initial"]["revision"] == 0
    assert report["initial"]["statData"]["hero"] == {"name": "Wren", "hp": 30, "max_hp": 30, "gold": 5, "level": 1}
    first, second, third, fourth, fifth = (turn["statData"] for turn in turns)
    assert (first["hero"]["hp"], first["hero"]["gold"]) == (24, 20)  # _.set, _.add
    # The JSON Patch wrote the string "1", _.set the string '2': z.coerce.number() made numbers.
    assert second["pack"]["torch"] == 1 and type(second["pack"]["torch"]) is int
    assert second["hero"]["level"] == 2 and type(second["hero"]["level"]) is int
    assert (second["quest"]["stage"], second["weather"]) == ("bridge", "clear")
    # The prototype path is fatal: the whole reply is refused, even its harmless _.add.
    assert (turns[2]["error"], turns[2]["revision"], turns[2]["diagnostics"]) == ("MVU_PATH", 3, [])
    assert third == second
    # _.add(hp, 50) on 24 is clamped to max_hp; gold below 0 is one command's diagnostic.
    assert fourth["hero"]["hp"] == 30 == fourth["hero"]["max_hp"]
    assert fourth["hero"]["gold"] == 20 and fourth["quest"]["stage"] == "tower"
    assert [(d["code"], d["command"]) for d in turns[3]["diagnostics"]] == [
        ("MVU_SCHEMA", "_.add(hero.gold, -100);//the troll's toll")]
    assert turns[3]["error"] is None
    assert "bread" not in fifth["pack"] and fifth["quest"]["stage"] == "bell"  # pickBy dropped the 0
    assert [turn["revision"] for turn in turns] == [1, 2, 3, 4, 5]

    [receipt] = report["failedReceipts"]
    assert (receipt["kind"], receipt["revision"], receipt["error"], receipt["turn"]) == ("failed", 3, "MVU_PATH", 3)
    assert receipt["statData"] == second
    assert report["conflict"]["code"] == "REVISION_CONFLICT"
    assert (report["conflict"]["expectedRevision"], report["conflict"]["currentRevision"]) == (2, 5)
    assert report["retry"]["revision"] == 6 and report["retry"]["statData"]["hero"]["gold"] == 10
    assert [(entry["kind"], entry["revision"], entry["error"]) for entry in report["history"]] == [
        ("reply", 1, None), ("reply", 2, None), ("failed", 3, "MVU_PATH"), ("reply", 4, None), ("reply", 5, None),
        ("manual", 6, None)]
    assert report["history"][0]["changed"] == ["hero.gold", "hero.hp"]
    assert report["history"][2]["changed"] == []
    assert report["history"][5]["changed"] == ["hero.gold"]
    assert report["audit"] == {"clean": True, "findings": []}


async def test_run_demo_on_a_temporary_ledger() -> None:
    report = await run_demo()
    assert report["temporary"] is True
    _check_report(report)


def test_cli_demo_prints_the_story(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "demo")
    assert code == 0
    for expected in ("stat_data after turn 5 (revision 5)", "MVU_PATH", "MVU_SCHEMA", "REVISION_CONFLICT",
                     "committed at revision 6", "history (oldest first)", "audit: clean"):
        assert expected in out, expected


@pytest.mark.parametrize("argv", [("--json", "demo"), ("demo", "--json")])
def test_cli_demo_json_parses(capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]) -> None:
    code, out, _ = run(capsys, *argv)
    assert code == 0
    _check_report(json.loads(out))


def test_demo_plays_on_an_empty_ledger_and_refuses_one_with_data(
        ledger_url: str, ledger_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--db", ledger_url, "--ledger-id", ledger_id, "--json", "demo")
    assert code == 0
    report = json.loads(out)
    assert report["temporary"] is False
    _check_report(report)
    code, _, err = run(capsys, "--db", ledger_url, "--ledger-id", ledger_id, "demo")
    assert code == 2
    assert "already holds data" in err
    assert err.strip().splitlines()[-1] == "MVU_CONFIG"
    # What the first run wrote is still there, and still audits clean.
    code, out, _ = run(capsys, "--db", ledger_url, "--ledger-id", ledger_id, "--json", "audit")
    assert code == 0 and json.loads(out)["clean"] is True


def test_demo_ignores_the_environment_ledger(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MVU_DATABASE_URL", f"sqlite:///{tmp_path / 'real.sqlite3'}")
    code, out, _ = run(capsys, "--json", "demo")
    assert code == 0 and json.loads(out)["temporary"] is True
    assert not (tmp_path / "real.sqlite3").exists()
    code, out, _ = run(capsys, "demo", "--db", f"sqlite:///{tmp_path / 'chosen.sqlite3'}", "--json")
    assert code == 0 and json.loads(out)["temporary"] is False
    assert (tmp_path / "chosen.sqlite3").exists()


def test_changed_paths() -> None:
    assert leaves({"a": {"b": 1, "c": []}, "d": [1, {"e": 2}]}) == {"a.b": 1, "a.c": [], "d[0]": 1, "d[1].e": 2}
    assert changed_paths({"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 3, "x": 0}) == ["b", "x", "c"]
    assert changed_paths({"a": 1}, {"a": True}) == ["a"]


@pytest.mark.parametrize("width", [40, 80, 200])
async def test_the_demo_text_is_never_cut(width: int) -> None:
    """Rich cuts what does not fit with "…": every heading and line of the story appears whole,
    at any terminal width (lines may wrap)."""
    from io import StringIO

    from rich.console import Console

    from mvu_api.demo import render

    report = await run_demo()
    out = StringIO()
    render(report, Console(file=out, width=width, color_system=None))
    text = out.getvalue()
    assert "…" not in text
    flowing = " ".join(text.split())
    for turn in report["turns"]:
        assert f"turn {turn['turn']}: {' '.join(turn['shows'].split())}" in flowing
