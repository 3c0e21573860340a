"""mvu-store: a relational state store for MVU role-play character variables."""

from mvu_store.errors import Code, MvuError

__all__ = ["Code", "MvuError"]
