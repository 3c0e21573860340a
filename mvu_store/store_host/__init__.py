"""The store-backed host: sessions and events kept in the ledger's database, fed by any host.

- :mod:`events`: what an event may be, and the part of it the store keeps (DIGEST P-5);
- :mod:`host`: :class:`StoreHost`, the :class:`mvu_store.host.IncrementalHost` over those tables;
- :mod:`feed`: append a batch, then checkpoint / ingest as its turn events call for;
- :mod:`logs`: JSONL session logs brought into the store (``mvu sessions import``).
"""

from mvu_store.store_host.facts import MAX_ID as MAX_FACT_ID
from mvu_store.store_host.facts import MAX_NODES as MAX_FACT_NODES
from mvu_store.store_host.feed import FeedResult, feed, play_turn
from mvu_store.store_host.host import StoreHost, check_store_session_id
from mvu_store.store_host.logs import import_logs

__all__ = ["MAX_FACT_ID", "MAX_FACT_NODES", "FeedResult", "StoreHost", "check_store_session_id", "feed", "import_logs",
           "play_turn"]
