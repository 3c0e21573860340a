"""The `mvu` command: ledger status, migrations, audits, import and export, session logs, card inspection,
a demo, the HTTP server.

Every command takes --db URL (default: $MVU_DATABASE_URL, else the embedded ledger at
sqlite:///./var/mvu.sqlite3), --ledger-id and --json (for scripts, where it reports something),
before or after the command's name (`mvu audit --json` is `mvu --json audit`), and on failure
exits non-zero with the error code alone on the last line of standard error.
"""

# Each command imports the store, rich and the server when it runs, not when this module loads:
# importing them costs about a second, which `mvu --help` and a mistyped option should not wait.
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from mvu_api import chat_cli
from mvu_api.command_line import DEFAULT_DB, Handler, command, emit, global_options, group, open_ledger_of

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from mvu_store.ledger import Step

T = TypeVar("T")


async def cmd_status(args: argparse.Namespace) -> int:
    from rich.table import Table

    from mvu_store.ledger import FORMAT_VERSION, head_revision

    ledger = await open_ledger_of(args)
    try:
        usage = await ledger.usage()
        findings = await ledger.audit()
    finally:
        await ledger.close()
    payload = {
        "database": ledger.url,
        "ledgerId": ledger.ledger_id,
        "formatVersion": FORMAT_VERSION,
        "schemaRevision": head_revision(),
        "usedBytes": usage.used_bytes,
        "limitBytes": usage.limit_bytes,
        "stateLimitBytes": usage.state_limit_bytes,
        "facts": {"count": usage.facts_count, "bytes": usage.facts_bytes},
        "audit": "clean" if not findings else f"{len(findings)} finding(s)",
    }

    def render(console: Console) -> None:
        table = Table(title="mvu ledger", show_header=False)
        table.add_row("database", ledger.url)
        table.add_row("ledger id", ledger.ledger_id)
        table.add_row("format / schema", f"{payload['formatVersion']} / {payload['schemaRevision']}")
        share = 100 * usage.used_bytes / usage.limit_bytes
        table.add_row("usage", f"{usage.used_bytes:,} of {usage.limit_bytes:,} bytes ({share:.2f} %)")
        table.add_row("state limit", f"{usage.state_limit_bytes:,} bytes")
        table.add_row("facts", f"{usage.facts_count} records, {usage.facts_bytes:,} bytes")
        table.add_row("audit", "[green]clean[/green]" if not findings else f"[red]{payload['audit']}[/red]")
        console.print(table)

    emit(args, payload, render)
    return 0 if not findings else 1


async def cmd_audit(args: argparse.Namespace) -> int:
    from rich.table import Table

    ledger = await open_ledger_of(args)
    try:
        findings = await ledger.audit()
    finally:
        await ledger.close()
    payload = {
        "clean": not findings,
        "findings": [{"check": f.check, "ledgerId": f.ledger_id, "subject": f.subject, "detail": f.detail}
                     for f in findings],
    }

    def render(console: Console) -> None:
        if not findings:
            console.print("[green]audit clean[/green]: every audit_* view is empty")
            return
        table = Table("check", "subject", "detail", title=f"{len(findings)} audit finding(s)")
        for finding in findings:
            table.add_row(finding.check, finding.subject, finding.detail)
        console.print(table)

    emit(args, payload, render)
    return 0 if not findings else 1


async def cmd_db(args: argparse.Namespace) -> int:
    import asyncio

    from mvu_store.ledger import EngineOptions, check_schema, create_sync_engine, current_revision, head_revision

    engine = create_sync_engine(args.db, EngineOptions(), writer=True)
    try:
        if args.action == "upgrade":
            # Opening migrates to head and creates this ledger's usage row.
            ledger = await open_ledger_of(args, writes=True)
            await ledger.close()
        elif args.action == "check":
            await asyncio.to_thread(check_schema, engine)
        current = await asyncio.to_thread(current_revision, engine)
    finally:
        engine.dispose()
    head = head_revision()
    payload = {"current": current, "head": head, "upToDate": current == head}
    emit(args, payload, lambda console: console.print(f"schema revision {current} (head {head})"))
    return 0


async def _with_progress(args: argparse.Namespace, work: Callable[[Step], Awaitable[T]]) -> T:
    """Show what long work is doing on stderr (never with --json: stdout stays one JSON value)."""
    if args.json:
        return await work(lambda _: None)
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("starting", total=None)
        return await work(lambda text: progress.update(task, description=text))


def _counts_table(title: str, **columns: dict[str, int]) -> Table:
    from rich.table import Table

    table = Table("what", *columns, title=title)
    for kind in dict.fromkeys(key for counts in columns.values() for key in counts):
        table.add_row(kind, *(str(counts.get(kind, 0)) for counts in columns.values()))
    return table


async def cmd_import(args: argparse.Namespace) -> int:
    from mvu_store.ledger import import_directory

    ledger = await open_ledger_of(args, writes=True)
    try:
        report = await _with_progress(args, lambda step: import_directory(ledger, args.directory, step=step))
    finally:
        await ledger.close()

    def render(console: Console) -> None:
        console.print(_counts_table(f"import of {report.directory}", created=report.created, skipped=report.skipped))
        verdict = "nothing to do: the ledger already holds all of it" if report.unchanged else "imported"
        console.print(f"{verdict}; {report.bytes_charged:,} bytes charged to the budget")

    emit(args, report.to_dict(), render)
    return 0


async def cmd_export(args: argparse.Namespace) -> int:
    from mvu_store.ledger import export_directory

    ledger = await open_ledger_of(args)
    try:
        report = await _with_progress(args, lambda step: export_directory(ledger, args.directory, step=step))
    finally:
        await ledger.close()

    def render(console: Console) -> None:
        console.print(_counts_table(f"export to {report.directory}", exported=report.counts))
        for name, size in report.files.items():
            console.print(f"wrote {name} ({size:,} bytes)")

    emit(args, report.to_dict(), render)
    return 0


async def cmd_demo(args: argparse.Namespace) -> int:
    from mvu_api.demo import render as render_demo
    from mvu_api.demo import run_demo

    # Only an explicit --db is used: $MVU_DATABASE_URL and the default point at real ledgers.
    report = await run_demo(args.db if args.db_given else None, ledger_id=args.ledger_id)
    emit(args, report, lambda console: render_demo(report, console))
    return 0 if report["audit"]["clean"] else 1


async def cmd_card(args: argparse.Namespace) -> int:
    import asyncio
    from pathlib import Path

    from rich.table import Column, Table
    from rich.text import Text

    from mvu_store.cards import read_card, summarize
    from mvu_store.errors import Code, MvuError

    path = Path(args.file)
    try:
        data = await asyncio.to_thread(path.read_bytes)
    except OSError as error:
        raise MvuError(Code.MISSING, f"cannot read {path}: {error.strerror}") from None
    report = summarize(read_card(data, name=path.stem))

    def render(console: Console) -> None:
        # Card text is the author's, not markup: every cell taken from it goes in as plain Text.
        table = Table(title=Text(f"card {report['name']!r}"), show_header=False)
        table.add_row("spec", report["spec"])
        table.add_row("greetings", str(report["greetings"]))
        schema = report["schema"]
        if "importedFrom" in schema:
            verdict = Text(f"imported from {schema['importedFrom']} ({schema['where']}): not fetched, not run")
        else:
            verdict = Text("no" if not schema["found"] else (
                f"yes, {schema['chars']:,} chars, " + (f"compiles (interpreter v{schema['interpreterVersion']})"
                                                        if schema["compiles"] else f"refused ({schema['error']})")))
        table.add_row("schema", verdict)
        console.print(table)
        entries = Table("#", Column(Text("[initvar] entry")), "status", title="initvar entries (merged in this order)")
        for index, entry in enumerate(report["initvar"]):
            entries.add_row(str(index), Text(entry["firstLine"]), entry["status"])
        console.print(entries)
        state = Table("key", "type", title="initial stat_data")
        for key, kind in report["statData"].items():
            state.add_row(Text(key), kind)
        console.print(state)
        for problem in report["problems"]:
            console.print(Text.assemble(("problem: ", "yellow"), problem))
        for note in report["notes"]:
            console.print(Text.assemble(("note: ", "cyan"), note))

    emit(args, report, render)
    return 0


async def cmd_serve(args: argparse.Namespace) -> int:
    from mvu_api.http.serve import serve  # FastAPI and uvicorn load only for this command

    return await serve(db=args.db, ledger_id=args.ledger_id, host=args.host, port=args.port, token=args.token,
                       body_timeout=args.body_timeout, head_timeout=args.head_timeout,
                       cors_origins=args.cors_origin or (), session_memory_mib=args.session_memory_mib)


async def cmd_sessions_import(args: argparse.Namespace) -> int:
    from rich.table import Table
    from rich.text import Text

    from mvu_store.store_host import StoreHost, import_logs

    ledger = await open_ledger_of(args, writes=True)
    try:
        report = await _with_progress(args, lambda step: import_logs(StoreHost(ledger), args.directory, step=step))
    finally:
        await ledger.close()

    def render(console: Console) -> None:
        table = Table("session", "new events", title=Text(f"sessions imported from {report.directory}"))
        for session_id, added in report.sessions.items():
            table.add_row(Text(session_id), str(added))
        console.print(table)
        for name, reason in report.refused.items():
            console.print(Text.assemble(("refused ", "red"), name, ": ", reason))

    emit(args, report.to_dict(), render)
    return 1 if report.refused else 0


async def cmd_sessions_list(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from rich.table import Table
    from rich.text import Text

    ledger = await open_ledger_of(args)
    try:
        listed = [await ledger.host_session(session_id) for session_id in await ledger.host_session_ids()]
    finally:
        await ledger.close()
    stored = [found for found in listed if found is not None]
    sessions = [{"sessionId": found.header.id, "createdAt": found.header.created_at,
                 "parentSession": found.header.parent_session, "origin": found.header.origin,
                 "lastSeq": found.last_seq} for found in stored]

    def created(value: Any) -> str:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return datetime.fromtimestamp(value / 1000, UTC).isoformat(timespec="seconds")
        return str(value)

    def render(console: Console) -> None:
        table = Table("session", "created", "last seq", "parent", title=f"{len(stored)} session(s) in {ledger.url}")
        for found in stored:
            table.add_row(Text(found.header.id), Text(created(found.header.created_at)), str(found.last_seq),
                          Text(found.header.parent_session or ""))
        console.print(table)
        if not stored:
            console.print("no sessions yet: a host creates them with POST /mvu/sessions (docs/host-protocol.md) or "
                          "`mvu sessions import DIR` brings JSONL logs in")

    emit(args, {"sessions": sessions}, render)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mvu", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    global_options(parser, top=True, db_help=f"database URL (default: $MVU_DATABASE_URL or {DEFAULT_DB}; for "
                                              "`demo`, a temporary file)")
    commands = parser.add_subparsers(dest="command", required=True)
    command(commands, "status", cmd_status,
            help="show the ledger's location, format and schema version, usage against its budget, audit verdict")
    command(commands, "audit", cmd_audit, help="run the SQL audits; exit 1 on any finding")
    db = group(commands, "db", help="the database schema (Alembic migrations): upgrade, current, check")
    command(db, "upgrade", cmd_db, help="create the ledger if it is missing and migrate its schema to the newest")
    command(db, "current", cmd_db, help="show the schema revision the database is at and the newest one")
    command(db, "check", cmd_db, help="fail when the database's tables differ from the models")
    imports = command(commands, "import", cmd_import,
                      help="read an original storage directory (mvu-*.json) in one transaction")
    imports.add_argument("directory", help="the folder holding the mvu-*.json files")
    exports = command(commands, "export", cmd_export, help="write the ledger as original mvu-*.json files")
    exports.add_argument("directory", help="the folder to write them to (created 0700 if missing)")
    card = group(commands, "card", help="read SillyTavern character cards (never runs them)")
    inspect = command(card, "inspect", cmd_card,
                      help="show a card's greetings, [initvar] entries, initial stat_data and schema verdict")
    inspect.add_argument("file", help="a card as .json or .png")
    command(
        commands, "demo", cmd_demo, db_help="an empty ledger to play on (default: a temporary file)",
        help="play a bundled sample card for five scripted turns on a fresh ledger and show what happens",
        description="Read the bundled sample card, play five scripted turns through the store-backed host and "
                    "MvuService on a fresh ledger (a temporary SQLite file unless --db names an empty one), and "
                    "print the state after each turn, a failed reply's receipt, a refused stale edit, the history and "
                    "the audit.")
    sessions = group(commands, "sessions", help="the sessions the store keeps for hosts: list, import")
    command(sessions, "list", cmd_sessions_list,
            help="list the sessions kept in the ledger: id, creation time, events, parent")
    logs = command(sessions, "import", cmd_sessions_import,
                   help="bring JSONL session logs into the ledger's sessions, as a replay")
    logs.add_argument("directory", help="a folder of <session id>.jsonl logs (MemoryHost(path=DIR)'s format)")
    chat_cli.register(commands)
    served = command(commands, "serve", cmd_serve,
                     help="the HTTP API (migrates first); stops cleanly on SIGTERM / SIGINT")
    served.add_argument("--host", default="127.0.0.1", help="address to bind (default %(default)s: this machine only)")
    served.add_argument("--port", type=int, default=8787, help="port (default %(default)s; 0 picks a free one)")
    served.add_argument("--token", default=None,
                        help="bearer token (default $MVU_TOKEN, else <ledger>.token, generated at first start)")
    served.add_argument("--body-timeout", type=float, default=30.0, metavar="SECONDS",
                        help="seconds for a whole request body to arrive, else 408 (default %(default)s)")
    served.add_argument("--head-timeout", type=float, default=10.0, metavar="SECONDS",
                        help="seconds for a request's line and headers to arrive (from the connection's opening "
                             "or the previous response), else the connection is closed (default %(default)s)")
    served.add_argument("--cors-origin", action="append", default=None, metavar="ORIGIN",
                        help="let pages from ORIGIN (scheme://host[:port]) call the API from a browser; "
                             "repeatable (default: none)")
    served.add_argument("--session-memory-mib", type=int, default=256, metavar="MIB",
                        help="memory for the copies of the sessions in use; the least recently used beyond it "
                             "are read again from the ledger when next used (default %(default)s)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.db_given = args.db is not None
    if args.db is None:
        args.db = os.environ.get("MVU_DATABASE_URL") or DEFAULT_DB
    handler: Handler = args.handler
    # Ledgers, their journals and locks, logs, tokens and exports hold people's chats: every
    # file mvu creates is its owner's alone (0600, directories 0700), whatever the shell's umask.
    os.umask(0o077)
    # Only now, past --help and argument errors: the store is what takes the time to import.
    import asyncio
    import traceback

    from mvu_store.errors import Code, MvuError

    try:
        return asyncio.run(handler(args))
    except MvuError as error:
        print(f"mvu: {error.message}", file=sys.stderr)
        print(error.code, file=sys.stderr)
        return 2
    except Exception as error:  # a bug or an unexpected environment: still end with a code
        traceback.print_exception(error, file=sys.stderr)
        print(Code.OPERATION.value, file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print(Code.OPERATION.value, file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
