"""The host-facing state service (DIGEST I, F-6, P, A, L). See :class:`MvuService`."""

from mvu_store.processor.port import CommandProcessor, ProcessorTurn
from mvu_store.service.models import (
    CharacterDefinition,
    CheckpointInfo,
    CheckpointState,
    HistoryEntry,
    IngestReport,
    ManagementReceipt,
    RecordJson,
    ResourceConfig,
    Scope,
    SelectionResult,
    StateRecord,
    TemplateRecord,
    TurnOutcome,
    UpdateReceipt,
)
from mvu_store.service.processing import PassThrough
from mvu_store.service.prompting import ManagementDefaults, PromptDependency, RenderedPrompt, StateAssembly
from mvu_store.service.service import MvuService

__all__ = [
    "CharacterDefinition",
    "CheckpointInfo",
    "CheckpointState",
    "CommandProcessor",
    "HistoryEntry",
    "IngestReport",
    "ManagementDefaults",
    "ManagementReceipt",
    "MvuService",
    "PassThrough",
    "ProcessorTurn",
    "PromptDependency",
    "RecordJson",
    "RenderedPrompt",
    "ResourceConfig",
    "Scope",
    "SelectionResult",
    "StateAssembly",
    "StateRecord",
    "TemplateRecord",
    "TurnOutcome",
    "UpdateReceipt",
]
