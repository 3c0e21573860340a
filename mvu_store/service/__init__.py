"""The host-facing state service (DIGEST I, F-6, P, A, L). See :class:`MvuService`."""

from mvu_store.service.models import (
    CharacterDefinition,
    CheckpointInfo,
    HistoryEntry,
    IngestReport,
    ManagementReceipt,
    ResourceConfig,
    Scope,
    SelectionResult,
    StateRecord,
    TemplateRecord,
    TurnOutcome,
    UpdateReceipt,
)
from mvu_store.service.service import MvuService

__all__ = [
    "CharacterDefinition",
    "CheckpointInfo",
    "HistoryEntry",
    "IngestReport",
    "ManagementReceipt",
    "MvuService",
    "ResourceConfig",
    "Scope",
    "SelectionResult",
    "StateRecord",
    "TemplateRecord",
    "TurnOutcome",
    "UpdateReceipt",
]
