"""Input that cannot be shown or stored is a refusal with a code, not a ValueError / UnicodeEncodeError.

Found by ``test_bad_input.py``: an int past Python's 4300-digit ``str`` limit escaped as
``ValueError`` while the refusal described it (a resource id, a scope's authority) or while the
request's fingerprint was written (an expected revision); a lone surrogate escaped as
``UnicodeEncodeError`` from the ledger as a seed ticket or a capture's target session id.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from mvu_store.errors import MvuError
from mvu_store.ledger import Ledger
from mvu_store.memory_host import MemoryHost
from mvu_store.service import MvuService
from tests.service.support import playing, scope

HUGE = 10**5000  # str(HUGE) raises ValueError


async def _code(call: Callable[[], Awaitable[Any]]) -> str:
    with pytest.raises(MvuError) as refused:
        await call()
    return refused.value.code


async def test_unshowable_ids_revisions_and_authorities_are_refused(ledger: Ledger) -> None:
    host = MemoryHost()
    service = MvuService(ledger=ledger, host=host)
    host.attach(service)
    instance = await playing(service, host)
    here = scope("s1")
    assert await _code(lambda: service.update(id=HUGE, content={"stat_data": {}}, expected_revision=0,
                                              operation_id="a", scope=here)) == "MVU_MISSING"
    assert await _code(lambda: service.set_management_mode(id=[HUGE], mode="native", expected_revision=0,
                                                           operation_id="a", scope=here)) == "MVU_MISSING"
    assert await _code(lambda: service.copy(id=HUGE, new_id="mvu:c", scope=here)) == "MVU_MISSING"
    assert await _code(lambda: service.list(scope={"authority": HUGE})) == "MVU_AUTHORITY"
    edit = {"stat_data": {"hp": 1, "gold": 1}}
    for revision in (HUGE, 2**53):
        assert await _code(lambda revision=revision: service.update(
            id=instance, content=edit, expected_revision=revision, operation_id="b", scope=here)) == "MVU_OPERATION"
        assert await _code(lambda revision=revision: service.set_management_mode(
            id=instance, mode="managed", expected_revision=revision, operation_id="c", scope=here)) == "MVU_OPERATION"
    record = await service.read(id=instance, scope=here)
    assert record is not None and record.revision == 0
    assert await ledger.audit() == []


async def test_lone_surrogates_in_seed_arguments_are_refused(ledger: Ledger) -> None:
    host = MemoryHost()
    service = MvuService(ledger=ledger, host=host)
    host.attach(service)
    await playing(service, host)
    reply = await host.turn("s1", turn=1, user="go", reply="_.add('gold', 1);")
    assert await _code(lambda: service.capture_session_seed(
        session_id="s1", kind="fork", at_event_id=reply, target_session_id="\ud800")) == "MVU_SEED"
    assert await _code(lambda: service.install_session_seed(ticket="\ud800", session_id="s1")) == "MVU_SEED_CONFLICT"
    assert await ledger.audit() == []
