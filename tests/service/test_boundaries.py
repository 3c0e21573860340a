"""An instance allocated during an ingest takes its activation boundary into that same ingest.

Found by the selection race in ``test_concurrency.py``: ``_ingest`` read the boundaries before
ensuring the session's instances, so an instance allocated on the way (a configured template's
first use, or a card another service selected a moment ago) was ingested from boundary 0 and
its first ingest failed with ``MVU_BASELINE_REQUIRED`` on turns from before it existed.
"""

from __future__ import annotations

from mvu_store.ledger import Ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from tests.service.support import finish_turn, scope


async def test_first_ingest_of_a_configured_instance_skips_the_turns_before_it(ledger: Ledger) -> None:
    host = MemoryHost()
    host.create_session("s1", created_at=1000)
    host.append("s1", "turn/start", {"turn": 1})
    finish_turn(host, "s1", 1, "_.add('count', 1);")  # played before the resource was configured
    service = MvuService(ledger=ledger, host=host,
                         resources=[{"id": "mvu:notes", "session_ids": ["*"], "initial": "count: 0\n"}])
    report = await service.ingest(session_id="s1")
    assert report.outcomes == []
    (instance,) = await ledger.resources(session_id="s1", kinds=("instance",))
    assert (await ledger.activations("s1"))[instance.id] == 4
    host.attach(service)
    await host.turn("s1", turn=2, user="again", reply="_.add('count', 1);")
    record = await service.read(id=instance.id, scope=scope("s1"))
    assert record is not None
    assert (record.revision, record.content["stat_data"]) == (1, {"count": 1})
    assert await ledger.audit() == []
