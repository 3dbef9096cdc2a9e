"""The Tool protocol: tool base class, per-call context, wire messages and result envelopes."""

from __future__ import annotations

from shellrt.protocol.catalog import ToolCatalog
from shellrt.protocol.context import FileReadRecord, ProgressEvent, ProgressSink, ToolContext
from shellrt.protocol.definitions import to_anthropic, to_openai
from shellrt.protocol.errors import (
    ProtocolError,
    ServiceNotAvailableError,
    ToolDefinitionError,
    ToolExecutionError,
)
from shellrt.protocol.messages import (
    ContentBlock,
    ImageBlock,
    ImageSource,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from shellrt.protocol.permission import PermissionBehavior, PermissionResult, PermissionSubject
from shellrt.protocol.results import (
    ResultEnvelope,
    apply_message_budget,
    empty_output_text,
    error_envelope,
    persist_result_text,
    preview_text,
)
from shellrt.protocol.tool import InterruptBehavior, Tool, ToolOutput, ValidationResult

__all__ = [
    "ContentBlock",
    "FileReadRecord",
    "ImageBlock",
    "ImageSource",
    "InterruptBehavior",
    "PermissionBehavior",
    "PermissionResult",
    "PermissionSubject",
    "ProgressEvent",
    "ProgressSink",
    "ProtocolError",
    "ResultEnvelope",
    "ServiceNotAvailableError",
    "TextBlock",
    "Tool",
    "ToolCatalog",
    "ToolContext",
    "ToolDefinitionError",
    "ToolExecutionError",
    "ToolOutput",
    "ToolResultBlock",
    "ToolUseBlock",
    "UserMessage",
    "ValidationResult",
    "apply_message_budget",
    "empty_output_text",
    "error_envelope",
    "persist_result_text",
    "preview_text",
    "to_anthropic",
    "to_openai",
]
