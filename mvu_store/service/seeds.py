"""Fork, reply-swipe and request-retry seeds: the checks on durable coordinates (DIGEST F-1 ... F-7).

Pure functions over session snapshots; the service does the reads and the atomic install. A
seed freezes, before the host creates the child, which instance and which exact state (version
key, revision, content hash) the child starts from; installing it checks that the child really
is that branch (parent, copied prefix, checkpoint positions) and creates the child instances in
one unit: the child links to the parent's history (lineage, not copies), nothing is replayed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.host import SessionEvent, SessionSnapshot, event_turn, message_id, message_text, user_source_kind
from mvu_store.ledger.records import VersionRecord
from mvu_store.service.models import storable
from mvu_store.service.session_replies import CONVERSATION_EVENTS, reply_fingerprint, seed_boundary

KINDS = ("fork", "reply-swipe", "request-retry")
_MESSAGES = frozenset({"user/message", "assistant/message"})


@dataclass(frozen=True, slots=True)
class Coordinates:
    kind: str
    at_event_id: int
    prefix_end_event_id: int | None
    target_session_id: str | None

    @property
    def cut(self) -> int | None:
        """The last event of the parent the child keeps (None: a root swipe/retry keeps nothing)."""
        return self.at_event_id if self.kind == "fork" else self.prefix_end_event_id


def _seq(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise MvuError(Code.SEED, f"{name} must be a non-negative event id")
    return value


def coordinates(kind: Any, at_event_id: Any, prefix_end_event_id: Any, target_session_id: Any) -> Coordinates:
    """The capture arguments of F-7, or ``MVU_SEED``."""
    if kind not in KINDS:
        raise MvuError(Code.SEED, f"kind is one of {', '.join(KINDS)}")
    at = _seq(at_event_id, "at_event_id")
    if at is None:
        raise MvuError(Code.SEED, "a seed needs the concrete event it starts from (at_event_id)")
    prefix = _seq(prefix_end_event_id, "prefix_end_event_id")
    if prefix is not None and (kind == "fork" or prefix >= at):
        raise MvuError(Code.SEED, "prefix_end_event_id is the reply before a swiped or retried turn")
    if target_session_id is not None and (not isinstance(target_session_id, str) or not target_session_id
                                          or len(target_session_id) > 200 or not storable(target_session_id)):
        raise MvuError(Code.SEED, "target_session_id must be a session id")
    if kind != "fork" and prefix is None and target_session_id is None:
        raise MvuError(Code.SEED, "a first-turn swipe or retry names its new empty session up front "
                                  "(target_session_id)")
    return Coordinates(kind, at, prefix, target_session_id)


def target_turn(snapshot: SessionSnapshot, where: Coordinates) -> int:
    """The turn whose state the child starts from, after checking the source coordinates."""
    event = snapshot.event(where.at_event_id)
    turn = event_turn(event)
    if event is None or isinstance(turn, bool) or not isinstance(turn, int):
        raise MvuError(Code.SEED, "the seed's event is not a durable event of a turn", at_event_id=where.at_event_id)
    if where.kind in ("fork", "reply-swipe"):
        if event.type != "assistant/message" or event.data.get("interrupted"):
            raise MvuError(Code.SEED, "a fork or swipe starts at a durable final reply", at_event_id=where.at_event_id)
    else:
        _check_stopped_request(snapshot, event, turn)
    if where.prefix_end_event_id is not None:
        _check_prefix(snapshot, where.prefix_end_event_id, turn)
    elif where.kind != "fork":
        _check_first_turn(snapshot, turn, event.seq)
    return turn


def _check_first_turn(snapshot: SessionSnapshot, turn: int, at: int) -> None:
    """A swipe/retry without a prefix is a root one: only the session's first turn (F-7)."""
    starts = [e.seq for e in snapshot.events if e.type == "turn/start" and event_turn(e) == turn]
    start = starts[0] if starts else at
    if any(e.seq < start and (e.type == "turn/start" or (e.type == "assistant/message" and event_turn(e) != turn))
           for e in snapshot.events):
        raise MvuError(Code.SEED, "a later turn's swipe or retry keeps the history before it "
                                  "(prefix_end_event_id); only the first turn's takes target_session_id",
                       at_event_id=at, turn=turn)


def _check_stopped_request(snapshot: SessionSnapshot, event: SessionEvent, turn: int) -> None:
    """A retry's source: a human request whose turn was stopped with no assistant text (F-3)."""
    if event.type != "user/message" or user_source_kind(event) not in ("user", "steering"):
        raise MvuError(Code.SEED, "a retry starts at the human request that was stopped", at_event_id=event.seq)
    same_turn = [e for e in snapshot.events if event_turn(e) == turn and e.seq > event.seq]
    if any(e.type == "assistant/message" and message_text(e) for e in same_turn):
        raise MvuError(Code.SEED, "a retried request has no assistant text: this turn has a reply", turn=turn)
    ends = [e for e in same_turn if e.type == "turn/end"]
    reason = ends[-1].data.get("reason") if ends else None
    if not isinstance(reason, Mapping) or reason.get("kind") != "aborted":
        raise MvuError(Code.SEED, "a retry needs the stopped (aborted) turn of the request", turn=turn)


def _check_prefix(snapshot: SessionSnapshot, prefix_end: int, turn: int) -> None:
    """A later swipe/retry keeps the history up to the reply right before its target turn."""
    prefix = snapshot.event(prefix_end)
    starts = [e.seq for e in snapshot.events if e.type == "turn/start" and event_turn(e) == turn]
    start = starts[0] if starts else None
    if prefix is None or prefix.type != "assistant/message" or start is None or start <= prefix_end or any(
        prefix_end < e.seq < start and e.type in ("turn/start", "assistant/message") for e in snapshot.events
    ):
        raise MvuError(Code.SEED_MISMATCH, "the prefix must end at the reply right before the target turn",
                       prefix_end_event_id=prefix_end)


def _message_seq(version: VersionRecord) -> int | None:
    seq = version.source.get("messageSeq")
    return seq if isinstance(seq, int) and not isinstance(seq, bool) else None


def fork_version(versions: Sequence[VersionRecord], cut: int, message_id: Any) -> int | None:
    """The index of the version a fork at reply ``cut`` starts from, or None.

    It is the last version recorded at that reply (an edit of it included; a failed receipt too:
    its variables are the unchanged state) that comes before any version of a later message. An
    edit copies its head's coordinates, so an edit made after later turns that stopped or failed
    (head still on this reply) carries ``cut`` too, but it is later history: taking it would
    drag those later versions into the child's lineage."""
    chosen: int | None = None
    for index, version in enumerate(versions):
        seq = _message_seq(version)
        if seq is not None and seq > cut:
            break
        if seq == cut and version.source.get("messageId") == message_id:
            chosen = index
    return chosen


def check_lineage(versions: Sequence[VersionRecord], at_key: str | None, cut: int | None) -> None:
    """The history a child inherits (every version up to ``at_key``, in history order) lies
    within its copied prefix: no version of a message beyond ``cut`` (the child could never
    verify it: every read would be ``MVU_HISTORY_UNAVAILABLE``)."""
    if at_key is None:
        return
    index = next((i for i, version in enumerate(versions) if version.key == at_key), None)
    if index is None or cut is None:
        raise MvuError(Code.SEED_MISMATCH, "the seed's version is not in the source's history", version_key=at_key)
    beyond = [v.key for v in versions[: index + 1] if (_message_seq(v) or 0) > cut]
    if beyond:
        raise MvuError(Code.SEED_MISMATCH, "the inherited history would reach beyond the branch's prefix",
                       version_key=at_key, cut=cut)


def check_child(body: Mapping[str, Any], child: SessionSnapshot, source: SessionSnapshot | None) -> None:
    """The child session is the branch the seed was captured for (F-7): its parent, its copied
    prefix (message ids and text fingerprints) and no new work yet; a root swipe/retry's child
    is a new empty session."""
    source_id = body["sourceSessionId"]
    prefix = body.get("prefixEndEventId")
    cut = body["atEventId"] if body["kind"] == "fork" else prefix
    if cut is None:
        if child.header.parent_session is not None or any(e.type in CONVERSATION_EVENTS for e in child.events):
            raise MvuError(Code.SEED_MISMATCH, "a first-turn swipe or retry installs into a new empty session")
        return
    if child.header.parent_session != source_id:
        raise MvuError(Code.SEED_MISMATCH, "the child's parent session is not the seed's source",
                       parent_session=child.header.parent_session)
    if any(e.seq > cut and e.type in CONVERSATION_EVENTS for e in child.events):
        raise MvuError(Code.SEED_CONFLICT, "the child already started new work", session_id=child.header.id)
    boundary = seed_boundary(child)
    if boundary <= cut:
        # Replies before the boundary count as inherited; one at or past it would be applied again.
        raise MvuError(Code.SEED_MISMATCH, f"the child's own events must start after the inherited prefix (event "
                                           f"{cut}): end the copied prefix with session/end-seed, or set "
                                           "inheritedEventCount past it", boundary=boundary, cut=cut)
    frozen = body.get("prefix")
    if not isinstance(frozen, list):
        # A seed captured before the prefix was frozen: compare with the source as it is now.
        if source is None:
            raise MvuError(Code.SEED_MISMATCH, "the seed's source session is gone", session_id=source_id)
        frozen = frozen_prefix(source, cut)
    copied = frozen_prefix(child, cut)
    if copied != frozen:
        seq = next((a.get("seq") for a, b in zip(copied, frozen, strict=False) if a != b),
                   min(len(copied), len(frozen)))
        raise MvuError(Code.SEED_MISMATCH, "the child's inherited messages differ from the source's at the capture",
                       seq=seq if isinstance(seq, int) else None)


def frozen_prefix(snapshot: SessionSnapshot, cut: int) -> list[dict[str, Any]]:
    """The message events a branch keeps (seq, type, message id, text fingerprint), frozen in the
    seed at capture: install checks the child against them, not against the parent's events then."""
    return [{"seq": event.seq, "type": event.type, "messageId": message_id(event),
             "fingerprint": reply_fingerprint(message_text(event))}
            for event in snapshot.events if event.seq <= cut and event.type in _MESSAGES]


def check_checkpoint_positions(child: SessionSnapshot, checkpoints: list[dict[str, Any]]) -> None:
    """Each inherited pre-turn checkpoint sits on the same turn/start in the child."""
    for point in checkpoints:
        event = child.event(point["seq"])
        if event is None or event.type != "turn/start" or event_turn(event) != point["turn"]:
            raise MvuError(Code.SEED_MISMATCH, "an inherited pre-turn checkpoint does not match the child's prefix",
                           seq=point["seq"])
