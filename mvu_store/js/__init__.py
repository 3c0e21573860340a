"""The JavaScript core: JavaScript's values and conversions (``values``), number texts
(``numbers``), time values and date texts (``dates``) and S-7's member guards (``members``).

It sits at the bottom of the import graph: ``lang``, ``schema``, ``prompt`` and ``processor``
use it, and nothing here imports them.
"""

from mvu_store.js.values import MAX_SAFE_INTEGER

__all__ = ["MAX_SAFE_INTEGER"]
