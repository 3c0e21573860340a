"""Why a value is what it is: a path's story, a version's or a turn's changes, and the diff of
two points (docs/python-api.md#changes-and-diffs).

Both are reads as history is one: the same scope and the same refusals (``MvuService.history``),
the same check of recorded history after the rows are read, and nothing written. The changes are
the ledger's ``changes`` rows; a diff is computed from the two stored states with the one diff
every part uses (:func:`mvu_store.json_diff.json_diff`), on ``stat_data`` only: the display and
delta data are what one turn showed and did, not state, and a diff of them would repeat the
state's differences in other words.

Each answer comes typed (``changes``, ``diff``) or as the JSON the wire carries (``changes_json``,
``diff_json``, written by :mod:`mvu_store.service.change_json` without the models).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any, NamedTuple, TypeVar

from mvu_store.bounded import KeptBy
from mvu_store.errors import Code, MvuError
from mvu_store.json_diff import MAX_DIFFERENCES, Diff, json_diff
from mvu_store.jsonvalue import MAX_STATE_BYTES, JsonValue
from mvu_store.ledger import ChangeEntry, ChangePage, StatePoint
from mvu_store.service.allocation import Allocation
from mvu_store.service.catalog import Entry
from mvu_store.service.change_json import changes_text, diff_text
from mvu_store.service.context import ChangeReadsContext, Signal, check_signal
from mvu_store.service.models import (
    MAX_REVISION,
    Change,
    Changes,
    DiffChange,
    DiffPoint,
    RecordJson,
    Scope,
    StateDiff,
    check_session_id,
    parse_scope,
)
from mvu_store.service.offload import off_loop
from mvu_store.service.reads import Reads, check_page
from mvu_store.service.verification import Logs

DEFAULT_CHANGES_PAGE = 100
MAX_PATH_CHARS = 4_096
"""The longest JSON pointer a story is asked for (a path no state can hold is refused early)."""
# RFC 6901: '' or '/'-separated tokens in which '~' only escapes '0' ('~') or '1' ('/').
_POINTER = re.compile(r"(?:/(?:[^~/]|~[01])*)*")
_DIFF_ON_LOOP_CHARS = 64 * 1024
"""Two states up to this many characters together are compared on the loop (well under a
millisecond); larger ones in a worker thread."""
_ON_LOOP_ENTRIES = 64
"""A page of changes up to this many is written as JSON on the loop; a longer one (up to a
thousand, with their values) in a worker thread."""
T = TypeVar("T")
ANSWER_TEXT_BYTES = 16 * 1024 * 1024
"""What the kept answers of stories and of diffs may weigh, each (their bytes)."""
MAX_KEPT_ANSWERS = 1_024
"""How many of each are kept at most: a story's key holds its path (up to 4 KiB), which the
weight does not count."""

_Head = tuple[int, int, str | None]
"""What moves a resource's changes: its row's position, revision and head version."""
_DiffQuery = tuple[str, int, str, int | None]
"""A diff's ends: resource and revision (None: the current one) of each."""


class _ChangesQuery(NamedTuple):
    """A story's, a version's or a turn's query as checked (a kept answer's key, with the resource)."""

    only: str | None
    """The session whose rows it shows (None: all)."""
    path: str | None = None
    revision: int | None = None
    turn_session: str | None = None
    turn: int | None = None
    before: int | None = None
    limit: int | None = None


class ChangeReads:
    """``MvuService.changes`` and ``MvuService.diff``.

    The wire's answers (``changes_json``, ``diff_json``) are kept by their query and what can move
    them: the resource's head (both ends' for a diff). A change row is only ever written with a
    version, so while the head stays, a query's rows, and so its answer, stay; a fork child's
    inherited rows end at its fork point and never change. Every request still meets the scope's
    refusals and the check of recorded history: only the ledger's rows and the JSON are spared.
    """

    def __init__(self, ctx: ChangeReadsContext, allocation: Allocation, reads: Reads) -> None:
        self._ctx = ctx
        self._allocation = allocation
        self._reads = reads
        self._stories: KeptBy[tuple[str, _ChangesQuery], _Head, RecordJson] = KeptBy(
            ANSWER_TEXT_BYTES, weigh=lambda answer: len(answer.body), max_entries=MAX_KEPT_ANSWERS)
        # With a diff: whether its ends are of two lineages (the scope must then read both).
        self._diffs: KeptBy[_DiffQuery, tuple[_Head, _Head], tuple[RecordJson, bool]] = KeptBy(
            ANSWER_TEXT_BYTES, weigh=lambda kept: len(kept[0].body), max_entries=MAX_KEPT_ANSWERS)

    async def changes(self, resource_id: Any, scope: Scope | dict[str, Any], *, path: Any, revision: Any, turn: Any,
                      session_id: Any, before: Any, limit: Any, signal: Signal | None) -> Changes:
        entry, logs, query = await self._changes_query(resource_id, scope, path=path, revision=revision, turn=turn,
                                                       session_id=session_id, before=before, limit=limit,
                                                       signal=signal)
        page = await self._page(entry, logs, query)
        return Changes(id=entry.id, changes=[_change(change) for change in page.entries],
                       next_before=page.next_before, truncated=page.truncated)

    async def changes_json(self, resource_id: Any, scope: Scope | dict[str, Any], *, path: Any, revision: Any,
                           turn: Any, session_id: Any, before: Any, limit: Any, signal: Signal | None) -> RecordJson:
        entry, logs, query = await self._changes_query(resource_id, scope, path=path, revision=revision, turn=turn,
                                                       session_id=session_id, before=before, limit=limit,
                                                       signal=signal)
        head = _head(entry)
        key = (entry.id, query)
        kept = self._stories.get(key, head) if head is not None else None
        if kept is not None:
            await self._ctx.verifier.check(entry, logs)
            return kept
        page = await self._page(entry, logs, query)

        def answer_of() -> RecordJson:
            return RecordJson.of_body(0 if head is None else head[1],
                                      changes_text(entry.id, page.entries, page.next_before, page.truncated))

        answer = answer_of() if len(page.entries) <= _ON_LOOP_ENTRIES else await off_loop(answer_of)
        if head is not None:
            self._stories.put(key, head, answer)
        return answer

    async def _changes_query(self, resource_id: Any, scope: Scope | dict[str, Any], *, path: Any, revision: Any,
                             turn: Any, session_id: Any, before: Any, limit: Any,
                             signal: Signal | None) -> tuple[Entry, Logs, _ChangesQuery]:
        """The resource, once the scope may read it, and the query of its changes as checked."""
        check_signal(signal)
        parsed = parse_scope(scope)
        chosen = [name for name, value in (("path", path), ("revision", revision), ("turn", turn))
                  if value is not None]
        if len(chosen) != 1:
            raise MvuError(Code.OPERATION, "give exactly one of path (a path's story), revision (a version's "
                                           "changes) or turn (a turn's changes)")
        if path is None and (before is not None or limit is not None):
            raise MvuError(Code.OPERATION, "before and limit page a path's story: give them with path only")
        if turn is None and session_id is not None:
            raise MvuError(Code.OPERATION, "session_id names the session of a turn: give it with turn only")
        check_page(limit, before)
        entry, logs = await self._entry(resource_id, parsed)
        # What a session's history shows of a resource: an instance's whole history, another
        # resource's versions of that session and what it inherits.
        only = None if entry.is_instance else parsed.session_id
        if path is not None:
            return entry, logs, _ChangesQuery(only, path=_pointer(path), before=before,
                                              limit=DEFAULT_CHANGES_PAGE if limit is None else limit)
        if revision is not None:
            return entry, logs, _ChangesQuery(only, revision=_revision("revision", revision))
        return entry, logs, _ChangesQuery(only, turn_session=_turn_session(session_id, parsed), turn=_turn(turn))

    async def _page(self, entry: Entry, logs: Logs, query: _ChangesQuery) -> ChangePage:
        """The page of the resource's changes ``query`` asks for, as the scope's session sees it."""
        only, path, revision, turn_session, turn, before, limit = query
        ledger = self._ctx.ledger
        page: ChangePage | None
        if entry.row is None:  # a legacy record or an instance not allocated: no version, no change
            page = ChangePage(())
        elif path is not None:
            assert limit is not None
            page = await ledger.path_changes(entry.id, path, before_position=before, limit=limit, session_id=only)
        elif revision is not None:
            page = await ledger.version_changes(entry.id, revision=revision)
            if page is None and revision != 0:
                raise MvuError(Code.MISSING, f"{entry.id} has no revision {revision}", id=entry.id,
                               revision=revision)
        else:
            assert turn_session is not None and turn is not None
            page = await ledger.turn_changes(entry.id, session_id=turn_session, turn=turn)
        await self._ctx.verifier.check(entry, logs)  # after the read: every change listed is of a checked version
        if page is None:
            return ChangePage(())
        if only is not None:
            page = replace(page, entries=tuple(change for change in page.entries
                                               if change.inherited or change.session_id == only))
        return page

    async def diff(self, resource_id: Any, scope: Scope | dict[str, Any], *, from_revision: Any, to_revision: Any,
                   to_id: Any, signal: Signal | None) -> StateDiff:
        parsed, first, second, logs, (start, end) = await self._ends(resource_id, scope, from_revision=from_revision,
                                                                     to_revision=to_revision, to_id=to_id,
                                                                     signal=signal)
        before, after = await self._points(parsed, first, second, logs, start, end)
        found = await _off_loop_if_large(before, after, lambda: _difference(before, after))
        return StateDiff.model_validate({"from": _point(before), "to": _point(after), **found})

    async def diff_json(self, resource_id: Any, scope: Scope | dict[str, Any], *, from_revision: Any,
                        to_revision: Any, to_id: Any, signal: Signal | None) -> RecordJson:
        parsed, first, second, logs, (start, end) = await self._ends(resource_id, scope, from_revision=from_revision,
                                                                     to_revision=to_revision, to_id=to_id,
                                                                     signal=signal)
        heads = (_head(first), _head(second))
        assert heads[0] is not None and heads[1] is not None  # _ends refused a resource without versions
        key = (first.id, start, second.id, end)
        kept = self._diffs.get(key, (heads[0], heads[1]))
        if kept is not None:
            answer, lineages = kept
            self._require_both(parsed, first, second, lineages)
            for entry in {first.id: first, second.id: second}.values():
                await self._ctx.verifier.check(entry, logs)
            return answer
        before, after = await self._points(parsed, first, second, logs, start, end)
        answer = await _off_loop_if_large(before, after, lambda: RecordJson.of_body(
            after.revision, diff_text(before, after, _state_diff(before, after))))
        self._diffs.put(key, (heads[0], heads[1]), (answer, after.root != before.root))
        return answer

    async def _ends(self, resource_id: Any, scope: Scope | dict[str, Any], *, from_revision: Any,
                    to_revision: Any, to_id: Any,
                    signal: Signal | None) -> tuple[Scope, Entry, Entry, Logs, tuple[int, int | None]]:
        """The two resources a diff compares, once the scope may read one of them, and the
        revisions to compare (None: the current one)."""
        check_signal(signal)
        parsed = parse_scope(scope)
        start = _revision("from_revision", from_revision)
        end = None if to_revision is None else _revision("to_revision", to_revision)
        first, logs = await self._entry(resource_id, parsed, refuse=False)
        second = first if to_id is None or to_id == first.id else (await self._entry(to_id, None))[0]
        if not any(entry.accessible(parsed) for entry in (first, second)):
            first.require_access(parsed)
        for entry in (first, second):
            if entry.row is None:
                raise MvuError(Code.MIGRATION_REQUIRED if entry.legacy is not None else Code.MISSING,
                               f"{entry.id} keeps no versions to compare", id=entry.id)
        return parsed, first, second, logs, (start, end)

    async def _points(self, parsed: Scope, first: Entry, second: Entry, logs: Logs, start: int,
                      end: int | None) -> tuple[StatePoint, StatePoint]:
        """The two stored states a diff compares, once the scope may read them."""
        before, after = await self._ctx.ledger.states_at([(first.id, start), (second.id, end)])
        self._require_both(parsed, first, second, after.root != before.root)
        for entry in {first.id: first, second.id: second}.values():
            await self._ctx.verifier.check(entry, logs)
        return before, after

    @staticmethod
    def _require_both(scope: Scope, first: Entry, second: Entry, lineages: bool) -> None:
        """One end the scope may read, the other too or of the same lineage (``lineages``: they
        are of two): another branch, swipe or session of one playthrough, or the parent a fork
        child's history goes back to."""
        readable = [entry for entry in (first, second) if entry.accessible(scope)]
        if len(readable) == 1 and lineages:
            (second if readable[0] is first else first).require_access(scope)

    async def _entry(self, resource_id: Any, scope: Scope | None, *, refuse: bool = True) -> tuple[Entry, Logs]:
        """The resource and the session logs it was found with. In a session's scope it is found
        as a read finds it (the session's rows and log in one round trip, its refusals first);
        ``refuse``: a resource the scope may not read is refused, as history refuses it."""
        if scope is not None and scope.session_id is not None and isinstance(resource_id, str):
            try:
                found, logs, _ = await self._reads.accessible(resource_id, scope)
            except MvuError as error:
                if refuse or error.code != Code.SCOPE_MISMATCH:
                    raise
                found, logs = await self._ctx.catalog.entry(resource_id), {}
        else:
            await self._allocation.unallocated_shared()  # its refusals (a configured id held by legacy state)
            found = await self._ctx.catalog.entry(resource_id) if isinstance(resource_id, str) else None
            logs = {}
            if found is not None and scope is not None and refuse:
                found.require_access(scope)
        if found is None:
            shown = resource_id[:200] if isinstance(resource_id, str) else None
            raise MvuError(Code.MISSING, f"no resource {shown!r}", id=shown)
        return found, logs


def _head(entry: Entry) -> _Head | None:
    """What moves the entry's changes (None: it keeps no versions)."""
    row = entry.row
    return None if row is None else (row.position, row.revision, row.head_key)


def _pointer(path: Any) -> str:
    if not isinstance(path, str) or len(path) > MAX_PATH_CHARS or not _POINTER.fullmatch(path):
        raise MvuError(Code.PATH, f"path must be a JSON pointer of at most {MAX_PATH_CHARS} characters into "
                                  "stat_data: '' (all of it) or '/hp', '/items/0', '~1' for '/' and '~0' for '~' "
                                  "in a key", field="path")
    return path


def _revision(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_REVISION:
        raise MvuError(Code.OPERATION, f"{name} must be an integer from 0 to {MAX_REVISION}", field=name)
    return value


def _turn(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_REVISION:
        raise MvuError(Code.OPERATION, "turn must be a non-negative integer", field="turn")
    return value


def _turn_session(session_id: Any, scope: Scope) -> str:
    if session_id is None and scope.session_id is None:
        raise MvuError(Code.OPERATION, "a turn is one session's: give session_id (the scope names none)")
    return check_session_id(scope.session_id if session_id is None else session_id)


def _change(entry: ChangeEntry) -> Change:
    # Built without validation: every field comes typed from the ledger's record, and a page holds
    # up to a thousand (validating each would cost more than reading them).
    values: dict[str, JsonValue] = {}
    if entry.before_text is not None:
        values["before"] = json.loads(entry.before_text)
    if entry.after_text is not None:
        values["after"] = json.loads(entry.after_text)
    return Change.model_construct(
        resource_id=entry.resource_id, inherited=entry.inherited, position=entry.position, revision=entry.revision,
        seq=entry.seq, session_id=entry.session_id, turn=entry.turn, message_seq=entry.message_seq, path=entry.path,
        op=entry.op, status=entry.status, actor=entry.actor, omitted=entry.omitted, command=entry.command,
        code=entry.code, reason=entry.reason, message=entry.message, derived=entry.derived, **values)


def _point(point: StatePoint) -> DiffPoint:
    return DiffPoint(id=point.resource_id, revision=point.revision, version_key=point.version_key)


async def _off_loop_if_large(before: StatePoint, after: StatePoint, compare: Callable[[], T]) -> T:
    """``compare()`` of two states: on the loop when they are small, else in a worker thread."""
    if len(before.text) + len(after.text) <= _DIFF_ON_LOOP_CHARS:
        return compare()
    return await off_loop(compare)


def _state_diff(before: StatePoint, after: StatePoint) -> Diff:
    """The differences of the two states' ``stat_data`` (bounded: states of at most the state
    budget, at most ``MAX_DIFFERENCES`` listed)."""
    return json_diff(_stat_data(before), _stat_data(after), limit=MAX_DIFFERENCES)


def _difference(before: StatePoint, after: StatePoint) -> dict[str, Any]:
    """:func:`_state_diff` as the fields of a :class:`StateDiff`."""
    found = _state_diff(before, after)
    return {"changes": [DiffChange.model_construct(path=item.path, op=item.op,
                                                   **({"before": item.before[0]} if item.before else {}),
                                                   **({"after": item.after[0]} if item.after else {}))
                        for item in found.differences],
            "truncated": found.truncated}


def _stat_data(point: StatePoint) -> JsonValue:
    if len(point.text) > MAX_STATE_BYTES or len(point.text.encode()) > MAX_STATE_BYTES:
        raise MvuError(Code.LIMIT, f"the state of {point.resource_id} at revision {point.revision} is over "
                                   f"{MAX_STATE_BYTES} bytes: too large to compare", limit=MAX_STATE_BYTES)
    variables = json.loads(point.text)
    return variables.get("stat_data") if isinstance(variables, dict) else None
