"""Bad input always gets a clear, typed refusal and never loses or corrupts stored data.

One service over a temporary SQLite ledger, with a session that played a turn, is built once for
the module (building it per example would dominate the run). Each example calls one public
method with valid arguments except one, replaced by an arbitrary value: JSON-ish data, huge and
negative integers, nan/inf, NUL, lone surrogates, very long strings, bytes, dicts with non-str
keys, objects, callables (characters include lone surrogates). Near-valid shapes (a scope, a card,
an edit envelope, a config with one bad field) reach past the outer checks. ``signal`` is drawn on
the side (None, an unset or a set ``asyncio.Event``, or junk). Besides the generated examples, a
deterministic sweep tries every value of ``SPECIAL`` on every argument of every method.

The call must either succeed or raise :class:`MvuError` with a stable code; ``CancelledError``
only when the signal is a set event. A refused call leaves the played instance's revision and
content as they were; only a successful edit may move them. At the end the SQL audits are clean
and the session still plays a turn onto the expected state.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mvu_store import MvuError, open_ledger
from mvu_store.errors import Code
from mvu_store.jsonvalue import canonical_text
from mvu_store.ledger import Ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from tests.service.support import playing, scope

EXTRA_CODES = frozenset({Code.REVISION_CONFLICT.value, Code.SCOPE_MISMATCH.value, Code.STORAGE_LIMIT.value})
BASE_STAT = {"hp": 50, "gold": 10, "level": 1, "mood": "calm"}


# -- the module's one played service ----------------------------------------------------------


@dataclass
class World:
    runner: asyncio.Runner
    ledger: Ledger
    host: MemoryHost
    service: MvuService
    instance: str
    turn_start: int
    reply_seq: int
    ticket: str
    counter: Iterator[int] = field(default_factory=itertools.count)
    codes: dict[str, set[str]] = field(default_factory=dict)
    successes: dict[str, int] = field(default_factory=dict)

    def run(self, awaitable: Awaitable[Any]) -> Any:
        async def wrapped() -> Any:
            return await awaitable

        return self.runner.run(wrapped())


async def _build(path: Path, runner: asyncio.Runner) -> World:
    ledger = await open_ledger(f"sqlite:///{path}")
    host = MemoryHost()
    service = MvuService(ledger=ledger, host=host)
    host.attach(service)
    instance = await playing(service, host)
    reply_seq = await host.turn("s1", turn=1, user="go", reply="_.add('gold', 5);")
    snapshot = await host.inspect("s1")
    assert snapshot is not None
    turn_start = next(event.seq for event in snapshot.events if event.type == "turn/start")
    ticket = await service.capture_session_seed(session_id="s1", kind="fork", at_event_id=reply_seq)
    assert ticket is not None
    host.fork("s1", at_event_id=reply_seq, new_session_id="c1", created_at=2000)
    return World(runner=runner, ledger=ledger, host=host, service=service, instance=instance,
                 turn_start=turn_start, reply_seq=reply_seq, ticket=ticket)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    runner = asyncio.Runner()
    built = runner.run(_build(tmp_path_factory.mktemp("bad-input") / "ledger.sqlite3", runner))
    try:
        yield built
    finally:
        runner.run(built.ledger.close())
        runner.close()


# -- values ---------------------------------------------------------------------------------


class Opaque:
    """An arbitrary object: no JSON shape, not callable."""


SPECIAL: list[Any] = [
    None, True, False, 0, -1, 1, 2**31, 2**53, 2**63, -(2**63) - 1, 10**400, -(10**400), 10**5000,
    math.nan, math.inf, -math.inf, -0.0, 1e308, 5e-324,
    "", " ", "\x00", "a\x00b", "\ud800", "x\udfffy", "a" * 100_000, "mvu:", "mvu:x\x00", "mvu:instance-x", "s1",
    "hero", "null", "__proto__", "constructor",
    b"", b"bytes", bytearray(b"\xff"), memoryview(b"m"),
    [], {}, [None], {"": None}, {1: 2}, {None: "x"}, {(1, 2): 3}, {True: 1, "1": 2}, {math.nan: 1},
    (), (1, 2), frozenset({1}), {1, 2}, complex(1, 2), Decimal("nan"), Decimal("1e1000"),
    Opaque(), object(), Opaque, print, Ellipsis, NotImplemented, ValueError("boom"),
]

_text = st.text(st.characters(exclude_categories=()), max_size=20)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | _text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=12,
)
_keys = st.one_of(st.integers(), st.none(), st.booleans(), st.floats(), st.tuples(st.integers()), st.binary(max_size=4))
_non_json = st.one_of(
    st.binary(max_size=20),
    st.dictionaries(_keys, _json, min_size=1, max_size=3),
    st.lists(st.sampled_from(SPECIAL), max_size=3),
    st.complex_numbers(),
    st.sets(st.integers(), max_size=3),
    st.tuples(_json),
    st.builds(Opaque),
)
MAX_EXAMPLES = 1500  # about 10 s; the whole file stays under 20 s
VALUES = st.one_of(st.sampled_from(SPECIAL), _json, _non_json)


def _set_event() -> asyncio.Event:
    event = asyncio.Event()
    event.set()
    return event


SIGNALS = st.one_of(
    st.none(), st.none(), st.none(), st.builds(asyncio.Event), st.builds(_set_event), st.sampled_from(SPECIAL),
)


def _near(base: dict[str, Any], key: str) -> st.SearchStrategy[dict[str, Any]]:
    """``base`` with one field replaced (or added) by an arbitrary value: bad input that gets past the outer checks."""
    return VALUES.map(lambda value: {**base, key: value})


def _scopes() -> st.SearchStrategy[Any]:
    local = {"authority": "local", "session_id": "s1"}
    return st.one_of(
        VALUES,
        *(_near(local, key) for key in ("authority", "session_id", "sessionId", "message_id", "end_event_id",
                                        "endEventId", "historical", "extra")),
        _near({"authority": "local", "session_id": "s1", "message_id": "s1-m1"}, "end_event_id"),
    )


def _definitions() -> st.SearchStrategy[Any]:
    card = {"character_id": "other", "name": "Other", "initvar": ["hp: 1\n"]}
    return st.one_of(VALUES, *(_near(card, key) for key in ("character_id", "name", "initvar", "schema_source",
                                                            "extra")))


def _contents() -> st.SearchStrategy[Any]:
    return st.one_of(
        VALUES,
        _json.map(lambda value: {"stat_data": value}),
        _near({"stat_data": dict(BASE_STAT)}, "mvu_schema"),
        st.dictionaries(_text, VALUES, max_size=3).map(lambda stat: {"stat_data": {**BASE_STAT, **stat}}),
        VALUES.map(lambda value: {"stat_data": {**BASE_STAT, "gold": value}}),
        VALUES.map(lambda value: {"stat_data": {**BASE_STAT, "hp": value}}),
    )


def _configs() -> st.SearchStrategy[Any]:
    store = {"on": "assistant_message_committed", "strategy": ["parse_mvu_update", "validate_update", "apply_update"]}
    return st.one_of(
        VALUES,
        _near({"type": "mvu-state"}, "type"),
        _near({"type": "mvu-state"}, "store"),
        _near({"type": "mvu-state"}, "retrieve"),
        VALUES.map(lambda value: {"type": "mvu-state", "store": {**store, "strategy": value}}),
        VALUES.map(lambda value: {"type": "mvu-state", "store": {**store, "on": value}}),
        _text.map(lambda key: {"type": "mvu-state", "store": {**store, key: 1}}),
    )


# Per method, the argument strategies that differ from a plain arbitrary value.
SPECIAL_ARGS: dict[str, dict[str, st.SearchStrategy[Any]]] = {
    "discover": {"definition": _definitions()},
    "update": {"content": _contents(), "scope": _scopes()},
    "validate_config": {"config": _configs()},
}
for _method in ("list", "read", "history", "facts", "set_management_mode", "copy"):
    SPECIAL_ARGS.setdefault(_method, {})["scope"] = _scopes()


# -- calls ----------------------------------------------------------------------------------


async def _revision_and_content(world: World) -> tuple[int, str]:
    record = await world.service.read(id=world.instance, scope=scope("s1"))
    assert record is not None
    return record.revision, canonical_text(record.content)


def _base_args(world: World, method: str, revision: int) -> dict[str, Any]:
    """Arguments under which ``method`` would be accepted (unique ids where a success would stick)."""
    n = next(world.counter)
    local = scope("s1")
    args: dict[str, Any] = {
        "discover": {"definition": {"character_id": "other", "name": "Other", "initvar": ["hp: 1\n"]},
                     "session_id": None},
        "select_character": {"session_id": "s1", "character_id": "hero"},
        "checkpoint": {"session_id": "s1", "turn_start_seq": world.turn_start},
        "ingest": {"session_id": "s1"},
        "list": {"scope": local},
        "read": {"id": world.instance, "scope": local},
        "update": {"id": world.instance, "content": {"stat_data": dict(BASE_STAT)}, "expected_revision": revision,
                   "operation_id": f"op-{n}", "scope": local},
        "history": {"id": world.instance, "scope": local, "include_before": True},
        "facts": {"id": world.instance, "scope": local},
        "set_management_mode": {"id": world.instance, "mode": "native", "expected_revision": revision,
                                "operation_id": f"mode-{n}", "scope": local},
        "copy": {"id": world.instance, "new_id": f"mvu:copy-{n}", "scope": local},
        "capture_session_seed": {"session_id": "s1", "kind": "fork", "at_event_id": world.reply_seq,
                                 "prefix_end_event_id": None, "target_session_id": None},
        "install_session_seed": {"ticket": world.ticket, "session_id": "c1"},
        "register_usage": {"handler": lambda request: None, "provider_id": None},
        "observe": {"listener": lambda fact: None},
        "validate_config": {"config": {"type": "mvu-state"}},
    }[method]
    assert tuple(args) == ARGUMENTS[method]
    return args


SYNC = ("register_usage", "observe", "validate_config")
# Every public method and its arguments (``signal`` aside); ``_base_args`` gives each a valid value.
ARGUMENTS: dict[str, tuple[str, ...]] = {
    "discover": ("definition", "session_id"),
    "select_character": ("session_id", "character_id"),
    "checkpoint": ("session_id", "turn_start_seq"),
    "ingest": ("session_id",),
    "list": ("scope",),
    "read": ("id", "scope"),
    "update": ("id", "content", "expected_revision", "operation_id", "scope"),
    "history": ("id", "scope", "include_before"),
    "facts": ("id", "scope"),
    "set_management_mode": ("id", "mode", "expected_revision", "operation_id", "scope"),
    "copy": ("id", "new_id", "scope"),
    "capture_session_seed": ("session_id", "kind", "at_event_id", "prefix_end_event_id", "target_session_id"),
    "install_session_seed": ("ticket", "session_id"),
    "register_usage": ("handler", "provider_id"),
    "observe": ("listener",),
    "validate_config": ("config",),
}
PARAMETERS = [(method, name) for method, names in ARGUMENTS.items() for name in names] + [
    (method, "signal") for method in ARGUMENTS if method not in SYNC]


@st.composite
def calls(draw: st.DrawFn) -> tuple[str, str, Any, Any]:
    method, name = draw(st.sampled_from(PARAMETERS))
    value = draw(SPECIAL_ARGS.get(method, {}).get(name, VALUES)) if name != "signal" else None
    signal = draw(SIGNALS) if method not in SYNC else None
    if name == "signal":
        signal = draw(st.one_of(SIGNALS, VALUES))
    return method, name, value, signal


def _invoke(world: World, method: str, args: dict[str, Any]) -> Callable[[], Awaitable[Any]]:
    service = world.service
    if method == "validate_config":
        config = args["config"]

        async def validate() -> Any:
            return MvuService.validate_config(config)

        return validate
    if method in SYNC:
        async def registered() -> Any:
            dispose = getattr(service, method)(**args)
            dispose()  # never leave a fuzzed handler or listener in place
            return dispose

        return registered
    return lambda: getattr(service, method)(**args)


async def _outcome(call: Callable[[], Awaitable[Any]]) -> tuple[str, Any]:
    try:
        return "ok", await call()
    except MvuError as error:
        return "refused", error
    except asyncio.CancelledError as error:
        return "cancelled", error
    except Exception as error:
        return "escaped", error


def _check_code(code: Any) -> None:
    assert isinstance(code, str), code
    assert code.startswith("MVU_") or code in EXTRA_CODES, code


# -- the property ---------------------------------------------------------------------------


def _call(world: World, method: str, name: str, value: Any, signal: Any, revision: int) -> str:
    """Call ``method`` with ``name`` replaced by ``value``; check the outcome and return its kind."""
    args = _base_args(world, method, revision)
    if name != "signal":
        args[name] = value
    if method not in SYNC:
        args["signal"] = signal
    kind, result = world.run(_outcome(_invoke(world, method, args)))
    assert kind != "escaped", f"{method}({name}={_shown(value)}) raised {type(result).__name__}: {_shown(result)}"
    if kind == "cancelled":
        assert isinstance(signal, asyncio.Event) and signal.is_set(), f"{method}({name}=...) cancelled without a signal"
    if kind == "refused":
        _check_code(result.code)
        world.codes.setdefault(method, set()).add(result.code)
    if kind == "ok":
        world.successes[method] = world.successes.get(method, 0) + 1
    return kind


def _check_state(method: str, before: tuple[int, str], after: tuple[int, str], edits: int) -> None:
    """Only a successful edit moves the played instance: at most one revision each, and only
    ``update`` changes its content."""
    if edits == 0:
        assert after == before, f"{method}: a refused or read-only call changed the played instance"
        return
    assert before[0] <= after[0] <= before[0] + edits, (method, before[0], after[0], edits)
    if method != "update":
        assert after[1] == before[1], f"{method}: only update changes the content"


def _attempt(world: World, method: str, name: str, value: Any, signal: Any) -> None:
    before = world.run(_revision_and_content(world))
    kind = _call(world, method, name, value, signal, before[0])
    edits = int(kind == "ok" and method in ("update", "set_management_mode"))
    _check_state(method, before, world.run(_revision_and_content(world)), edits)


def _shown(value: Any) -> str:
    try:
        return repr(value)[:200]
    except Exception:
        return f"<{type(value).__name__}>"


@settings(max_examples=MAX_EXAMPLES, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example,
                                 HealthCheck.filter_too_much])
@given(call=calls())
def test_bad_input_is_refused_with_a_code_and_stored_data_stays(world: World, call: tuple[str, str, Any, Any]) -> None:
    _attempt(world, *call)


@pytest.mark.parametrize(("method", "name"), PARAMETERS, ids=[f"{m}-{n}" for m, n in PARAMETERS])
def test_every_argument_refuses_every_special_value(world: World, method: str, name: str) -> None:
    """The values most likely to break a refusal's own message or the storage layer, on every
    argument: generated examples reach any one (argument, value) pair only now and then."""
    before = world.run(_revision_and_content(world))
    edits = 0
    kinds = set()
    for value in SPECIAL:
        # Each call runs against the revision read before the sweep: a second edit is a conflict.
        kind = _call(world, method, name, value, value if name == "signal" else None, before[0])
        kinds.add(kind)
        edits += kind == "ok" and method in ("update", "set_management_mode")
    _check_state(method, before, world.run(_revision_and_content(world)), edits)
    # The sweep reached the checks: some special value was refused with a code (or cancelled);
    # history and facts answer any id they do not know with [] (as the original), never refuse it.
    assert kinds & {"refused", "cancelled"} or (method, name) in {("history", "id"), ("facts", "id")}, \
        f"{method}({name}=...) refused nothing"


def test_after_the_fuzzing_the_ledger_is_clean_and_the_session_still_plays(world: World) -> None:
    """Runs after the property (file order): the audits are clean, an edit and a turn still apply."""

    async def check() -> None:
        service, host = world.service, world.host
        assert await world.ledger.audit() == []
        await service.select_character(session_id="s1", character_id="hero")  # a fuzzed None may have unselected it
        revision, _ = await _revision_and_content(world)
        receipt = await service.update(id=world.instance, content={"stat_data": dict(BASE_STAT)},
                                       expected_revision=revision, operation_id="final-reset", scope=scope("s1"))
        assert receipt.revision == revision + 1
        snapshot = await host.inspect("s1")
        assert snapshot is not None
        turn = max(event.data.get("turn", 0) for event in snapshot.events
                   if isinstance(event.data.get("turn"), int)) + 1
        await host.turn("s1", turn=turn, user="go", reply="_.add('gold', 5);")
        record = await service.read(id=world.instance, scope=scope("s1"))
        assert record is not None
        assert record.revision == revision + 2
        assert record.content["stat_data"] == {**BASE_STAT, "gold": 15}  # type: ignore[index,call-overload]
        assert await world.ledger.audit() == []

    world.run(check())
