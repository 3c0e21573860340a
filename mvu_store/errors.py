"""The one error root of mvu-store.

Every refusal the package makes is an :class:`MvuError` with a stable ``code``: the codes of
the original implementation, plus the few marked below that it does not have. Clients branch
on ``code``; ``details`` carries the structured facts of the refusal (for example
``expected_revision`` and ``current_revision``).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class Code(StrEnum):
    """The stable error codes. Values are the wire strings clients match on."""

    AMBIGUOUS = "MVU_AMBIGUOUS"
    MIGRATION_REQUIRED = "MVU_MIGRATION_REQUIRED"
    READ_FAILED = "MVU_READ_FAILED"
    REVISION_CONFLICT = "REVISION_CONFLICT"
    IDEMPOTENCY_CONFLICT = "MVU_IDEMPOTENCY_CONFLICT"
    SESSION_IDENTITY = "MVU_SESSION_IDENTITY"
    SESSION_LEASE = "MVU_SESSION_LEASE"
    SEED = "MVU_SEED"
    SEED_PENDING = "MVU_SEED_PENDING"
    SEED_REQUIRED = "MVU_SEED_REQUIRED"
    SEED_MISMATCH = "MVU_SEED_MISMATCH"
    SEED_CONFLICT = "MVU_SEED_CONFLICT"
    BASELINE_REQUIRED = "MVU_BASELINE_REQUIRED"
    READ_ONLY = "MVU_READ_ONLY"
    AUTHORITY = "MVU_AUTHORITY"
    SCOPE = "MVU_SCOPE"
    SCOPE_MISMATCH = "SCOPE_MISMATCH"
    MISSING = "MVU_MISSING"
    ID_CONFLICT = "MVU_ID_CONFLICT"
    CONFIG = "MVU_CONFIG"
    VERSION = "MVU_VERSION"
    DISPOSED = "MVU_DISPOSED"
    USAGE = "MVU_USAGE"
    USAGE_CANCELLED = "MVU_USAGE_CANCELLED"
    USAGE_DENIED = "MVU_USAGE_DENIED"
    WRITE_DENIED = "MVU_WRITE_DENIED"
    OPERATION = "MVU_OPERATION"
    HISTORY_UNAVAILABLE = "MVU_HISTORY_UNAVAILABLE"
    HISTORY_CHANGED = "MVU_HISTORY_CHANGED"
    EVENT_CONFLICT = "MVU_EVENT_CONFLICT"
    EVENT_GAP = "MVU_EVENT_GAP"
    LIMIT = "MVU_LIMIT"
    JSON = "MVU_JSON"
    PATH = "MVU_PATH"
    PATH_MISSING = "MVU_PATH_MISSING"
    PARSE = "MVU_PARSE"
    UNSUPPORTED = "MVU_UNSUPPORTED"
    SCHEMA = "MVU_SCHEMA"
    SCHEMA_CODE = "MVU_SCHEMA_CODE"
    INITIALIZATION_INVALID = "MVU_INITIALIZATION_INVALID"
    INITIALIZATION_MISSING = "MVU_INITIALIZATION_MISSING"
    SCHEMA_CONFLICT = "MVU_SCHEMA_CONFLICT"
    COMMAND_HOOK_LIMIT = "MVU_COMMAND_HOOK_LIMIT"
    COMMAND_HOOK_CONFLICT = "MVU_COMMAND_HOOK_CONFLICT"
    COMMAND_HOOK_DISPOSED = "MVU_COMMAND_HOOK_DISPOSED"
    COMMAND_HOOK_EXECUTION = "MVU_COMMAND_HOOK_EXECUTION"
    COMMAND_HOOK_REGISTRATION = "MVU_COMMAND_HOOK_REGISTRATION"
    COMMAND_HOOK_OUTPUT = "MVU_COMMAND_HOOK_OUTPUT"
    COMMAND_HOOK_DECLARATION = "MVU_COMMAND_HOOK_DECLARATION"
    STORAGE_LIMIT = "PLAY_STORAGE_LIMIT"
    PREVIEW_STATE_UNAVAILABLE = "MVU_PREVIEW_STATE_UNAVAILABLE"
    # Not among the original implementation's codes: storage that stayed busy past its timeout. HTTP maps it
    # to 503 with Retry-After; the caller may retry, nothing was written.
    STORAGE_BUSY = "MVU_STORAGE_BUSY"
    # Not among the original implementation's codes: the stored ledger fails a structural check (bad format
    # version, corrupt row). Distinct from caller errors so operators can alert on it.
    STORAGE_CORRUPT = "MVU_STORAGE_CORRUPT"
    # Not among the original implementation's codes: conditions of the storage that may pass, each named for
    # what happened (HTTP 503 with Retry-After; nothing was written): the disk or file system is
    # full, the database cannot be written (a read-only file or file system), or an I/O error.
    STORAGE_FULL = "MVU_STORAGE_FULL"
    STORAGE_READ_ONLY = "MVU_STORAGE_READ_ONLY"
    STORAGE_IO = "MVU_STORAGE_IO"
    # Not among the original implementation's codes: the database file at the ledger's path is no longer the
    # one this process opened (deleted or replaced under it). Writes are refused until an
    # operator puts it back or restarts: a write to the old file would be acknowledged and lost.
    STORAGE_GONE = "MVU_STORAGE_GONE"
    # Not among the original implementation's codes: trigger facts that could not be stored for a reason that
    # is no refusal of ours. Only ever reported (a commit's ``fact_error``, an ingest's
    # ``fact_errors``), never raised: facts observe an update, they never fail it.
    FACT_WRITE = "MVU_FACT_WRITE"


class MvuError(Exception):
    """A refusal with a stable ``code`` and structured ``details``.

    >>> MvuError(Code.REVISION_CONFLICT, "stale", expected_revision=3, current_revision=4).code
    'REVISION_CONFLICT'
    """

    def __init__(self, code: Code | str, message: str = "", **details: Any) -> None:
        self.code = str(code)
        self.message = message or self.code
        self.details: dict[str, Any] = details
        super().__init__(self.message)

    def __str__(self) -> str:
        if not self.details:
            return f"{self.code}: {self.message}"
        facts = ", ".join(f"{key}={value!r}" for key, value in self.details.items())
        return f"{self.code}: {self.message} ({facts})"

    def __repr__(self) -> str:
        return f"MvuError({self.code!r}, {self.message!r}, **{self.details!r})"

    def to_dict(self) -> dict[str, Any]:
        """The error as plain JSON: ``{"code", "message", **details}``."""
        return {"code": self.code, "message": self.message, **self.details}
