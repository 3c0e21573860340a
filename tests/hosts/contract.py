"""The host contract: the cases every host of ``mvu_store.host`` passes, whatever keeps its sessions.

Each host's test module subclasses :class:`HostContract` with a ``driver`` fixture (a
:class:`HostDriver`: how a chat program creates and appends on that host), so ``MemoryHost`` and
``StoreHost`` answer the very same cases: the protocol's reads (``inspect``, ``inspect_since``),
its leases (``capture_session_lease``, ``capture_appends``), the card facts (``membership``,
``authorize_card_write``), the header checks every host shares, and what a refusal leaves
(nothing). The events are sent in the form the store keeps (docs/host-protocol.md), so both
hosts hold the same history and must give the same fingerprints.

What only one host does stays with its own tests: the store's event rules and turn order
(tests/store_host), a memory host's drift simulations and log files (tests/test_memory_host.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import pytest

from mvu_store.errors import Code, MvuError
from mvu_store.host import (
    SESSION_FORMAT_VERSION,
    AppendWatchHost,
    CardHost,
    Host,
    HostFacts,
    IncrementalHost,
    Playthrough,
    SessionEvent,
    SessionHeader,
    TimelineNode,
    Variant,
    holds,
    tail_of,
)
from mvu_store.jsonvalue import MAX_DEPTH

CREATED = 1_767_225_600_000
Event = tuple[str, dict[str, Any]]


class ContractHost(IncrementalHost, CardHost, AppendWatchHost, Protocol):
    """Every protocol of ``mvu_store.host``, and the card facts the host reports through."""

    facts: HostFacts


class HostDriver(Protocol):
    """How the contract plays the chat program on one host."""

    host: ContractHost
    utf8_only: bool
    """Whether its storage holds UTF-8 text only, so a lone surrogate cannot be kept."""

    async def create(self, session_id: Any, **header: Any) -> None:
        """Create a session with ``create_session``'s keywords (``created_at``, ``version``...)."""
        ...

    async def append(self, session_id: Any, events: Sequence[Event]) -> None:
        """Append ``(type, data)`` events after the session's last one."""
        ...

    async def reopen(self) -> ContractHost | None:
        """A second host over the same storage (another process's view), or None without one."""
        ...


def turn(number: int, user: str, reply: str, *, kind: str = "completed") -> list[Event]:
    """One whole turn, each event as the store keeps it."""
    return [
        ("turn/start", {"turn": number}),
        ("user/message", {"turn": number, "message": {"source": {"kind": "user"},
                                                      "content": [{"type": "text", "text": user}]}}),
        ("assistant/message", {"turn": number, "message": {"id": f"m{number}",
                                                           "content": [{"type": "text", "text": reply}]}}),
        ("turn/end", {"turn": number, "reason": {"kind": kind}}),
    ]


def without_message(event: SessionEvent) -> tuple[int, str, dict[str, Any]]:
    """An appended event as every lease rule reads it (a host may leave a message out of it)."""
    return event.seq, event.type, {key: value for key, value in event.data.items() if key != "message"}


async def refused(code: Code, call: Any) -> MvuError:
    """The ``MvuError`` awaiting ``call`` raised; it must carry ``code``."""
    with pytest.raises(MvuError) as error:
        await call
    assert error.value.code == code, error.value
    return error.value


def nested(depth: int) -> list[Any]:
    """Lists in lists, ``depth`` deep."""
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def playthrough(**changes: Any) -> Playthrough:
    node = TimelineNode("n1", (Variant("v1", "s1", 2, SESSION_FORMAT_VERSION),))
    fields: dict[str, Any] = {"id": "p1", "character_id": "hero", "root_session_id": "s1", "nodes": (node,),
                              "head": ("n1", "v1"), **changes}
    return Playthrough(**fields)


BAD_SESSION_IDS = ["", "a/b", "../etc", "-x", "_x", "a b", "caf\u00e9", "x" * 161, 5, None]
BAD_HEADERS = [
    ({"created_at": None}, Code.OPERATION, "createdAt"),
    ({"created_at": ""}, Code.OPERATION, "createdAt"),
    ({"created_at": True}, Code.OPERATION, "createdAt"),
    ({"created_at": [1]}, Code.OPERATION, "createdAt"),
    ({"created_at": "x" * 201}, Code.OPERATION, "createdAt"),
    ({"version": 0}, Code.OPERATION, "formatVersion"),
    ({"version": 1001}, Code.OPERATION, "formatVersion"),
    ({"version": True}, Code.OPERATION, "formatVersion"),
    ({"version": "4"}, Code.OPERATION, "formatVersion"),
    ({"parent_session": "a/b"}, Code.OPERATION, "parentSession"),
    ({"parent_session": "s1"}, Code.OPERATION, "parentSession"),
    ({"origin": ""}, Code.OPERATION, "origin"),
    ({"origin": "x" * 65}, Code.OPERATION, "origin"),
    ({"origin": 5}, Code.OPERATION, "origin"),
    ({"parent_session": "p", "inherited_event_count": -1}, Code.OPERATION, "inheritedEventCount"),
    ({"parent_session": "p", "inherited_event_count": 1.5}, Code.OPERATION, "inheritedEventCount"),
    ({"inherited_event_count": 3}, Code.OPERATION, "inheritedEventCount"),
    ({"created_at": "a\ud800"}, Code.JSON, None),
    ({"origin": "a\ud800"}, Code.JSON, None),
]
# docs/host-protocol.md, "The fingerprint": the session s1 of its examples, link by link.
DOCUMENTED_CHAIN = {
    -1: "a56dc169b4e9deb0c1dca573d97d2c6ce38d1239e843d51b1a9b1eff67873112",
    1: "5d80f832d72b07d809dc41fc85397f313ce7f996143401bcc8da11eb698ba270",
    3: "2a5b4f968e55a7c57e350b891ea9c45536c392eafccdb6d9027708d251c31910",
}


class HostContract:
    """The cases; a subclass named ``Test…`` provides the ``driver`` fixture."""

    # -- the protocol's reads --------------------------------------------------------------------

    async def test_it_implements_every_protocol_of_the_host_module(self, driver: HostDriver) -> None:
        for protocol in (Host, IncrementalHost, CardHost, AppendWatchHost):
            assert isinstance(driver.host, protocol), protocol.__name__

    @pytest.mark.parametrize("session_id", ["nope", "a/b"])
    async def test_a_session_it_does_not_have_is_none_to_a_read_and_missing_to_a_lease(
            self, driver: HostDriver, session_id: str) -> None:
        host = driver.host
        assert await host.inspect(session_id) is None
        assert await host.inspect_since(session_id, -1) is None and await host.inspect_since(session_id, 3) is None
        await refused(Code.MISSING, host.capture_session_lease(session_id))
        await refused(Code.MISSING, host.capture_appends(session_id))

    async def test_a_new_session_has_the_header_it_was_created_with_and_no_events(self, driver: HostDriver) -> None:
        await driver.create("s1", created_at="2026-12-02T00:00:00Z", parent_session="s0", origin="subagent",
                            inherited_event_count=2)
        await driver.create("s2", created_at=1.0)  # 1.0 is the 1 a JavaScript host meant
        snapshot = await driver.host.inspect("s1")
        assert snapshot is not None and snapshot.events == () and snapshot.last_seq == -1
        assert snapshot.header == SessionHeader("s1", SESSION_FORMAT_VERSION, "2026-12-02T00:00:00Z", "s0",
                                                "subagent", 2)
        plain = await driver.host.inspect("s2")
        assert plain is not None and plain.header == SessionHeader("s2", SESSION_FORMAT_VERSION, 1)
        assert type(plain.header.created_at) is int
        assert plain.header.identity() == {"sessionId": "s2", "createdAt": 1}

    async def test_events_come_back_in_order_numbered_densely_from_zero_as_sent(self, driver: HostDriver) -> None:
        await driver.create("s1", created_at=CREATED)
        sent = [*turn(1, "I rest.", "You rest."), ("session/names", {"user": "Ann", "char": "Bo"}),
                *turn(2, "I fight.", "You win.")]
        await driver.append("s1", sent[:3])
        await driver.append("s1", sent[3:])
        snapshot = await driver.host.inspect("s1")
        assert snapshot is not None and snapshot.last_seq == len(sent) - 1
        assert [(event.seq, event.type, dict(event.data)) for event in snapshot.events] == [
            (seq, kind, data) for seq, (kind, data) in enumerate(sent)]
        found = snapshot.event(4)
        assert found is not None and found.type == "session/names"

    async def test_numbers_in_event_data_are_read_as_json(self, driver: HostDriver) -> None:
        await driver.create("s1", created_at=CREATED)
        await driver.append("s1", [("turn/start", {"turn": 1.0})])
        snapshot = await driver.host.inspect("s1")
        assert snapshot is not None and snapshot.events[0].data == {"turn": 1}
        assert type(snapshot.events[0].data["turn"]) is int

    async def test_a_snapshot_is_the_callers_own(self, driver: HostDriver) -> None:
        await driver.create("s1", created_at=CREATED)
        await driver.append("s1", turn(1, "a", "b")[:2])
        before = await driver.host.inspect("s1")
        await driver.append("s1", turn(1, "a", "b")[2:])
        assert before is not None and [event.seq for event in before.events] == [0, 1]

    async def test_inspect_since_agrees_with_the_whole_snapshot_from_every_position(self, driver: HostDriver) -> None:
        await driver.create("s1", created_at=CREATED, parent_session="s0")
        await driver.append("s1", turn(1, "a", "b") + turn(2, "c", "d"))
        snapshot = await driver.host.inspect("s1")
        assert snapshot is not None
        # Any negative seq is the start; a seq past the end has no base and answers every event.
        for after in (-2, -1, *range(len(snapshot.events)), 8, 12):
            assert await driver.host.inspect_since("s1", after) == tail_of(snapshot, after), after

    async def test_the_fingerprint_chain_is_the_one_the_protocol_documents(self, driver: HostDriver) -> None:
        await driver.create("s1", created_at=CREATED)
        await driver.append("s1", turn(1, "I rest.", "You rest. _.set(hp, 50);"))
        for after, fingerprint in DOCUMENTED_CHAIN.items():
            tail = await driver.host.inspect_since("s1", after)
            assert tail is not None and tail.base_fingerprint == fingerprint, after

    # -- creating a session: the header checks every host shares --------------------------------

    @pytest.mark.parametrize("session_id", BAD_SESSION_IDS)
    async def test_a_session_id_outside_the_alphabet_is_refused(self, driver: HostDriver, session_id: Any) -> None:
        await refused(Code.SCOPE, driver.create(session_id, created_at=CREATED))

    async def test_a_session_id_at_the_edges_of_the_alphabet_is_taken(self, driver: HostDriver) -> None:
        for session_id in ("x" * 160, "0A_.:-z", "s"):
            await driver.create(session_id, created_at=CREATED)
            assert await driver.host.inspect(session_id) is not None

    @pytest.mark.parametrize(("header", "code", "field"), BAD_HEADERS)
    async def test_a_header_out_of_bounds_is_refused_naming_its_field_and_creates_nothing(
            self, driver: HostDriver, header: dict[str, Any], code: Code, field: str | None) -> None:
        error = await refused(code, driver.create("s1", **{"created_at": CREATED, **header}))
        if field is not None:
            assert error.details["field"] == field
        assert await driver.host.inspect("s1") is None
        again = await driver.reopen()
        assert again is None or await again.inspect("s1") is None

    async def test_the_same_header_again_changes_nothing_and_another_one_conflicts(self, driver: HostDriver) -> None:
        await driver.create("s1", created_at=CREATED, parent_session="p")
        await driver.append("s1", turn(1, "a", "b"))
        before = await driver.host.inspect("s1")
        lease = await driver.host.capture_session_lease("s1")
        await driver.create("s1", created_at=CREATED, parent_session="p")
        assert await driver.host.inspect("s1") == before and holds(lease)
        for other in ({"created_at": CREATED + 1, "parent_session": "p"}, {"created_at": CREATED},
                      {"created_at": CREATED, "parent_session": "p", "origin": "subagent"}):
            await refused(Code.ID_CONFLICT, driver.create("s1", **other))
        assert await driver.host.inspect("s1") == before
        again = await driver.reopen()
        assert again is None or await again.inspect("s1") == before

    # -- appending ----------------------------------------------------------------------------------

    async def test_an_append_to_a_session_it_does_not_have_is_refused(self, driver: HostDriver) -> None:
        await refused(Code.MISSING, driver.append("nope", turn(1, "a", "b")[:1]))
        await refused(Code.SCOPE, driver.append("a/b", turn(1, "a", "b")[:1]))

    @pytest.mark.parametrize(("data", "code"), [
        ({"turn": 2, "reason": {"kind": "completed"}, "at": float("nan")}, Code.JSON),
        ({"turn": 2, "reason": {"kind": "completed"}, "deep": nested(MAX_DEPTH + 1)},
         Code.LIMIT),
    ])
    async def test_an_event_that_is_no_json_value_is_refused_and_changes_nothing(
            self, driver: HostDriver, data: dict[str, Any], code: Code) -> None:
        await driver.create("s1", created_at=CREATED)
        await driver.append("s1", [*turn(1, "a", "b"), ("turn/start", {"turn": 2})])
        before = await driver.host.inspect("s1")
        lease = await driver.host.capture_session_lease("s1")
        since = await driver.host.capture_appends("s1")
        await refused(code, driver.append("s1", [("turn/end", data)]))
        assert await driver.host.inspect("s1") == before
        assert holds(lease) and since() == []
        again = await driver.reopen()
        assert again is None or await again.inspect("s1") == before

    async def test_a_lone_surrogate_is_refused_by_utf8_storage_and_hashed_by_any_other(
            self, driver: HostDriver) -> None:
        await driver.create("s1", created_at=CREATED)
        await driver.append("s1", [*turn(1, "a", "b"), ("turn/start", {"turn": 2})])
        before = await driver.host.inspect("s1")
        cut_off = ("turn/end", {"turn": 2, "reason": {"kind": "cut off \ud83d"}})
        if driver.utf8_only:
            await refused(Code.JSON, driver.append("s1", [cut_off]))
            assert await driver.host.inspect("s1") == before
            return
        await driver.append("s1", [cut_off])  # the protocol's chain hashes it (host.protocol._sha256)
        snapshot = await driver.host.inspect("s1")
        assert snapshot is not None and snapshot.events[-1].data == cut_off[1]
        assert await driver.host.inspect_since("s1", 3) == tail_of(snapshot, 3)

    # -- leases ---------------------------------------------------------------------------------------

    async def test_a_lease_holds_until_the_session_is_appended_to(self, driver: HostDriver) -> None:
        await driver.create("s1", created_at=CREATED)
        await driver.create("s2", created_at=CREATED)
        lease = await driver.host.capture_session_lease("s1")
        assert lease() is True
        await driver.append("s2", turn(1, "a", "b"))  # another session's events are not this one's
        assert lease() is True
        await driver.append("s1", turn(1, "a", "b")[:1])
        assert lease() is False and holds(lease) is False
        fresh = await driver.host.capture_session_lease("s1")
        assert fresh() is True

    async def test_capture_appends_answers_what_was_appended_since_in_order(self, driver: HostDriver) -> None:
        await driver.create("s1", created_at=CREATED)
        await driver.create("s2", created_at=CREATED)
        await driver.append("s1", turn(1, "a", "b")[:1])
        since = await driver.host.capture_appends("s1")
        assert since() == []
        await driver.append("s2", turn(1, "a", "b"))
        await driver.append("s1", turn(1, "a", "b")[1:3])
        later = await driver.host.capture_appends("s1")
        await driver.append("s1", turn(1, "a", "b")[3:])
        snapshot = await driver.host.inspect("s1")
        assert snapshot is not None
        added, added_later = since(), later()
        assert added is not None and added_later is not None
        assert [without_message(event) for event in added] == [without_message(e) for e in snapshot.events[1:]]
        assert [without_message(event) for event in added_later] == [without_message(snapshot.events[3])]

    # -- the card facts a host reports (CardHost) --------------------------------------------------

    async def test_a_reported_playthrough_is_a_membership_until_reported_again_or_removed(
            self, driver: HostDriver) -> None:
        host = driver.host
        assert await host.membership("p1") is None
        host.facts.report_playthrough(playthrough())
        first = await host.membership("p1")
        assert first is not None and first.playthrough == playthrough() and first.lease() is True
        host.facts.report_playthrough(playthrough())  # the same content: still a new report
        second = await host.membership("p1")
        assert second is not None and first.lease() is False and second.lease() is True
        assert host.facts.remove_playthrough("p1") is True and host.facts.remove_playthrough("p1") is False
        assert await host.membership("p1") is None and second.lease() is False
        host.facts.report_playthrough(playthrough())  # restored: the old leases stay ended
        assert first.lease() is False and second.lease() is False

    async def test_a_grant_authorizes_its_own_script_until_it_is_revoked(self, driver: HostDriver) -> None:
        host = driver.host
        identity = {"version": 1, "sha256": "a" * 64, "scope": "character"}
        scope: Mapping[str, Any] = {"authority": "local", "sessionId": "s1"}
        host.facts.grant("g1", source_identity=identity, scope=scope, write=False)
        grant = await host.authorize_card_write("g1", identity)
        assert grant is not None and (grant.grant_id, grant.write, dict(grant.scope)) == ("g1", False, scope)
        assert grant.check_current() is True
        assert await host.authorize_card_write("g1", {**identity, "sha256": "b" * 64}) is None
        assert await host.authorize_card_write("g2", identity) is None
        assert host.facts.revoke_grant("g1") is True
        assert await host.authorize_card_write("g1", identity) is None and grant.check_current() is False

    @pytest.mark.parametrize(("changes", "field"), [
        ({"id": ""}, "playthroughId"),
        ({"character_id": "x" * 201}, "characterId"),
        ({"root_session_id": 5}, "rootSessionId"),
        ({"head": ("n1", "v9")}, "head"),
        ({"nodes": (TimelineNode("n1"), TimelineNode("n1"))}, "nodes"),
        ({"nodes": (TimelineNode("n1", (Variant("v1", "s1", -1),)),), "head": None}, "endEventId"),
    ])
    async def test_a_fact_out_of_bounds_is_refused_naming_its_field_and_changes_nothing(
            self, driver: HostDriver, changes: dict[str, Any], field: str) -> None:
        host = driver.host
        host.facts.report_playthrough(playthrough())
        kept = await host.membership("p1")
        with pytest.raises(MvuError) as error:
            host.facts.report_playthrough(playthrough(**changes))
        assert error.value.code == Code.OPERATION and error.value.details["field"] == field
        assert kept is not None and kept.lease() is True
        with pytest.raises(MvuError) as error:
            host.facts.grant("x" * 201, source_identity={}, scope={})
        assert error.value.code == Code.OPERATION and error.value.details["field"] == "grantId"


class StorageContract:
    """The cases of a host that keeps its sessions in storage (a ledger, log files): mixed into
    the ``Test…`` classes of those drivers only, whose ``reopen`` opens the same storage again."""

    async def test_a_host_opened_again_on_its_storage_answers_the_same(self, driver: HostDriver) -> None:
        await driver.create("s1", created_at=CREATED, origin="web")
        await driver.append("s1", turn(1, "a", "b"))
        again = await driver.reopen()
        assert again is not None, "a driver with storage opens it again"
        assert await again.inspect("s1") == await driver.host.inspect("s1")
        for after in (-1, 1, 3):
            assert await again.inspect_since("s1", after) == await driver.host.inspect_since("s1", after)
