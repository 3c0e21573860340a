"""``GET /history`` and ``GET /resources`` encode their answers in the service's worker threads, one
entry at a time (docs/reliability.md, "Work per request"): a history of large states is seconds
of encoding, which on the event loop would stop every other session meanwhile. The answer is
the same JSON as one encoding of the whole list."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from mvu_store.service.models import HistoryEntry, StateRecord
from tests.http.support import MVU, client_of

SCOPE = '{"sessionId":"s1"}'


class Listing:
    """A service whose history and list answer the entries given."""

    def __init__(self, entries: list[HistoryEntry], records: list[StateRecord]) -> None:
        self.entries, self.records = entries, records

    async def history(self, **_: Any) -> list[HistoryEntry]:
        return self.entries

    async def list(self, **_: Any) -> list[StateRecord]:
        return self.records


def entry(revision: int) -> HistoryEntry:
    return HistoryEntry(key=f"k{revision}", kind="reply", revision=revision, position=revision - 1,
                        source={"sessionId": "s1"}, variables={"stat_data": {"hp": revision, "name": "é"}},
                        created_at=1000 + revision)


def record(number: int) -> StateRecord:
    return StateRecord(id=f"mvu:r{number}", name=f"r{number}", scope={"sessionId": "s1"},
                       content={"stat_data": {"hp": number}}, revision=number, current_revision=number,
                       historical=False, version_key=None, management_mode="native",
                       stored_management_mode="native")


async def test_lists_are_encoded_entry_by_entry_in_a_worker_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    where: list[str] = []
    for model in (HistoryEntry, StateRecord):
        encode = model.to_json

        def noted(self: Any, encode: Any = encode) -> Any:
            where.append(threading.current_thread().name)
            return encode(self)

        monkeypatch.setattr(model, "to_json", noted)
    entries, records = [entry(n) for n in (1, 2, 3)], [record(n) for n in (1, 2)]
    async with client_of(Listing(entries, records)) as client:
        history = await client.get(f"{MVU}/history", params={"id": "mvu:x", "scope": SCOPE})
        listed = await client.get(f"{MVU}/resources", params={"scope": SCOPE})
    encoded_in = list(where)
    assert history.status_code == 200 and listed.status_code == 200
    assert history.headers["content-type"] == "application/json"
    assert history.json() == [item.to_json() for item in entries]
    assert listed.json() == [item.to_json() for item in records]
    assert history.text == json.dumps(history.json(), ensure_ascii=False, separators=(",", ":"))
    assert len(encoded_in) == 5 and all(name.startswith("mvu-cpu") for name in encoded_in), encoded_in
