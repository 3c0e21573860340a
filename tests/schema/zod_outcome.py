"""Our answer for one input in the form of the Zod parity fixtures (tests/schema/oracle/)."""

from __future__ import annotations

from typing import Any

from mvu_store.errors import MvuError
from mvu_store.schema import validate

NOW_MS = 1_700_000_000_000  # the clock the reference runs gave Date.now()


def ours(descriptor: dict[str, Any], value: Any, *, messages: bool = False) -> dict[str, Any]:
    """``{ok, value}``, ``{ok: false, issues: [[code, path(, message)]]}`` or ``{throws}``."""
    try:
        result = validate(descriptor, value, now_ms=NOW_MS)
    except MvuError as error:
        # Where the declaration itself throws (Zod lets a transform's exception through), we
        # refuse: only the declaration's own errors may be, never a limit or an isolation rule.
        return {"throws": error.code == "MVU_SCHEMA"}
    if result.ok:
        return {"ok": True, "value": result.value}
    return {"ok": False, "issues": [[issue.code, issue.path, *([issue.message] if messages else [])]
                                    for issue in result.issues]}
