"""mvu-store: a relational state store for MVU role-play character variables.

``open_ledger`` opens the store; ``MvuService`` is what a host calls.
"""

from mvu_store.errors import Code, MvuError
from mvu_store.ledger import open_ledger
from mvu_store.service import MvuService

__all__ = ["Code", "MvuError", "MvuService", "open_ledger"]
