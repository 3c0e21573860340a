"""``mvu chat import`` / ``mvu chat export``: SillyTavern chat files in and out (docs/sillytavern.md).

Registered by ``mvu_api.cli.build_parser``; like every command it imports the store only when it
runs.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mvu_api.command_line import command, emit, group, open_ledger_of

if TYPE_CHECKING:
    from rich.console import Console

    from mvu_store.chats import ChatImport, Progress

SHOWN_DIFFERENCES = 20


def register(commands: Any) -> None:
    """Add ``chat import`` and ``chat export`` to the ``mvu`` parser."""
    chat = group(commands, "chat", help="SillyTavern chat files (.jsonl) in and out of the ledger: import, export")
    into = command(chat, "import", _import, help="bring a SillyTavern chat file into the ledger as one session",
                   description="one session per chat file, every recorded MagVarUpdate state a version, each reply "
                               "checked against the states around it (docs/sillytavern.md)")
    into.add_argument("target", metavar="FILE", help="the chat file (.jsonl)")
    into.add_argument("--card", metavar="CARD", help="the character's card (.png or .json); its declaration checks "
                                                     "each reply and governs the chat from then on")
    into.add_argument("--session", metavar="ID", help="the session to create (default: st- and the file's digest, "
                                                      "so the same file is one session)")
    out = command(chat, "export", _export, help="write a session as a SillyTavern chat file",
                  description="a SillyTavern chat file with the session's messages and, per message and swipe, "
                              "the variables as MagVarUpdate stores them (docs/sillytavern.md)")
    out.add_argument("target", metavar="SESSION", help="the session id")
    out.add_argument("file", help="the chat file to write (.jsonl)")


async def _import(args: argparse.Namespace) -> int:
    import asyncio

    from mvu_store.cards import read_card
    from mvu_store.chats import import_chat

    path = Path(args.target)
    card = None
    if args.card is not None:
        card_path = Path(args.card)
        card = read_card(await asyncio.to_thread(card_path.read_bytes), name=card_path.stem)
    ledger = await open_ledger_of(args, writes=True)
    try:
        size = await asyncio.to_thread(lambda: path.stat().st_size if path.is_file() else 0)
        summary = await _with_bar(args, size, lambda progress: import_chat(
            ledger, path, card=card, session_id=args.session, progress=progress))
    finally:
        await ledger.close()
    emit(args, summary.to_dict(), lambda console: _render(console, summary))
    return 0


async def _with_bar(args: argparse.Namespace, size: int, work: Callable[[Progress | None], Any]) -> ChatImport:
    """A progress bar of the bytes read, on stderr (never with --json)."""
    if args.json:
        result: ChatImport = await work(None)
        return result
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

    columns = (TextColumn("importing"), BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("import", total=size)
        result = await work(lambda done: bar.update(task, completed=done))
        return result


def _render(console: Console, summary: ChatImport) -> None:
    from rich.table import Table
    from rich.text import Text

    verb = "imported" if summary.imported else "already imported (nothing written)"
    table = Table(show_header=False, title=Text(f"chat {verb}: session {summary.session_id}"))
    table.add_row("template", Text(f"{summary.template_id} (from {summary.template_from})"))
    table.add_row("instance", Text(str(summary.instance_id)))
    table.add_row("messages / states", f"{summary.messages} / {summary.states}")
    table.add_row("branches (swipes)", str(len(summary.branches)))
    table.add_row("transitions", f"{summary.agreed} agreed, {summary.differed} differed, "
                                 f"{summary.unchecked} with no state before them")
    table.add_row("next turn", f"{summary.next_turn} (events from seq {summary.last_seq + 1})")
    console.print(table)
    for difference in summary.differences[:SHOWN_DIFFERENCES]:
        where = difference.get("error") or ", ".join(difference["paths"])
        console.print(Text(f"message {difference['message']} (line {difference['line']}), swipe "
                           f"{difference['swipe']}: {where}"))
    if len(summary.differences) > SHOWN_DIFFERENCES:
        console.print(f"... and {len(summary.differences) - SHOWN_DIFFERENCES} more (--json lists them all)")


async def _export(args: argparse.Namespace) -> int:
    from mvu_store.chats import export_chat

    ledger = await open_ledger_of(args)
    try:
        messages = await export_chat(ledger, args.target, args.file)
    finally:
        await ledger.close()
    payload = {"sessionId": args.target, "file": str(args.file), "messages": messages}
    emit(args, payload, lambda console: console.print(f"wrote {messages} messages of {args.target} to {args.file}"))
    return 0
