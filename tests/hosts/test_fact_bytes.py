"""Host facts kept in memory are bounded by what they measure, not only by their count."""

from __future__ import annotations

import pytest

from mvu_store.errors import MvuError
from mvu_store.host import MAX_FACT_BYTES, HostFacts, Playthrough, TimelineNode, Variant, playthrough_bytes


def big(playthrough_id: str, nodes: int = 1_000) -> Playthrough:
    """A long playthrough: ``nodes`` nodes of ten swipes each (about 800 KB as JSON)."""
    timeline = tuple(TimelineNode(f"node-{n:05d}", tuple(Variant(f"variant-{v}", f"session-{n:05d}-{v}", n)
                                                         for v in range(10))) for n in range(nodes))
    return Playthrough(playthrough_id, "character", "session-00000-0", timeline, ("node-00000", "variant-0"))


def refused(call: object) -> MvuError:
    assert callable(call)
    with pytest.raises(MvuError) as caught:
        call()
    return caught.value


async def test_reports_stop_at_the_byte_bound_and_a_removal_makes_room() -> None:
    facts = HostFacts()
    each = playthrough_bytes(big("p0"))
    fitting = MAX_FACT_BYTES // each
    assert 5 < fitting < 150  # the bound, not the count (10,000), is what stops 150 such reports
    for n in range(fitting):
        facts.report_playthrough(big(f"p{n}"))
    facts.report_playthrough(big("p0"))  # reported again: measured once
    error = refused(lambda: facts.report_playthrough(big("one-more")))
    assert (error.code, error.details) == ("MVU_LIMIT", {"limit": MAX_FACT_BYTES, "kind": "bytes"})
    assert await facts.membership("one-more") is None and await facts.membership("p1") is not None
    assert facts.remove_playthrough("p1")
    facts.report_playthrough(big("one-more"))
    assert await facts.membership("one-more") is not None


def test_grants_count_toward_the_same_bound() -> None:
    facts = HostFacts()
    scope = {"authority": "local", "note": "x" * (MAX_FACT_BYTES // 2)}
    facts.grant("g1", source_identity={"script": "a"}, scope=scope)
    facts.grant("g1", source_identity={"script": "a"}, scope=scope)  # the same grant again: measured once
    error = refused(lambda: facts.grant("g2", source_identity={"script": "b"}, scope=scope))
    assert error.code == "MVU_LIMIT"
    assert facts.revoke_grant("g1")
    facts.grant("g2", source_identity={"script": "b"}, scope=scope)
