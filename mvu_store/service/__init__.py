"""The host-facing state service (DIGEST I, F-6, P, A, L). See :class:`MvuService`."""

from mvu_store.processor.port import CommandProcessor, ProcessorTurn
from mvu_store.service.card_scopes import MAX_SCOPE_CHARS
from mvu_store.service.models import (
    MAX_OPERATION_ID,
    MAX_SESSION_ID,
    RESOURCE_ID,
    Change,
    Changes,
    CharacterDefinition,
    CheckpointInfo,
    CheckpointState,
    DiffChange,
    DiffPoint,
    HistoryEntry,
    IngestReport,
    ManagementReceipt,
    RecordJson,
    ResourceConfig,
    Scope,
    SelectionResult,
    StateDiff,
    StateRecord,
    TemplateRecord,
    TurnOutcome,
    UpdateReceipt,
)
from mvu_store.service.offload import off_loop
from mvu_store.service.processing import PassThrough
from mvu_store.service.prompting import ManagementDefaults, PromptDependency, RenderedPrompt, StateAssembly
from mvu_store.service.service import MvuService
from mvu_store.service.session_cache import DEFAULT_MEMORY_BYTES as DEFAULT_SESSION_MEMORY_BYTES
from mvu_store.service.turn_replies import TurnReply, turn_reply

__all__ = [
    "DEFAULT_SESSION_MEMORY_BYTES",
    "MAX_OPERATION_ID",
    "MAX_SCOPE_CHARS",
    "MAX_SESSION_ID",
    "RESOURCE_ID",
    "Change",
    "Changes",
    "CharacterDefinition",
    "CheckpointInfo",
    "CheckpointState",
    "CommandProcessor",
    "DiffChange",
    "DiffPoint",
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
    "StateDiff",
    "StateRecord",
    "TemplateRecord",
    "TurnOutcome",
    "TurnReply",
    "UpdateReceipt",
    "off_loop",
    "turn_reply",
]
