"""docs/host-protocol.md gives hosts test vectors for the session fingerprint: the store must
answer exactly those for the doc's own example session."""

from __future__ import annotations

import re
from pathlib import Path

from mvu_store.ledger import open_ledger
from mvu_store.store_host import StoreHost

DOC = Path(__file__).resolve().parents[2] / "docs" / "host-protocol.md"
# The events of the doc's curl examples, as a host sends them (the user's text as a string).
EVENTS = [
    {"seq": 0, "type": "turn/start", "data": {"turn": 1}},
    {"seq": 1, "type": "user/message", "data": {"turn": 1, "message": {"source": {"kind": "user"},
                                                                       "content": "I rest."}}},
    {"seq": 2, "type": "assistant/message", "data": {"turn": 1, "message": {"id": "m1",
                                                                            "content": "You rest. _.set(hp, 50);"}}},
    {"seq": 3, "type": "turn/end", "data": {"turn": 1, "reason": {"kind": "completed"}}},
]


def vectors() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    paragraph = text[text.index("To check an implementation:"):]
    paragraph = paragraph[:paragraph.index("\n\n")]
    return re.findall(r"`([0-9a-f]{64})`", paragraph)


async def test_the_docs_fingerprint_vectors_are_what_the_store_answers(tmp_path: Path) -> None:
    header, after_user, after_end = vectors()
    ledger = await open_ledger(f"sqlite:///{tmp_path / 'ledger.sqlite3'}")
    try:
        host = StoreHost(ledger)
        created, _ = await host.create_session("s1", created_at=1767225600000)
        assert (created.last_seq, created.fingerprint) == (-1, header)
        request = await host.append("s1", EVENTS[:2])
        assert (request.session.last_seq, request.session.fingerprint) == (1, after_user)
        answer = await host.append("s1", EVENTS[2:])
        assert (answer.session.last_seq, answer.session.fingerprint) == (3, after_end)
    finally:
        await ledger.close()
