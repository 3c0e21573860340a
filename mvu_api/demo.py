"""``mvu demo``: the bundled sample card played for five scripted turns on a fresh ledger.

:func:`run_demo` does the work and returns a JSON-ready report; :func:`render` prints it with
rich. The pipeline is the real one: ``read_card`` → ``MvuService.discover`` →
``select_character`` → turns fed to the store-backed host, as ``mvu serve`` keeps them
(checkpoint at ``turn/start``, ingest at ``turn/end``) → ``read`` / ``history`` / ``update`` →
``Ledger.audit``. On a ledger given by URL the session stays, so ``mvu serve`` on that ledger
serves it afterwards.
"""

from __future__ import annotations

import copy
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.table import Column, Table
from rich.text import Text

from mvu_store.cards import json_type, read_card
from mvu_store.demo import CHARACTER_ID, EDIT, SESSION_CREATED_AT, SESSION_ID, TURNS, sample_card_bytes
from mvu_store.errors import Code, MvuError
from mvu_store.jsonvalue import JsonValue
from mvu_store.ledger import Ledger, open_ledger
from mvu_store.service import HistoryEntry, MvuService, Scope
from mvu_store.store_host import StoreHost, play_turn


async def run_demo(url: str | None = None, *, ledger_id: str = "default") -> dict[str, Any]:
    """Play the demo on ``url`` (None: a temporary SQLite file, deleted afterwards).

    A ledger given by URL must be empty (``MVU_CONFIG`` otherwise): the demo never writes its
    sample session into a ledger that holds someone's data.
    """
    with tempfile.TemporaryDirectory(prefix="mvu-demo-") as directory:
        target = url if url is not None else f"sqlite:///{Path(directory) / 'demo.sqlite3'}"
        ledger = await open_ledger(target, ledger_id=ledger_id)
        try:
            if url is not None:
                await _require_empty(ledger)
            report = await _play(ledger)
        finally:
            await ledger.close()
    report["database"] = "a temporary SQLite file (deleted afterwards)" if url is None else ledger.url
    report["temporary"] = url is None
    return report


async def _require_empty(ledger: Ledger) -> None:
    usage = await ledger.usage()
    if usage.used_bytes or usage.facts_count or await ledger.templates() or await ledger.host_session_ids():
        raise MvuError(Code.CONFIG, f"ledger {ledger.ledger_id!r} at {ledger.url} already holds data; the demo only "
                                    "writes to an empty ledger (leave out --db for a temporary one)",
                       used_bytes=usage.used_bytes)


@dataclass(frozen=True, slots=True)
class _Instance:
    """The demo's character instance in its session, as the service reads it."""

    service: MvuService
    instance_id: str
    scope: Scope

    async def state(self) -> tuple[int, dict[str, Any]]:
        record = await self.service.read(id=self.instance_id, scope=self.scope)
        assert record is not None and isinstance(record.content, dict)
        return record.revision, record.content

    async def history(self, *, include_before: bool = False) -> list[HistoryEntry]:
        return await self.service.history(id=self.instance_id, scope=self.scope, include_before=include_before)


async def _play(ledger: Ledger) -> dict[str, Any]:
    card = read_card(sample_card_bytes(), name="sample_card")
    host = StoreHost(ledger)
    service = MvuService(ledger=ledger, host=host)
    try:
        template = await service.discover(definition=card.definition(CHARACTER_ID))
        if template.source_error is not None:
            raise MvuError(template.source_error, "the bundled sample card did not initialise")
        await host.create_session(SESSION_ID, created_at=SESSION_CREATED_AT)
        selection = await service.select_character(session_id=SESSION_ID, character_id=CHARACTER_ID)
        assert selection.instance_id is not None
        instance = _Instance(service, selection.instance_id, Scope(session_id=SESSION_ID))
        revision, content = await instance.state()
        initial = {"revision": revision, "statData": content["stat_data"]}
        turns, revisions, content = await _play_turns(host, instance, revision, content)
        failed = [entry for entry in await instance.history() if entry.kind == "failed"]
        conflict, retry = await _stale_edit_then_retry(instance, content["stat_data"], revisions)
        history = [{"kind": entry.kind, "revision": entry.revision, "error": entry.error,
                    "turn": entry.source.get("turn"), "messageId": entry.source.get("messageId"),
                    "changed": changed_paths(entry.before, _stat_data(entry.variables))
                    if entry.before_available else None}
                   for entry in await instance.history(include_before=True)]
    finally:
        await service.close()
    findings = await ledger.audit()
    return {
        "card": {"name": card.name, "spec": card.spec, "initvarEntries": len(card.initvar),
                 "schemaFound": card.schema_source is not None,
                 "greeting": card.greetings[0] if card.greetings else None,
                 "interpreterVersion": template.interpreter_version},
        "characterId": CHARACTER_ID, "sessionId": SESSION_ID, "instanceId": instance.instance_id,
        "edit": EDIT.description,
        "initial": initial,
        "turns": turns,
        "failedReceipts": [_receipt(entry) for entry in failed],
        "conflict": conflict,
        "retry": retry,
        "history": history,
        "audit": {"clean": not findings,
                  "findings": [{"check": f.check, "subject": f.subject, "detail": f.detail} for f in findings]},
    }


async def _play_turns(host: StoreHost, instance: _Instance, revision: int, content: dict[str, Any]
                      ) -> tuple[list[dict[str, Any]], dict[int, int], dict[str, Any]]:
    """The scripted turns fed as a host feeds them, from ``revision`` and its ``content``: each
    turn's report, the revision after each (0: before the first) and the content after the last."""
    turns: list[dict[str, Any]] = []
    revisions: dict[int, int] = {0: revision}
    for number, turn in enumerate(TURNS, start=1):
        played = await play_turn(instance.service, host, SESSION_ID, turn=number, user=turn.user, reply=turn.reply)
        if played.error is not None:
            raise played.error
        revision, content = await instance.state()
        revisions[number] = revision
        entry = _entry_of_turn(await instance.history(), number)
        diagnostics = content.get("update_diagnostics") if entry.kind == "reply" else None
        turns.append({
            "turn": number, "user": turn.user, "reply": turn.reply, "shows": turn.shows,
            "outcome": entry.kind, "receiptRevision": entry.revision, "error": entry.error,
            "diagnostics": [{"code": d.get("code"), "command": d.get("command"), "message": d.get("message")}
                            for d in diagnostics or [] if isinstance(d, dict)],
            "revision": revision, "statData": content["stat_data"],
        })
    return turns, revisions, content


async def _stale_edit_then_retry(instance: _Instance, stat_data: Any,
                                 revisions: dict[int, int]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The manual edit sent with a revision from before the last turns (refused, the conflict
    reported), then again with the current one (committed)."""
    edited = copy.deepcopy(stat_data)
    _set_path(edited, EDIT.path, EDIT.value)
    stale = revisions[EDIT.stale_after_turn]
    try:
        await instance.service.update(id=instance.instance_id, content={"stat_data": edited}, expected_revision=stale,
                                      operation_id=EDIT.operation_id, scope=instance.scope)
    except MvuError as error:
        if error.code != Code.REVISION_CONFLICT:
            raise
        conflict = {"code": error.code, "message": error.message,
                    "expectedRevision": error.details.get("expected_revision"),
                    "currentRevision": error.details.get("current_revision")}
    else:
        raise MvuError(Code.OPERATION, "the demo's stale edit was accepted; it should have been refused")
    current = conflict["currentRevision"]
    assert isinstance(current, int)
    receipt = await instance.service.update(id=instance.instance_id, content={"stat_data": edited},
                                            expected_revision=current, operation_id=EDIT.operation_id,
                                            scope=instance.scope)
    assert isinstance(receipt.content, dict)
    retry = {"expectedRevision": current, "revision": receipt.revision, "path": ".".join(EDIT.path),
             "value": EDIT.value, "statData": receipt.content["stat_data"]}
    return conflict, retry


def _entry_of_turn(history: list[HistoryEntry], turn: int) -> HistoryEntry:
    entries = [entry for entry in history if entry.source.get("turn") == turn and entry.kind in ("reply", "failed")]
    if not entries:
        raise MvuError(Code.OPERATION, f"turn {turn} left no version in the history", turn=turn)
    return entries[-1]


def _receipt(entry: HistoryEntry) -> dict[str, Any]:
    return {"kind": entry.kind, "revision": entry.revision, "error": entry.error, "key": entry.key,
            "turn": entry.source.get("turn"), "messageId": entry.source.get("messageId"),
            "messageSeq": entry.source.get("messageSeq"), "statData": _stat_data(entry.variables)}


def _stat_data(variables: JsonValue) -> JsonValue:
    return variables.get("stat_data") if isinstance(variables, dict) else None


def _set_path(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        data = data[key]
    data[path[-1]] = value


def leaves(value: JsonValue, prefix: str = "") -> dict[str, JsonValue]:
    """``{path: value}`` for every leaf (``hero.hp``, ``list[0]``); an empty container is a leaf."""
    if isinstance(value, dict) and value:
        result: dict[str, JsonValue] = {}
        for key, item in value.items():
            result.update(leaves(item, f"{prefix}.{key}" if prefix else key))
        return result
    if isinstance(value, list) and value:
        result = {}
        for index, item in enumerate(value):
            result.update(leaves(item, f"{prefix}[{index}]"))
        return result
    return {prefix or "(root)": value}


def changed_paths(before: JsonValue, after: JsonValue) -> list[str]:
    """The leaf paths whose value differs (added, changed or removed), in the new state's order."""
    old, new = leaves(before), leaves(after)
    same = {path for path in old.keys() & new.keys() if _json(old[path]) == _json(new[path])}
    return [path for path in new if path not in same] + [path for path in old if path not in new]


def _json(value: JsonValue) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


# -- rendering ------------------------------------------------------------------------------------


def _table(*headers: str, **options: Any) -> Table:
    """A table whose cells break a word wider than their column instead of cutting it with "…"
    (Rich's default): ids and error codes are read whole."""
    return Table(*(Column(header, overflow="fold") for header in headers), **options)


def _state_table(title: str, stat_data: JsonValue, highlight: list[str] | None = None) -> Table:
    table = _table("path", "value", "type", title=Text(title))
    marked = set(highlight or ())
    for path, value in leaves(stat_data).items():
        style = "bold yellow" if path in marked else ""
        table.add_row(Text(path, style=style), Text(_json(value), style=style), json_type(value))
    return table


def _heading(console: Console, title: str) -> None:
    """A rule with ``title`` in it when it fits, else a plain rule over the whole title: Rich cuts
    a rule's title that is too wide with "…", and a heading says what the turn shows."""
    if cell_len(title) + 6 <= console.width:
        console.rule(Text(title))
    else:
        console.rule()
        console.print(Text(title, style="bold"))


def render(report: dict[str, Any], console: Console) -> None:
    """The demo as a newcomer reads it: card, turns with the state after each, the refusals,
    the history and the audit verdict. Card and reply text is data, never markup."""
    card = report["card"]
    _heading(console, f"mvu demo: {card['name']}")
    console.print(Text(f"card: {card['spec']}, {card['initvarEntries']} [initvar] entry, schema "
                       f"{'found' if card['schemaFound'] else 'missing'} (interpreter v{card['interpreterVersion']})"))
    console.print(Text(f"ledger: {report['database']}; session {report['sessionId']!r}, "
                       f"instance {report['instanceId']}"))
    if card["greeting"]:
        console.print(Text.assemble(("greeting: ", "bold"), card["greeting"]))
    console.print(_state_table(f"initial stat_data (revision {report['initial']['revision']})",
                               report["initial"]["statData"]))
    previous = _render_turns(report, console)
    _render_failed_receipts(report, console)
    _render_stale_edit(report, console, previous)
    _render_history_and_audit(report, console)


def _render_turns(report: dict[str, Any], console: Console) -> JsonValue:
    """Each turn: its text, its refusal or diagnostics, the state after it; returns the last state."""
    previous = report["initial"]["statData"]
    for turn in report["turns"]:
        _heading(console, f"turn {turn['turn']}: {turn['shows']}")
        console.print(Text.assemble(("user: ", "bold cyan"), turn["user"]))
        console.print(Text.assemble(("reply: ", "bold magenta"), turn["reply"].rstrip()))
        if turn["outcome"] == "failed":
            console.print(Text.assemble(("refused whole: ", "bold red"),
                                        f"{turn['error']} (failed receipt at revision {turn['receiptRevision']}; "
                                        "the state did not move)"))
        for diagnostic in turn["diagnostics"]:
            console.print(Text.assemble(("diagnostic: ", "yellow"),
                                        f"{diagnostic['code']} {diagnostic['command']!r}: {diagnostic['message']}"))
        console.print(_state_table(f"stat_data after turn {turn['turn']} (revision {turn['revision']})",
                                   turn["statData"], changed_paths(previous, turn["statData"])))
        previous = turn["statData"]
    return previous


def _render_failed_receipts(report: dict[str, Any], console: Console) -> None:
    _heading(console, "the failed reply's receipt")
    for receipt in report["failedReceipts"]:
        table = _table("field", "value", show_header=False, title="failed receipt (history entry)")
        for name in ("kind", "revision", "error", "turn", "messageId", "messageSeq", "key"):
            table.add_row(name, Text(str(receipt[name])))
        console.print(table)


def _render_stale_edit(report: dict[str, Any], console: Console, previous: JsonValue) -> None:
    conflict, retry = report["conflict"], report["retry"]
    _heading(console, "a manual edit with a stale revision")
    console.print(Text(f"{report['edit']}: set {retry['path']} = {retry['value']} with "
                       f"expected_revision={conflict['expectedRevision']}"))
    console.print(Text.assemble(("refused: ", "bold red"), f"{conflict['code']}: {conflict['message']} "
                                f"(current revision {conflict['currentRevision']})"))
    console.print(Text.assemble(("retry: ", "bold green"), f"expected_revision={retry['expectedRevision']} → "
                                f"committed at revision {retry['revision']}"))
    console.print(_state_table(f"stat_data after the edit (revision {retry['revision']})", retry["statData"],
                               changed_paths(previous, retry["statData"])))


def _render_history_and_audit(report: dict[str, Any], console: Console) -> None:
    _heading(console, "history")
    history = _table("revision", "kind", "turn", "error", "changed paths", title="history (oldest first)")
    for entry in report["history"]:
        changed = "(unknown)" if entry["changed"] is None else ", ".join(entry["changed"]) or "(nothing)"
        history.add_row(str(entry["revision"]), entry["kind"], str(entry["turn"] if entry["turn"] is not None else ""),
                        entry["error"] or "", Text(changed))
    console.print(history)
    audit = report["audit"]
    if audit["clean"]:
        console.print("[green]audit: clean[/green] (every audit_* view is empty)")
    else:
        findings = _table("check", "subject", "detail", title=f"audit: {len(audit['findings'])} finding(s)")
        for finding in audit["findings"]:
            findings.add_row(finding["check"], Text(str(finding["subject"])), Text(str(finding["detail"])))
        console.print(findings)
