"""A session as a SillyTavern chat file (docs/sillytavern.md#export).

An imported chat comes back line for line: each line as it was read, with every recorded state
put back from its version as MagVarUpdate wrote it (:func:`mvu_store.chats.states.recorded`),
so an import followed by an export gives the same bytes for a file SillyTavern wrote. The turns
a host played since (or every turn of a session that was never imported) follow as new
messages: the user's with the state before the reply, the character's with the state its reply
left (shaped as the chat's last recorded element, :func:`mvu_store.chats.states.continued`).

The export reads one snapshot of the ledger and writes the file as it goes (a page of lines at a
time), to a temporary file renamed into place at the end (``transfer.atomic_file``).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from mvu_store.chats.reader import slot
from mvu_store.chats.states import continued, recorded
from mvu_store.errors import Code, MvuError
from mvu_store.host import SessionEvent, message_text
from mvu_store.jsonvalue import js_json
from mvu_store.ledger import ChatExportRows, Ledger
from mvu_store.ledger.transfer import atomic_file
from mvu_store.service.identity import instance_id


def _date(at: Any) -> str:
    moment = datetime.fromtimestamp(at / 1000, UTC) if isinstance(at, int) else datetime.now(UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _Export:
    """One export, inside its read snapshot."""

    def __init__(self, rows: ChatExportRows, out: IO[bytes]) -> None:
        self._rows, self._session, self._out = rows, rows.session_id, out
        self._last: dict[str, Any] | None = None
        """The last recorded element written: the shape of the states played since."""
        self.messages = 0

    def run(self) -> None:
        tail = self._rows.tail()
        if tail is None:
            raise MvuError(Code.MISSING, f"no session {self._session!r}", session_id=self._session)
        found = self._rows.imported()
        summary = json.loads(found) if found is not None else None
        header = self._imported() if summary is not None else None
        if header is None:
            header = {"user_name": "User", "character_name": "Character",
                      "create_date": tail.session.header.created_at, "chat_metadata": {}}
            self._write(header)
        after = int(summary["lastSeq"]) if summary is not None else -1
        resource = summary.get("instanceId") if summary is not None else self._instance(tail.session.header)
        self._played(header, [event for event in tail.events if event.seq > after], resource, after)

    def _write(self, line: dict[str, Any]) -> None:
        self._out.write(js_json(line).encode())
        self._out.write(b"\n")

    def _imported(self) -> dict[str, Any]:
        """Write the imported lines; returns the header line."""
        header: dict[str, Any] = {}
        for row in self._rows.lines():
            line = json.loads(row["body"])
            if row["states"] is not None:
                for swipe, resource, key in json.loads(row["states"]):
                    state = self._state(resource, key)
                    line["variables"][slot(line["variables"], swipe)] = state
                    self._last = state
            if row["position"] == 0:
                header = line
            else:
                self.messages += 1
            self._write(line)
        return header

    def _state(self, resource: str, key: str) -> dict[str, Any]:
        found = self._rows.state(resource, key)
        if found is None:
            raise MvuError(Code.STORAGE_CORRUPT, f"the imported state {key} of {resource} is missing",
                           id=resource, key=key)
        meta = json.loads(found["meta"])
        return recorded(json.loads(found["body"]), meta.get("import", {}).get("restore"))

    def _instance(self, header: Any) -> str | None:
        template = self._rows.selected_template()
        identity = header.identity()
        return instance_id(template, identity) if template is not None and identity is not None else None

    def _played(self, header: dict[str, Any], events: list[SessionEvent], resource: str | None, after: int) -> None:
        """The turns played after the import (or every turn), a message per user's message and
        per reply, each reply's state where the service applied one (or an import recorded it: a
        swipe's branch)."""
        states: dict[int, dict[str, Any]] = {}
        if resource is not None and self._last is None:
            # A session never imported: its first user's message carries the instance's initial data.
            initial = self._rows.initial(resource)
            self._last = continued(json.loads(initial), None) if initial is not None else None
        if resource is not None:
            for row in self._rows.replies(resource, after):
                states[int(row["message_seq"])] = json.loads(row["body"])
        ends = {event.data.get("turn"): event.data.get("at") for event in events if event.type == "turn/end"}
        for event in events:
            if event.type not in ("user/message", "assistant/message"):
                continue
            user = event.type == "user/message"
            text = message_text(event)
            line: dict[str, Any] = {"name": header.get("user_name" if user else "character_name"), "is_user": user,
                                    "is_system": False, "send_date": _date(ends.get(event.data.get("turn"))),
                                    "mes": text}
            if not user:
                line.update(swipes=[text], swipe_id=0, swipe_info=[{}])
            line["extra"] = {}
            state = states.get(event.seq)
            if state is not None:
                self._last = continued(state, self._last)
            if self._last is not None:
                line["variables"] = [self._last]
            self._write(line)
            self.messages += 1


async def export_chat(ledger: Ledger, session_id: str, path: str | Path) -> int:
    """Write session ``session_id`` to ``path`` as a SillyTavern chat file; returns the number of
    messages written (``MVU_MISSING`` for an unknown session)."""
    target = Path(path)

    def work(rows: ChatExportRows) -> int:
        with atomic_file(target) as out:
            export = _Export(rows, out)
            export.run()
        return export.messages

    return await ledger.export_chat_rows(session_id, work)
