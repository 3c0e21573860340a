"""The store-backed host: sessions and events kept in the ledger's database, fed by any host.

- :mod:`events`: what an event may be, and the part of it the store keeps (DIGEST P-5);
- :mod:`host`: :class:`StoreHost`, the :class:`mvu_store.host.IncrementalHost` over those tables;
- :mod:`recent`: the events appended lately, for a prompt read's lease;
- :mod:`feed`: append a batch, then checkpoint / ingest as its turn events call for;
- :mod:`log_import`: JSONL session logs brought into the store (``mvu sessions import``).

The header checks and the card facts a host reports are every host's (``mvu_store.host``); the
ones ``mvu_api`` names are re-exported here, so it imports this package's root only.
"""

from mvu_store.host import MAX_ID, MAX_NODES, check_session_id
from mvu_store.store_host.events import MAX_REPLY_BYTES
from mvu_store.store_host.feed import FeedResult, feed, play_turn
from mvu_store.store_host.host import StoreHost
from mvu_store.store_host.log_import import LogImport, import_logs

check_store_session_id = check_session_id
"""A session id as the store takes it (``MVU_SCOPE`` otherwise): :func:`mvu_store.host.check_session_id`."""

__all__ = [
    "MAX_ID",
    "MAX_NODES",
    "MAX_REPLY_BYTES",
    "FeedResult",
    "LogImport",
    "StoreHost",
    "check_store_session_id",
    "feed",
    "import_logs",
    "play_turn",
]
