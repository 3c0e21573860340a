"""Every command and action of `mvu` says in one line what it does; `mvu sessions list`."""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from mvu_api.cli import build_parser, main
from mvu_store import open_ledger
from mvu_store.store_host import StoreHost


def _parsers(parser: argparse.ArgumentParser, path: str = "mvu") -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _parsers(child, f"{path} {name}")


def test_every_command_action_and_argument_has_one_line_of_help() -> None:
    parsers = dict(_parsers(build_parser()))
    assert {"mvu db upgrade", "mvu db current", "mvu db check", "mvu sessions import", "mvu sessions list",
            "mvu card inspect", "mvu status", "mvu audit", "mvu serve"} <= parsers.keys()
    for path, parser in parsers.items():
        assert parser.description, f"{path} has no description"
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                listed = {choice.dest: choice.help for choice in action._choices_actions}
                assert listed.keys() == action.choices.keys(), path
                for name, about in listed.items():
                    assert about and "\n" not in about, f"{path} {name} has no one-line help"
            elif not isinstance(action, argparse._HelpAction):
                assert action.help, f"{path}: {action.option_strings or action.dest} has no help"


def test_an_action_takes_the_global_options_before_or_after_its_name(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'l.sqlite3'}"
    for argv in (["db", "--db", url, "--json", "upgrade"], ["db", "current", "--db", url, "--json"]):
        assert main(argv) == 0
        assert json.loads(capsys.readouterr().out)["upToDate"] is True


def test_sessions_list_names_the_sessions_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'l.sqlite3'}"
    assert main(["--db", url, "db", "upgrade"]) == 0
    assert main(["--db", url, "sessions", "list"]) == 0
    assert "no sessions yet" in capsys.readouterr().out
    assert main(["--db", url, "sessions", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"sessions": []}

    async def create() -> None:
        ledger = await open_ledger(url)
        try:
            host = StoreHost(ledger)
            await host.create_session("s1", created_at=1700000000000)
            await host.create_session("s2-branch", created_at=1700000000500, parent_session="s1")
        finally:
            await ledger.close()

    asyncio.run(create())
    assert main(["--db", url, "--json", "sessions", "list"]) == 0
    listed = json.loads(capsys.readouterr().out)["sessions"]
    assert [(s["sessionId"], s["createdAt"], s["parentSession"], s["lastSeq"]) for s in listed] == [
        ("s1", 1700000000000, None, -1), ("s2-branch", 1700000000500, "s1", -1)]
    assert main(["--db", url, "sessions", "list"]) == 0
    out = capsys.readouterr().out
    assert "2 session(s)" in out and "s2-branch" in out and "2023-11-14T22:13:20" in out
