"""Selection generations: what a greeting view's ``selectionToken`` is made of (docs/cards.md)."""

from __future__ import annotations

import uuid

from mvu_store.bounded import Generations
from mvu_store.jsonvalue import js_json, sha256_hex

CAPACITY = 65_536
"""Sessions whose generation is remembered; the least recently selected beyond are forgotten."""


class ViewGenerations(Generations[str]):
    """The generation of each session's selection, for greeting view identities and message
    capabilities: every selection call issues a new one (so A→B→A never restores a view), and
    ``epoch`` is new per service, so a restart refuses every old view. A session not selected
    since the service started, or forgotten from the bounded map, has the current floor
    (:class:`~mvu_store.bounded.Generations`): a token or binding taken before a selection never
    matches again, even once that selection's generation is forgotten."""

    def __init__(self) -> None:
        super().__init__(CAPACITY)
        self.epoch = uuid.uuid4().hex

    def token(self, session_id: str, generation: int) -> str:
        return sha256_hex(js_json([self.epoch, session_id, generation]))
