"""What every ``mvu`` command shares: the global options and how a command is declared, how it
opens the ledger and how it prints (a table for people, one JSON value with ``--json``).

:mod:`mvu_api.cli` and :mod:`mvu_api.chat_cli` declare their commands with it; like them, it
imports the store and rich only when a command runs.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from mvu_store.ledger import Ledger

DEFAULT_DB = "sqlite:///./var/mvu.sqlite3"

Handler = Callable[[argparse.Namespace], Coroutine[Any, Any, int]]


def emit(args: argparse.Namespace, payload: dict[str, Any], render: Callable[[Console], None]) -> None:
    if args.json:
        import json

        print(json.dumps(payload, ensure_ascii=False, sort_keys=True))
    else:
        from rich.console import Console

        render(Console())


async def open_ledger_of(args: argparse.Namespace, *, writes: bool = False) -> Ledger:
    """Open the ledger; only commands that write may create or migrate it (`db upgrade` does).
    The others open it read-only, so they work on a file or file system nobody may write."""
    from mvu_store.ledger import open_ledger

    return await open_ledger(args.db, ledger_id=args.ledger_id, migrate_to_head=writes, read_only=not writes)


def global_options(parser: argparse.ArgumentParser, *, top: bool, db_help: str | None = None) -> None:
    """``--db``, ``--ledger-id`` and ``--json``, on the top-level parser (``top``: with the
    defaults) and again on each command's, where they default to nothing so that a value given
    before the command's name stands unless one comes after it."""
    def default(value: object) -> object:
        return value if top else argparse.SUPPRESS

    parser.add_argument("--db", default=default(None), metavar="URL",
                        help=db_help or f"database URL (default: $MVU_DATABASE_URL or {DEFAULT_DB})")
    parser.add_argument("--ledger-id", default=default("default"), metavar="ID",
                        help="which ledger in the database (default: the one named 'default')")
    parser.add_argument("--json", action="store_true", default=default(False), help="print machine-readable JSON")


def command(commands: Any, name: str, handler: Handler, *, help: str, db_help: str | None = None,
            description: str | None = None) -> argparse.ArgumentParser:
    """A command (or a group's action), with its one line of help, also heading its own --help."""
    parser: argparse.ArgumentParser = commands.add_parser(name, help=help, description=description or help)
    global_options(parser, top=False, db_help=db_help)
    parser.set_defaults(handler=handler)
    return parser


def group(commands: Any, name: str, *, help: str) -> Any:
    """A command whose actions are commands of their own (``mvu db upgrade``): each with its
    help, and the global options before or after the action's name."""
    parser: argparse.ArgumentParser = commands.add_parser(name, help=help, description=help)
    global_options(parser, top=False)
    return parser.add_subparsers(dest="action", required=True, metavar="ACTION")
