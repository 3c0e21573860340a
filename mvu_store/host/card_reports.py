"""The card facts a host reports (:class:`mvu_store.host.CardHost`), kept in memory.

``StoreHost`` and ``MemoryHost`` both keep them here: a remote host reports its playthroughs and
its card scripts' grants over HTTP (``mvu_api.http.card_facts``), a Python host calls
:meth:`HostFacts.report_playthrough` and :meth:`HostFacts.grant` directly. They live as long as
the process: a restarted server knows none until the host reports them again (and until then
every card scope is read-only), which also ends every lease taken on them.

A lease is a per-process mutation token: every report issues a new one, so reporting the same
playthrough again, or removing it and restoring it, never revives a lease taken before.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Mapping
from typing import Any

from mvu_store.errors import Code, MvuError
from mvu_store.host.protocol import CardGrant, Lease, Membership, Playthrough, TimelineNode, Variant

MAX_PLAYTHROUGHS = 10_000
MAX_NODES = 10_000
MAX_VARIANTS = 10_000
"""Variants of one playthrough, all nodes together."""
MAX_GRANTS = 4_096
MAX_ID = 200
MAX_FACT_BYTES = 16 * 1024 * 1024
"""What all the facts kept together may measure (:func:`fact_bytes`): the counts alone let 150
reports of an 815 KB playthrough take 316 MiB of the process."""
_ENTRY_BYTES = 48
"""What a node or a variant adds to its ids as JSON (its keys, quotes, an event id)."""


class HostFacts:
    """Playthroughs and card grants by id, each with the token its leases compare."""

    def __init__(self) -> None:
        self._tokens = itertools.count(1)
        self._playthroughs: dict[str, tuple[Playthrough, int]] = {}
        self._grants: dict[str, tuple[CardGrant, int]] = {}
        self._current: dict[str, int] = {}
        """The token of each playthrough (``p:``) and grant (``g:``), removed ones included."""
        self._sizes: dict[str, int] = {}
        """What each kept playthrough (``p:``) and grant (``g:``) measures; ``_bytes`` their sum."""
        self._bytes = 0

    # -- what the host reports --------------------------------------------------------------------

    def report_playthrough(self, playthrough: Playthrough) -> None:
        """Take the host's playthrough as it is now (a new token, whatever changed)."""
        check_playthrough(playthrough)
        if playthrough.id not in self._playthroughs and len(self._playthroughs) >= MAX_PLAYTHROUGHS:
            raise MvuError(Code.LIMIT, f"at most {MAX_PLAYTHROUGHS} playthroughs are reported",
                           limit=MAX_PLAYTHROUGHS)
        self._resize("p:" + playthrough.id, playthrough_bytes(playthrough))
        self._playthroughs[playthrough.id] = (playthrough, self._bump("p:" + playthrough.id))

    def remove_playthrough(self, playthrough_id: str) -> bool:
        """Detach a playthrough: its leases end. False when there was none."""
        self._bump("p:" + playthrough_id)
        self._resize("p:" + playthrough_id, 0)
        return self._playthroughs.pop(playthrough_id, None) is not None

    def grant(self, grant_id: str, *, source_identity: Mapping[str, Any], scope: Mapping[str, Any],
              write: bool = True) -> None:
        """Let the card script ``source_identity`` write through ``scope`` under ``grant_id``."""
        _check_id("grantId", grant_id)
        if grant_id not in self._grants and len(self._grants) >= MAX_GRANTS:
            raise MvuError(Code.LIMIT, f"at most {MAX_GRANTS} card grants are held", limit=MAX_GRANTS)
        self._resize("g:" + grant_id, len(grant_id) + _json_bytes(scope) + _json_bytes(source_identity))
        token = self._bump("g:" + grant_id)
        grant = CardGrant(grant_id, write, copy.deepcopy(dict(scope)), copy.deepcopy(dict(source_identity)),
                          self._lease("g:" + grant_id, token))
        self._grants[grant_id] = (grant, token)

    def revoke_grant(self, grant_id: str) -> bool:
        """End a grant: bindings made under it can no longer write. False when there was none."""
        self._bump("g:" + grant_id)
        self._resize("g:" + grant_id, 0)
        return self._grants.pop(grant_id, None) is not None

    # -- what the service asks (CardHost) ------------------------------------------------------------

    async def membership(self, playthrough_id: str) -> Membership | None:
        found = self._playthroughs.get(playthrough_id)
        if found is None:
            return None
        playthrough, token = found
        return Membership(playthrough, self._lease("p:" + playthrough_id, token))

    async def authorize_card_write(self, grant_id: str, source_identity: Mapping[str, Any]) -> CardGrant | None:
        found = self._grants.get(grant_id)
        if found is None or found[0].source_identity != source_identity:
            return None
        return found[0]

    def _resize(self, key: str, size: int) -> None:
        """Account ``key`` at ``size`` bytes (0: dropped), or refuse with ``MVU_LIMIT``, changing nothing."""
        total = self._bytes - self._sizes.get(key, 0) + size
        if size and total > MAX_FACT_BYTES:
            raise MvuError(Code.LIMIT, f"the reported playthroughs and grants would measure {total} bytes; at most "
                           f"{MAX_FACT_BYTES} are kept (remove some first)", limit=MAX_FACT_BYTES, kind="bytes")
        self._bytes = total
        if size:
            self._sizes[key] = size
        else:
            self._sizes.pop(key, None)

    def _bump(self, key: str) -> int:
        token = self._current[key] = next(self._tokens)
        return token

    def _lease(self, key: str, token: int) -> Lease:
        current = self._current

        def valid() -> bool:
            return current.get(key) == token

        return valid


def playthrough_bytes(playthrough: Playthrough) -> int:
    """What a playthrough measures: the UTF-8 bytes of its ids and :data:`_ENTRY_BYTES` a node and a variant."""
    ids = [playthrough.id, playthrough.character_id, playthrough.root_session_id, *(playthrough.head or ())]
    for node in playthrough.nodes:
        ids.append(node.id)
        ids.extend(text for variant in node.variants for text in (variant.id, variant.session_id))
    entries = len(playthrough.nodes) + sum(len(node.variants) for node in playthrough.nodes)
    return sum(len(text.encode("utf-8", "surrogatepass")) for text in ids) + _ENTRY_BYTES * (1 + entries)


def _json_bytes(value: Mapping[str, Any]) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass"))


def _check_id(field: str, value: Any) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_ID:
        raise MvuError(Code.OPERATION, f"{field} must be a string of 1 to {MAX_ID} characters", field=field)
    return value


def check_playthrough(playthrough: Playthrough) -> None:
    """Ids bounded, node and variant ids unique, the head naming one of its variants."""
    for field, value in (("playthroughId", playthrough.id), ("characterId", playthrough.character_id),
                         ("rootSessionId", playthrough.root_session_id)):
        _check_id(field, value)
    if len(playthrough.nodes) > MAX_NODES:
        raise MvuError(Code.LIMIT, f"a timeline has at most {MAX_NODES} nodes", limit=MAX_NODES)
    if sum(len(node.variants) for node in playthrough.nodes) > MAX_VARIANTS:
        raise MvuError(Code.LIMIT, f"a timeline has at most {MAX_VARIANTS} variants", limit=MAX_VARIANTS)
    if len({node.id for node in playthrough.nodes}) != len(playthrough.nodes):
        raise MvuError(Code.OPERATION, "node ids repeat", field="nodes")
    for node in playthrough.nodes:
        _check_node(node)
    if playthrough.head is not None and playthrough.variant(*playthrough.head) is None:
        raise MvuError(Code.OPERATION, "the head names no variant of the timeline", field="head")


def _check_node(node: TimelineNode) -> None:
    _check_id("nodes[].id", node.id)
    if len({variant.id for variant in node.variants}) != len(node.variants):
        raise MvuError(Code.OPERATION, f"node {node.id!r}: variant ids repeat", field="variants")
    for variant in node.variants:
        _check_variant(variant)


def _check_variant(variant: Variant) -> None:
    _check_id("variants[].id", variant.id)
    _check_id("variants[].sessionId", variant.session_id)
    if type(variant.end_event_id) is not int or variant.end_event_id < 0:
        raise MvuError(Code.OPERATION, "endEventId must be a non-negative integer", field="endEventId")
    version = variant.session_format_version
    if version is not None and (type(version) is not int or version < 1):
        raise MvuError(Code.OPERATION, "sessionFormatVersion must be a positive integer",
                       field="sessionFormatVersion")
