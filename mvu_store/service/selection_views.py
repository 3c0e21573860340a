"""Selection generations: what a greeting view's ``selectionToken`` is made of (docs/cards.md)."""

from __future__ import annotations

import uuid

from mvu_store.bounded import BoundedCache
from mvu_store.jsonvalue import js_json, sha256_hex

CAPACITY = 65_536
"""Sessions whose generation is remembered; the least recently selected beyond are forgotten."""


class ViewGenerations:
    """The generation of each session's selection, for greeting view identities and message
    capabilities: every selection call issues a new one (so A→B→A never restores a view), and
    ``epoch`` is new per service, so a restart refuses every old view. A session not selected
    since the service started, or forgotten from the bounded map, has the current *floor* (zero
    or below, never an issued generation), which moves down whenever a session is forgotten: a
    token or binding taken before a selection never matches again, even once that selection's
    generation is forgotten."""

    def __init__(self) -> None:
        self.epoch = uuid.uuid4().hex
        self._next = 0
        self._floor = 0
        self._generations: BoundedCache[str, int] = BoundedCache(CAPACITY)

    def bump(self, session_id: str) -> None:
        if self._generations.get(session_id) is None and len(self._generations) >= CAPACITY:
            self._floor -= 1  # the put below forgets the least recently selected session
        self._next += 1
        self._generations.put(session_id, self._next)

    def generation(self, session_id: str) -> int:
        found = self._generations.get(session_id)
        return self._floor if found is None else found

    def token(self, session_id: str, generation: int) -> str:
        return sha256_hex(js_json([self.epoch, session_id, generation]))
