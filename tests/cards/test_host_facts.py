"""The card facts a host reports: leases that combine, tokens that a new report of the same facts
never revives, checked playthroughs, and both reference hosts implementing ``CardHost``."""

from __future__ import annotations

from pathlib import Path

import pytest

from mvu_store.errors import MvuError
from mvu_store.host import CardHost, HostFacts, Leases, Playthrough, TimelineNode, Variant
from mvu_store.ledger import open_ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.store_host import StoreHost


def test_leases_hold_together() -> None:
    flags = {"a": True, "b": True}
    both = Leases(lambda: flags["a"]) & (lambda: flags["b"])
    assert both() is True
    flags["b"] = False
    assert both() is False
    flags["b"] = True
    left = (lambda: flags["a"]) & Leases(lambda: flags["b"])
    flags["a"] = False
    assert left() is False and both() is False


def test_a_lease_that_raises_answers_truthy_or_is_asynchronous_does_not_hold() -> None:
    async def later() -> bool:
        return True

    made: list[object] = []

    def asynchronous() -> object:
        made.append(later())
        return made[-1]

    def broken() -> bool:
        raise RuntimeError("a foreign check failed")

    for lease in (broken, asynchronous, lambda: 1, lambda: "yes"):
        assert Leases(lambda: True, lease)() is False
    # The coroutine the asynchronous lease made was closed, never left to warn as unawaited.
    assert made and all(coroutine.cr_frame is None for coroutine in made)  # type: ignore[attr-defined]


async def test_a_report_is_a_new_token_even_with_the_same_content() -> None:
    facts = HostFacts()
    playthrough = Playthrough("p", "c", "s")
    facts.report_playthrough(playthrough)
    first = await facts.membership("p")
    assert first is not None and first.lease() is True and first.playthrough.empty
    facts.report_playthrough(playthrough)
    second = await facts.membership("p")
    assert first.lease() is False and second is not None and second.lease() is True
    assert facts.remove_playthrough("p") is True and second.lease() is False
    assert await facts.membership("p") is None
    facts.report_playthrough(playthrough)
    assert second.lease() is False


async def test_a_grant_answers_only_its_identity_and_ends_when_revoked() -> None:
    facts = HostFacts()
    identity = {"version": 1, "sha256": "a" * 64, "scope": {"sessionId": "s"}}
    facts.grant("g", source_identity=identity, scope={"sessionId": "s"})
    assert await facts.authorize_card_write("g", {**identity, "sha256": "b" * 64}) is None
    grant = await facts.authorize_card_write("g", identity)
    assert grant is not None and grant.write and grant.check_current() is True
    facts.grant("g", source_identity=identity, scope={"sessionId": "s"})
    assert grant.check_current() is False
    assert facts.revoke_grant("g") is True and await facts.authorize_card_write("g", identity) is None


@pytest.mark.parametrize("playthrough", [
    Playthrough("", "c", "s"),
    Playthrough("p", "c", "s", head=("n", "v")),
    Playthrough("p", "c", "s", nodes=(TimelineNode("n"), TimelineNode("n"))),
    Playthrough("p", "c", "s", nodes=(TimelineNode("n", (Variant("v", "s", 1), Variant("v", "s", 2))),)),
    Playthrough("p", "c", "s", nodes=(TimelineNode("n", (Variant("v", "s", -1),)),)),
])
def test_a_malformed_playthrough_is_refused(playthrough: Playthrough) -> None:
    with pytest.raises(MvuError) as refused:
        HostFacts().report_playthrough(playthrough)
    assert refused.value.code == "MVU_OPERATION"


async def test_both_reference_hosts_are_card_hosts(tmp_path: Path) -> None:
    assert isinstance(MemoryHost(), CardHost)
    ledger = await open_ledger(f"sqlite:///{tmp_path / 'ledger.sqlite3'}")
    try:
        host = StoreHost(ledger)
        assert isinstance(host, CardHost)
        host.facts.report_playthrough(Playthrough("p", "c", "s"))
        membership = await host.membership("p")
        assert membership is not None and membership.playthrough.root_session_id == "s"
    finally:
        await ledger.close()
