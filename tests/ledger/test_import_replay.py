"""A reply imported from the original ledger and delivered again is recognised, not re-applied."""

from __future__ import annotations

import copy
from pathlib import Path

from mvu_store.ledger import CommitRequest, Ledger
from mvu_store.ledger.transfer import import_directory
from tests.ledger.transfer_fixtures import realistic


async def test_an_imported_reply_delivered_again_is_a_replay(ledger: Ledger, tmp_path: Path) -> None:
    build = realistic()
    await import_directory(ledger, build.write(tmp_path / "original"))
    play = build.instances[0]
    reply = next(v for v in play.record["versions"] if "error" not in v and not v["source"].get("manual"))
    head = await ledger.head(play.id)

    # Delivered again, with no key: the ledger derives the original's key from the source.
    again = await ledger.commit(CommitRequest(play.id, head.revision, "reply", copy.deepcopy(reply["variables"]),
                                              reply["fingerprint"], copy.deepcopy(reply["source"])))
    assert again.replayed
    assert again.version_key == reply["key"]
    assert (await ledger.head(play.id)).revision == head.revision
