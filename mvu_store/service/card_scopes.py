"""Card scopes: what a card script names when it reads or writes, and the evidence that it may
(docs/cards.md).

Three kinds, told apart by ``mode``:

- a *message scope* (no mode) ``{playthroughId, sessionId, nodeId, variantId, endEventId,
  sessionFormatVersion?}``: the bubble of one durable assistant message of the host's timeline;
  its head is writable only while it is the timeline's head, the session's last reply and its
  turn is over;
- a *greeting scope* ``{mode: 'greeting', playthroughId, sessionId, characterId, …}``: the
  opening of a session, read-only;
- an *initial scope* ``{mode: 'initial', …}``: the opening of an empty session, writable until
  its first event that is not a configuration event.

The browser never names a message id: the service finds it from the timeline and the session's
durable log. Each scope resolves to :class:`Evidence` with a synchronous ``check_current`` that a
write checks again just before it commits.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.host import CardHost, Lease, Leases, Playthrough, SessionSnapshot, message_id, message_text
from mvu_store.js.values import MAX_SAFE_INTEGER
from mvu_store.jsonvalue import JsonValue
from mvu_store.service.context import CardScopeContext
from mvu_store.service.identity import character_template_id, session_identity
from mvu_store.service.models import MAX_SESSION_ID, storable
from mvu_store.service.openings import card_template_id_of, greeting_index_of
from mvu_store.service.session_replies import reply_fingerprint

MAX_SCOPE_CHARS = 4000
"""A scope's JSON text in a query string."""
SCOPE_KEYS = frozenset({"mode", "characterId", "playthroughId", "sessionId", "nodeId", "variantId", "endEventId",
                        "sessionFormatVersion", "greetingIndex", "selectionToken"})
HEX64 = re.compile(r"^[0-9a-f]{64}$")
SETTING_EVENTS = frozenset({"permission/preset", "sandbox/mode", "approval/policy", "session/names"})
"""Events an empty session may hold besides a model selection, a user's title and an empty
restore marker (the configuration a host writes before the first send)."""


def _refuse(message: str, **details: Any) -> MvuError:
    return MvuError(Code.SCOPE, message, **details)


def read_only(message: str, **details: Any) -> MvuError:
    return MvuError(Code.READ_ONLY, message, **details)


@dataclass(frozen=True, slots=True)
class CardScope:
    """A checked card scope; :attr:`raw` is the scope as sent (what answers echo)."""

    raw: dict[str, JsonValue]
    mode: str | None
    playthrough_id: str
    session_id: str
    character_id: str | None = None
    node_id: str | None = None
    variant_id: str | None = None
    end_event_id: int | None = None
    session_format_version: int | None = None
    greeting_index: int | None = None
    selection_token: str | None = None


def _text(scope: Mapping[str, Any], key: str, *, required: bool) -> str | None:
    value = scope.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_SESSION_ID or not storable(value):
        raise _refuse(f"{key} must be a string of 1 to {MAX_SESSION_ID} characters", field=key)
    return value


def _integer(scope: Mapping[str, Any], key: str, *, minimum: int = 0) -> int | None:
    value = scope.get(key)
    if value is None:
        return None
    if type(value) is not int or not minimum <= value <= MAX_SAFE_INTEGER:
        raise _refuse(f"{key} must be an integer from {minimum}", field=key)
    return value


def parse_card_scope(value: Any) -> CardScope:
    """A card scope, or ``MVU_SCOPE`` naming what is wrong with it."""
    if isinstance(value, CardScope):
        return value
    if not isinstance(value, dict):
        raise _refuse("a card scope is an object")
    unknown = sorted(str(key) for key in value if key not in SCOPE_KEYS)
    if unknown:
        raise _refuse(f"a card scope has no field {unknown[0]!r}", fields=unknown[:10])
    mode = value.get("mode")
    if mode not in (None, "greeting", "initial"):
        raise _refuse("mode is 'greeting' or 'initial', or absent for a message scope", field="mode")
    common: dict[str, Any] = {
        "raw": copy.deepcopy(value), "mode": mode, "playthrough_id": _text(value, "playthroughId", required=True),
        "session_id": _text(value, "sessionId", required=True),
        "session_format_version": _integer(value, "sessionFormatVersion", minimum=1)}
    if mode is None:
        for key in ("characterId", "greetingIndex", "selectionToken"):
            if key in value:
                raise _refuse(f"a message scope has no {key}", field=key)
        end = _integer(value, "endEventId")
        if end is None:
            raise _refuse("a message scope names its endEventId", field="endEventId")
        return CardScope(**common, node_id=_text(value, "nodeId", required=True),
                         variant_id=_text(value, "variantId", required=True), end_event_id=end)
    for key in ("nodeId", "variantId", "endEventId"):
        if key in value:
            raise _refuse(f"a {mode} scope has no {key}: it is before any message", field=key)
    token = value.get("selectionToken")
    if token is not None and (not isinstance(token, str) or not HEX64.match(token)):
        raise _refuse("selectionToken is the 64 hex digits a greeting read gave", field="selectionToken")
    return CardScope(**common, character_id=_text(value, "characterId", required=True),
                     greeting_index=_integer(value, "greetingIndex"), selection_token=token)


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the host's facts and the durable log say about a scope, now."""

    mode: str | None
    writable_head: bool
    check_current: Lease
    message_id: str | None = None
    fingerprint: str | None = None
    view_identity: dict[str, JsonValue] | None = None
    initial_source: dict[str, JsonValue] | None = None
    first_turn: int | None = None
    """A greeting scope's first turn, once the session started one (its checkpoint is the opening)."""
    selected_template: str | None = None
    identity: dict[str, JsonValue] = field(default_factory=dict)
    selection: tuple[bool, str | None] | None = None
    """A message scope's session's selection (selected, template id) when it was resolved."""
    binding_lease: Lease | None = None
    """What a capability bound on this evidence lives by: the playthrough's report and the
    session's selection (an initial scope: its whole ``check_current``)."""


def _card_host(ctx: CardScopeContext) -> CardHost:
    host = ctx.host
    if not isinstance(host, CardHost):
        raise read_only("this host reports no playthroughs: card scopes are unavailable")
    return host


async def resolve(ctx: CardScopeContext, scope: CardScope) -> Evidence:
    """The evidence for ``scope`` (``MVU_READ_ONLY`` when the host's facts or the log refuse it)."""
    host = _card_host(ctx)
    membership = await host.membership(scope.playthrough_id)
    if membership is None:
        raise read_only("no such playthrough", playthrough_id=scope.playthrough_id)
    playthrough = membership.playthrough
    session_lease = await ctx.lease(scope.session_id)
    log = await ctx.sessions.log(scope.session_id)
    snapshot = log.snapshot() if log is not None else None
    if snapshot is None or snapshot.header.id != scope.session_id:
        raise read_only("the host has no such session", session_id=scope.session_id)
    if scope.session_format_version is not None and scope.session_format_version != snapshot.header.version:
        raise read_only("the session's format version differs", session_id=scope.session_id)
    if scope.mode is None:
        # A capability on a message ends with the session's selection as it was bound: every
        # selection call (another character, none, the same again) starts a new generation.
        generation = ctx.views.generation(scope.session_id)

        def same_selection() -> bool:
            return ctx.views.generation(scope.session_id) == generation

        selection = await ctx.ledger.selection(scope.session_id)
        binding = Leases(membership.lease, same_selection)
        return replace(_message(scope, playthrough, snapshot, Leases(binding, session_lease)),
                       selection=selection, binding_lease=binding)
    return await _opening(ctx, scope, playthrough, snapshot, membership.lease, session_lease)


def _message(scope: CardScope, playthrough: Playthrough, snapshot: SessionSnapshot, lease: Leases) -> Evidence:
    assert scope.node_id is not None and scope.variant_id is not None and scope.end_event_id is not None
    variant = playthrough.variant(scope.node_id, scope.variant_id)
    if variant is None or variant.session_id != scope.session_id or variant.end_event_id != scope.end_event_id:
        raise read_only("the timeline has no such variant of this session's message")
    if scope.session_format_version is not None and variant.session_format_version not in (
            None, scope.session_format_version):
        raise read_only("the variant's session format version differs")
    event = snapshot.event(scope.end_event_id)
    if event is None or event.type != "assistant/message" or event.data.get("interrupted"):
        raise read_only("the scope's event is not a finished assistant message", end_event_id=scope.end_event_id)
    found = message_id(event)
    if not isinstance(found, str):
        raise read_only("the scope's message has no id")
    return Evidence(mode=None, writable_head=playthrough.head == (scope.node_id, scope.variant_id)
                    and _last_finished_reply(snapshot, scope.end_event_id),
                    check_current=lease, message_id=found, fingerprint=reply_fingerprint(message_text(event)),
                    identity=session_identity(snapshot, scope.session_id))


def _last_finished_reply(snapshot: SessionSnapshot, seq: int) -> bool:
    """The session's last assistant message, its turn ended ``completed`` and no turn after it."""
    later = [event for event in snapshot.events if event.seq > seq]
    if any(event.type in ("assistant/message", "turn/start") for event in later):
        return False
    ends = [event for event in later if event.type == "turn/end"]
    message = snapshot.event(seq)
    reason = ends[-1].data.get("reason") if ends else None
    return bool(ends) and message is not None and ends[-1].data.get("turn") == message.data.get("turn") \
        and isinstance(reason, Mapping) and reason.get("kind") == "completed"


async def _opening(ctx: CardScopeContext, scope: CardScope, playthrough: Playthrough,
                   snapshot: SessionSnapshot, membership: Lease, session_lease: Lease) -> Evidence:
    assert scope.character_id is not None
    session_id = scope.session_id
    if playthrough.character_id != scope.character_id:
        raise read_only("the playthrough plays another character")
    if not playthrough.member(session_id):
        raise read_only("the session is not a member of the playthrough")
    card_id = character_template_id(scope.character_id)
    views = ctx.views
    generation = views.generation(session_id)
    selected, template_id = await ctx.ledger.selection(session_id)
    if not selected or template_id is None or card_template_id_of(template_id) != card_id:
        raise read_only("the session has not selected this character")
    template = await ctx.ledger.template(template_id)
    greeting = greeting_index_of(template) if isinstance(template, dict) else 0
    token = views.token(session_id, generation)
    if scope.greeting_index is not None and scope.greeting_index != greeting:
        raise read_only("the session opens with another greeting now", greeting_index=greeting)
    if scope.selection_token is not None and scope.selection_token != token:
        raise read_only("the session's selection changed since this view was read")

    def same_view() -> bool:
        return views.generation(session_id) == generation

    starts = [event for event in snapshot.events if event.type == "turn/start"]
    first = starts[0].data.get("turn") if starts else None
    identity = session_identity(snapshot, session_id)
    common: dict[str, Any] = {"view_identity": {"greetingIndex": greeting, "selectionToken": token},
                              "selected_template": template_id, "identity": identity}
    if scope.mode == "greeting":
        return Evidence(mode="greeting", writable_head=False, check_current=Leases(membership, same_view),
                        first_turn=first if isinstance(first, int) else (-1 if starts else None), **common)
    if playthrough.root_session_id != session_id or not playthrough.empty:
        raise read_only("an initial scope is the root session of a playthrough that has sent nothing")
    _check_empty(snapshot)
    header = snapshot.header
    source: dict[str, JsonValue] = {"sessionId": session_id, "playthroughId": scope.playthrough_id,
                                    "characterId": scope.character_id, "sessionFormatVersion": header.version}
    if header.created_at is not None:
        source["sessionCreatedAt"] = header.created_at
    current = Leases(membership, session_lease, same_view)
    return Evidence(mode="initial", writable_head=True, check_current=current, initial_source=source,
                    binding_lease=current, **common)


def _check_empty(snapshot: SessionSnapshot) -> None:
    """An empty session: no fork, and only configuration events (``MVU_READ_ONLY`` otherwise)."""
    header = snapshot.header
    if header.parent_session is not None or header.inherited_event_count is not None:
        raise read_only("a branch's session is never empty: it starts from its parent's state")
    for event in snapshot.events:
        if not _setting(event.type, event.data):
            raise read_only("the session is no longer empty", seq=event.seq, type=event.type)


def _setting(kind: str, data: Mapping[str, Any]) -> bool:
    if kind in SETTING_EVENTS:
        return True
    if kind == "session/end-seed":
        return dict(data) == {}
    if kind == "model/selection":
        effort = data.get("reasoningEffort", "given")
        return set(data) <= {"provider", "model", "reasoningEffort"} and all(
            isinstance(data.get(key), str) and data.get(key) != "" for key in ("provider", "model")) and (
            isinstance(effort, str) and effort != "")
    if kind == "session/title":
        title, source = data.get("title"), data.get("source")
        return set(data) == {"title", "messageSeqs", "source"} and isinstance(title, str) and bool(title.strip()) \
            and data.get("messageSeqs") == [] and source == {"kind": "user"}
    return False
