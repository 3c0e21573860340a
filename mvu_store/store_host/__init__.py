"""The store-backed host: sessions and events kept in the ledger's database, fed by any host.

- :mod:`events`: what an event may be, and the part of it the store keeps (DIGEST P-5);
- :mod:`host`: :class:`StoreHost`, the :class:`mvu_store.host.IncrementalHost` over those tables;
- :mod:`feed`: append a batch, then checkpoint / ingest as its turn events call for;
- :mod:`logs`: JSONL session logs brought into the store (``mvu sessions import``).
"""

from mvu_store.store_host.facts import MAX_ID, MAX_NODES
from mvu_store.store_host.feed import FeedResult, feed, play_turn
from mvu_store.store_host.host import StoreHost, check_store_session_id

__all__ = ["MAX_ID", "MAX_NODES", "FeedResult", "StoreHost", "check_store_session_id", "feed", "play_turn"]
