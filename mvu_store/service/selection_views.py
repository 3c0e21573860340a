"""Selection generations: what a greeting view's ``selectionToken`` is made of (docs/cards.md)."""

from __future__ import annotations

import uuid

from mvu_store.jsonvalue import js_json, sha256_hex
from mvu_store.service.bounded import BoundedCache


class ViewGenerations:
    """The generation of each session's selection, for greeting view identities: every selection
    call issues a new one (so A→B→A never restores a view), and ``epoch`` is new per service, so
    a restart refuses every old view. A generation evicted from the bounded map is None: a token
    taken before never matches again."""

    def __init__(self) -> None:
        self.epoch = uuid.uuid4().hex
        self._next = 0
        self._generations: BoundedCache[str, int] = BoundedCache(65_536)

    def bump(self, session_id: str) -> None:
        self._next += 1
        self._generations.put(session_id, self._next)

    def generation(self, session_id: str) -> int | None:
        return self._generations.get(session_id)

    def token(self, session_id: str, generation: int | None) -> str:
        return sha256_hex(js_json([self.epoch, session_id, generation]))
