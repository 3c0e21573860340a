"""A SillyTavern chat file into the ledger: one session, its recorded states as versions.

The file becomes (docs/sillytavern.md#import):

* a store-host session (``mvu serve``'s), its messages as events (:mod:`mvu_store.chats.turns`);
* a template: the card's when one is given, else one made from the first recorded state and
  marked so (``importedFrom``); the session selects it;
* the session's instance, whose history holds every recorded state of the shown swipes as a
  version of kind ``import`` (the state the player saw is the truth: it is never recomputed);
* per swipe not shown that has a recorded state, a branch: a session whose parent is the chat's
  (``<session>.swipe-<message>-<swipe>``), holding that turn with the swipe as its reply, and
  an instance forked from the chat's at the state before that turn, with the swipe's state;
* each line's other fields, so that :mod:`mvu_store.chats.exporter` gives the file back.

Replies are never applied by the pipeline: the session's activation boundary is past its last
event, so the next turn a host feeds applies to the last recorded state. Each reply is checked
on the way in (:mod:`mvu_store.chats.verify`).

The file is read once to take its digest, then again inside ONE unit of work, a line at a time:
memory is bounded by the longest line, and a refused file (a bad line, a state over the state
budget, a ledger without room) writes nothing. The same file again (same session, same digest)
is the summary of the first import; another file under the session's id is ``MVU_ID_CONFLICT``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import marshal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mvu_store.cards.reader import CardDefinition
from mvu_store.chats.line_text import Around, MessageText
from mvu_store.chats.reader import ChatHeader, ChatMessage, line_error, read_chat, slot
from mvu_store.chats.states import StoredState, stored_state
from mvu_store.chats.turns import Event, Turns, end_event, message_id, reply_event, user_event
from mvu_store.chats.verify import check_transition
from mvu_store.errors import Code, MvuError
from mvu_store.host import SessionEvent, session_header
from mvu_store.host import check_session_id as check_store_session_id
from mvu_store.jsonvalue import JsonValue, canonical_text, dumps, js_json, measure_state, sha256_hex
from mvu_store.lang.macros import MAX_NAME_CHARS, Names
from mvu_store.ledger import ChatImportRows, ImportedVersion, Ledger, NewResource
from mvu_store.service.change_rows import diff_rows
from mvu_store.service.identity import character_template_id, instance_id
from mvu_store.service.initial import with_names
from mvu_store.service.models import CharacterDefinition
from mvu_store.service.templates import discovered_definition, instance_definition
from mvu_store.store_host.events import keep

FORMAT = "sillytavern"
MAX_SESSION_ID = 120
"""Room left in a session id (160) for a branch's ``.swipe-<message>-<swipe>``."""
_EVENT_BATCH = 1024
_READ_CHUNK = 1024 * 1024
FROM_FIRST_STATE = "first-recorded-state"
CHECK_WORK_FACTOR = 4
"""A message's swipes after the first checked are checked while the bytes of the state they
start from add up to at most this many times the bytes of the states the message recorded: a
message of many swipes (a hostile file's million) costs work in proportion to its own size, not
to its swipes times the state before. The rest count as unchecked."""
MAX_DIFFERENCES = 1000
"""Differences listed in a summary (``differed`` counts them all)."""

Progress = Callable[[int], None]
"""Told the bytes of the file read so far (from the unit of work's thread)."""


@dataclass(slots=True)
class ChatImport:
    """What an import did (``mvu chat import --json``)."""

    session_id: str
    sha256: str
    size: int
    imported: bool = True
    """False when the same file was imported before: nothing was written."""
    template_id: str | None = None
    template_from: str | None = None
    """``card``, or ``first-recorded-state`` when no card was given."""
    instance_id: str | None = None
    messages: int = 0
    states: int = 0
    branches: list[str] = field(default_factory=list)
    agreed: int = 0
    differed: int = 0
    unchecked: int = 0
    """Recorded states of replies with no recorded state before them to check against."""
    differences: list[dict[str, Any]] = field(default_factory=list)
    last_seq: int = -1
    next_turn: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"sessionId": self.session_id, "sha256": self.sha256, "size": self.size, "imported": self.imported,
                "templateId": self.template_id, "templateFrom": self.template_from, "instanceId": self.instance_id,
                "messages": self.messages, "states": self.states, "branches": self.branches,
                "transitions": {"agreed": self.agreed, "differed": self.differed, "unchecked": self.unchecked},
                "differences": self.differences, "lastSeq": self.last_seq, "nextTurn": self.next_turn}

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, imported: bool) -> ChatImport:
        transitions = data["transitions"]
        return cls(data["sessionId"], data["sha256"], data["size"], imported, data["templateId"],
                   data["templateFrom"], data["instanceId"], data["messages"], data["states"], data["branches"],
                   transitions["agreed"], transitions["differed"], transitions["unchecked"], data["differences"],
                   data["lastSeq"], data["nextTurn"])


def _digest(path: Path) -> tuple[str, int]:
    if not path.is_file():
        raise MvuError(Code.MISSING, f"{path} is not a file", path=str(path))
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as stream:
        while chunk := stream.read(_READ_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def card_template(card: CardDefinition, character_id: str | None = None) -> dict[str, Any]:
    """The template a card gives (as ``discover`` stores it); a card that fails is refused."""
    definition = discovered_definition(CharacterDefinition(**card.definition(character_id or card.name)), [])
    if "sourceError" in definition:
        raise MvuError(str(definition["sourceError"]), "the card's initial data or declaration fails: "
                                                       "`mvu cards CARD` says why", id=definition["id"])
    return definition


def _name(name: str | None) -> str | None:
    """A header's name as a macro's value: one of 1 to 200 characters, else none."""
    return name if name and len(name) <= MAX_NAME_CHARS else None


async def _discovered(ledger: Ledger, character_id: str | None) -> dict[str, Any] | None:
    if character_id is None:
        return None
    template = await ledger.template(character_template_id(character_id))
    if not isinstance(template, dict) or template.get("discovered") is not True or "sourceError" in template:
        raise MvuError(Code.MISSING, f"character {character_id!r} was not discovered (or its card fails)",
                       character_id=character_id)
    return template


async def import_chat(ledger: Ledger, path: str | Path, *, card: CardDefinition | None = None,
                      character_id: str | None = None, session_id: str | None = None,
                      progress: Progress | None = None, verify: bool = True) -> ChatImport:
    """Import the chat file at ``path`` (see the module docstring). ``card``: the character's card
    (``mvu_store.cards.read_card``), discovered under ``character_id`` (default: its name); without
    a card, ``character_id`` names a card discovered before (``MvuService.discover``, ``POST
    /cards``); ``session_id``: the session to create (default: ``st-`` and the file's digest);
    ``verify``: re-apply each reply (off, every transition is counted ``unchecked``)."""
    file = Path(path)
    template = card_template(card, character_id) if card is not None else await _discovered(ledger, character_id)
    digest, size = await asyncio.to_thread(_digest, file)
    session = session_id if session_id is not None else f"st-{digest[:24]}"
    check_store_session_id(session)
    if len(session) > MAX_SESSION_ID:
        raise MvuError(Code.SCOPE, f"an imported chat's session id is at most {MAX_SESSION_ID} characters "
                                   "(its branches add to it)", field="sessionId")
    summary = ChatImport(session, digest, size)
    async with ledger.session_lock(session):
        return await ledger.import_chat_rows(
            session, digest, any_session=session_id is None,
            write=lambda rows: _Import(rows, summary, template, progress, verify).run(file),
            again=lambda stored: ChatImport.from_dict(json.loads(stored), imported=False))


def _same(element: dict[str, Any], written: Around | None, other: dict[str, Any],
          other_written: Around | None) -> bool:
    """Whether two elements are the same JSON: the same values of the same types in the same
    order (``==`` alone takes 1 for true and ignores the order)."""
    if written is not None and other_written is not None:
        return written == other_written
    return element == other and marshal.dumps(element, 2) == marshal.dumps(other, 2)


@dataclass(slots=True)
class _Head:
    """A resource being written: its id, revision and head version."""

    id: str
    revision: int = 0
    key: str | None = None
    blob_hash: str | None = None
    position: int = 0
    """Where the resource's next own version goes."""
    stat_data: JsonValue = None
    """The ``stat_data`` of its head (its next version's changes are from it)."""


class _Import:
    """One import, inside its unit of work."""

    def __init__(self, rows: ChatImportRows, summary: ChatImport, template: dict[str, Any] | None,
                 progress: Progress | None, verify: bool) -> None:
        self._rows, self._summary = rows, summary
        self._checks = verify
        self._template = template
        self._progress = progress
        self._turns = Turns()
        self._pending: list[tuple[SessionEvent, str]] = []
        self._seq = -1
        self._names = Names()
        self._created_at: JsonValue = None
        self._main: _Head | None = None
        self._initial: tuple[JsonValue, bytes] | None = None
        """The instances' initial data and its stored bytes, once the first is created."""
        self._previous: dict[str, Any] | None = None
        """The last recorded state of the shown swipes, as stored."""
        self._last: tuple[dict[str, Any], JsonValue | None, StoredState, Around | None] | None = None
        """The last element stored, the declaration it was stored under, its stored form, its text."""
        self._declared: tuple[JsonValue, str] | None = None
        """The declaration the states are stored with, and its text."""
        self._blob: tuple[StoredState, str] | None = None
        """The last stored form written as a blob, and the blob's hash."""
        self._previous_size = 0
        """Its stored bytes: what checking a reply against it costs (:data:`CHECK_WORK_FACTOR`)."""

    # -- the file ---------------------------------------------------------------------------

    def run(self, file: Path) -> ChatImport:
        summary = self._summary
        line = 1
        with file.open("rb") as stream:
            for item in read_chat(stream):
                line = item.line
                try:
                    if isinstance(item, ChatHeader):
                        self._header(item)
                    else:
                        self._message(item)
                except MvuError as error:
                    if "line" in error.details:
                        raise
                    raise line_error(line, error.message, error.code, **error.details) from None
                self._check_room(line)
                if self._progress is not None:
                    self._progress(stream.tell())
                del item  # not held while the next line is read
        self._finish()
        self._check_room(line)
        return summary

    def _check_room(self, line: int) -> None:
        """``PLAY_STORAGE_LIMIT`` naming the line once the rows written so far pass the budget
        (the commit would refuse them anyway, without saying where). Rows still queued count at
        their most (a state stored before is not charged again): they are written when they
        might not fit, and counted exactly."""
        room = self._rows.room
        if self._rows.charged > room:
            self._rows.write_queued()
        charged = self._rows.charged
        if charged > room:
            raise line_error(line, f"the ledger has no room for the chat: {room} bytes are free",
                             Code.STORAGE_LIMIT, limit=room, requested=charged)

    def _header(self, header: ChatHeader) -> None:
        summary = self._summary
        self._names = Names(user=_name(header.user_name), char=_name(header.character_name))
        self._created_at = header.create_date if header.create_date not in (None, "") else f"sha256:{summary.sha256}"
        self._rows.create_session(session_header(summary.session_id, created_at=self._created_at))
        self._queue(self._names_event())
        self._line(0, header.raw, None)

    def _names_event(self) -> list[Event]:
        """The header's names as the session's (``session/names``): a host going on with the chat
        gets its ``{{user}}``/``{{char}}`` macros read as SillyTavern read them."""
        names = {role: name for role, name in (("user", self._names.user), ("char", self._names.char)) if name}
        return [("session/names", names)] if names else []

    def _message(self, message: ChatMessage) -> None:
        summary = self._summary
        summary.messages += 1
        user = self._turns.user_of_turn
        events = self._turns.add(message)
        self._queue(events)
        seq = self._seq - (1 if not message.is_user else 0)  # the message's own event
        before, before_size = self._previous, self._previous_size
        refs: list[list[JsonValue]] = []
        allowance, spent = 0, -1  # -1: the message's first check is paid by the line before
        for swipe in range(len(message.swipes)):
            state = message.state(swipe)
            if state is None:
                continue
            stored = self._stored(state, message.state_text(swipe))
            if not message.is_user:
                allowance += CHECK_WORK_FACTOR * len(stored.encoded)
                affordable = spent < 0 or spent + before_size <= allowance
                self._verify(message, swipe, before if affordable else None, state)
                if affordable:
                    spent = max(spent, 0) + before_size
            if swipe != message.selected and message.is_user:
                continue  # a user's message has no reply to branch on: the state stays in its line
            if swipe == message.selected:
                head = self._instance(stored)
                self._version(head, self._summary.session_id, stored, message, swipe, seq)
                refs.append([swipe, head.id, head.key])
                self._previous, self._previous_size = stored.variables, len(stored.encoded)
            else:
                branch = self._branch(message, swipe, user, stored)
                refs.append([swipe, branch.id, branch.key])
                self._check_room(message.line)  # a line of many branches stops where room ends
        if not message.is_user and message.state(message.selected) is None:
            # A reply whose state was not recorded (MagVarUpdate off, or its floor's variables
            # cleaned): the next recorded state follows more than one reply, which one reply
            # applied to the state before cannot check.
            self._previous = None
        self._line(message.index + 1, message.raw, refs or None, message.written)

    def _stored(self, element: dict[str, Any], written: Around | None) -> StoredState:
        """The stored form of ``element`` (``written``: its text by member, when known): the
        previous one again when ``element`` is the same JSON under the same declaration (a user's
        message keeps the state of the reply before it), so that each distinct state is checked,
        encoded and written once."""
        declaration, last = self._declaration(), self._last
        if last is not None and last[1] is declaration and _same(element, written, last[0], last[3]):
            return last[2]
        if declaration is not None and (self._declared is None or self._declared[0] is not declaration):
            self._declared = declaration, js_json(declaration)  # one encoding for every state that adds it
        stored = stored_state(element, declaration, written, self._declared[1] if self._declared else None)
        self._last = element, declaration, stored, written
        return stored

    def _declaration(self) -> JsonValue | None:
        initial = self._template.get("initial") if self._template is not None else None
        return initial.get("mvu_schema") if isinstance(initial, dict) else None

    def _verify(self, message: ChatMessage, swipe: int, before: dict[str, Any] | None, after: dict[str, Any]) -> None:
        summary = self._summary
        if before is None or not self._checks:
            summary.unchecked += 1
            return
        difference = check_transition(before, message.swipes[swipe], after, names=self._names, at=message.sent_at)
        if difference is None:
            summary.agreed += 1
            return
        summary.differed += 1
        if len(summary.differences) < MAX_DIFFERENCES:
            summary.differences.append({"message": message.index, "line": message.line, "swipe": swipe,
                                        **difference})

    # -- rows ---------------------------------------------------------------------------------

    def _queue(self, events: list[Event]) -> None:
        for kind, data in events:
            self._seq += 1
            kept = keep({"seq": self._seq, "type": kind, "data": data})
            self._pending.append((kept.event, kept.text))
        if len(self._pending) >= _EVENT_BATCH:
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            self._rows.append_events(self._summary.session_id, self._pending)
            self._pending = []

    def _line(self, position: int, raw: dict[str, Any], refs: list[list[JsonValue]] | None,
              written: MessageText | None = None) -> None:
        """The line kept, without the states it gave versions (``refs``); ``written``: its text
        by member, when known (it is then put together, not encoded again)."""
        variables = raw.get("variables")
        dropped = [slot(variables, swipe) for swipe, _, _ in refs or () if isinstance(swipe, int)] \
            if isinstance(variables, list | dict) else []
        if written is not None and written.elements is not None:
            body = written.line(dropped)
        elif dropped:
            assert isinstance(variables, list | dict)
            kept = dict(variables) if isinstance(variables, dict) else list(variables)
            for place in dropped:
                kept[place] = None  # type: ignore[index]
            body = js_json({**raw, "variables": kept})
        else:
            body = js_json(raw)
        self._rows.add_line(self._summary.session_id, position, body, None if refs is None else dumps(refs))

    def _identity(self, session_id: str) -> dict[str, JsonValue]:
        return {"sessionId": session_id, "createdAt": self._created_at}

    def _instance(self, first: StoredState | None) -> _Head:
        """The chat's instance, created with its template at the first recorded state."""
        if self._main is not None:
            return self._main
        summary = self._summary
        if self._template is None:
            assert first is not None
            character = f"{FORMAT}:{summary.session_id}"
            self._template = {"id": character_template_id(character), "name": self._names.char or character,
                              "characterId": character, "sessionIds": [], "managementMode": "native",
                              "discovered": True, "initial": first.variables, "importedFrom": FROM_FIRST_STATE}
            summary.template_from = FROM_FIRST_STATE
        else:
            summary.template_from = "card"
        template = self._rows.keep_template(self._template["id"], self._template)
        assert isinstance(template, dict)
        self._template = template
        summary.template_id = template["id"]
        resource = instance_id(template["id"], self._identity(summary.session_id))
        self._rows.create_instance(self._new(template, resource, summary.session_id))
        summary.instance_id = resource
        assert self._initial is not None and isinstance(self._initial[0], dict)
        self._main = _Head(resource, stat_data=self._initial[0].get("stat_data"))
        return self._main

    def _new(self, template: dict[str, Any], resource: str, session_id: str) -> NewResource:
        """An instance of ``template`` for ``session_id``: the chat's or a branch's. Their initial
        data is the same: measured and encoded once."""
        if self._initial is None:
            initial, encoded, _ = measure_state(with_names(template["initial"], self._names))
            self._initial = initial, encoded
        initial, encoded = self._initial
        identity = self._identity(session_id)
        return NewResource(id=resource, kind="instance", initial=initial,
                           definition=instance_definition(template, resource, identity), template_id=template["id"],
                           session_id=session_id, session_created_at=self._created_at, management_mode="native",
                           encoded_initial=encoded)

    def _version(self, head: _Head, session: str, stored: StoredState, message: ChatMessage, swipe: int,
                 seq: int) -> None:
        """The recorded ``stored`` as the next version of ``head`` (whose key is its parent)."""
        if self._blob is not None and self._blob[0] is stored:
            blob_hash = self._blob[1]  # stored once (a blob is content-addressed): no second statement
        else:
            blob_hash = self._rows.put_state(stored.variables, stored.encoded, stored.text)
            self._blob = stored, blob_hash
        shown = swipe == message.selected and session == self._summary.session_id
        source: dict[str, JsonValue] = {
            "sessionId": session, "createdAt": self._created_at, "import": FORMAT, "messageSeq": seq,
            "messageId": message_id(message.index, None if shown else swipe), "swipe": swipe, "turn": self._turns.turn}
        # Every value here is JSON as the store keeps it (names, counts, parsed JSON): written as
        # is, without the normalising copy canonical_text makes of a value from outside.
        source_text = dumps(source)
        key = sha256_hex(source_text)
        stat_data = stored.variables.get("stat_data")
        self._rows.add_version(ImportedVersion(
            resource_id=head.id, key=key, position=head.position, revision=head.revision + 1, parent_key=head.key,
            variables_hash=blob_hash, session_id=session, message_seq=seq, source=source_text,
            meta=dumps({"import": {"format": FORMAT, "message": message.index, "line": message.line,
                                   "swipe": swipe, "restore": stored.restore}}),
            created_at=message.sent_at, changes=diff_rows(head.stat_data, stat_data, "import", self._turns.turn)))
        head.position, head.revision, head.key, head.blob_hash = head.position + 1, head.revision + 1, key, blob_hash
        head.stat_data = stat_data
        self._summary.states += 1

    def _branch(self, message: ChatMessage, swipe: int, user: str | None, stored: StoredState) -> _Head:
        """A swipe not shown, with its state: a branch session holding that turn with the swipe as
        its reply, and an instance forked from the chat's at the state before the turn."""
        summary = self._summary
        main = self._instance(stored)
        child = f"{summary.session_id}.swipe-{message.index}-{swipe}"
        self._rows.create_session(session_header(child, created_at=self._created_at,
                                                      parent_session=summary.session_id, inherited_event_count=0))
        turn = self._turns.turn
        events: list[Event] = [*self._names_event(), ("turn/start", {"turn": turn})]
        if user is not None:
            events.append(user_event(turn, user))
        events += [reply_event(turn, message.swipes[swipe], message_id(message.index, swipe)),
                   end_event(turn, message.sent_at)]
        kept = [keep({"seq": seq, "type": kind, "data": data}) for seq, (kind, data) in enumerate(events)]
        self._rows.append_events(child, [(item.event, item.text) for item in kept])
        assert self._template is not None
        resource = instance_id(self._template["id"], self._identity(child))
        # A fork child starts at revision 0, at its parent's version (and state).
        branch = _Head(resource, key=main.key, stat_data=main.stat_data)
        self._version(branch, child, stored, message, swipe, len(events) - 2)
        assert branch.key is not None and branch.blob_hash is not None
        # Created at its own version, forked at the version the chat's instance wrote last (its
        # place known here: it may still be queued), selecting the template, active past its events.
        self._rows.add_branch(self._new(self._template, resource, child),
                              fork_of=(main.id, main.position - 1, main.key) if main.key is not None else None,
                              head=(branch.revision, branch.key, branch.blob_hash), boundary=len(events))
        summary.branches.append(child)
        return branch

    def _settle(self, head: _Head, session_id: str, boundary: int) -> None:
        """The resource's head at its last version; the session selects the template, and the
        replies it holds are never applied again."""
        assert self._template is not None
        moved = None
        if head.key is not None:
            assert head.blob_hash is not None  # a head key is a version's, whose state was stored
            moved = head.revision, head.key, head.blob_hash
        self._rows.settle(head.id, moved, session_id, self._template["id"], boundary)

    def _finish(self) -> None:
        summary = self._summary
        self._queue(self._turns.close())
        self._flush()
        summary.last_seq = self._seq
        summary.next_turn = self._turns.turn + 1
        if self._main is None and self._template is not None:
            self._instance(None)
        if self._main is not None:
            self._settle(self._main, summary.session_id, self._seq + 1)
        # Last, with the whole summary: a row's charged text is never updated.
        self._rows.finish(summary.session_id, summary.sha256, summary.size, canonical_text(summary.to_dict()))
