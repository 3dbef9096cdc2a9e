"""The Tool protocol: tool base class, per-call context, wire messages and result envelopes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shellrt.protocol._lazy import lazy_exports

if TYPE_CHECKING:
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

#: Each public name -> the module defining it, imported on first use (see `shellrt.protocol._lazy`).
_EXPORTS: dict[str, str] = {
    "ContentBlock": "shellrt.protocol.messages",
    "FileReadRecord": "shellrt.protocol.context",
    "ImageBlock": "shellrt.protocol.messages",
    "ImageSource": "shellrt.protocol.messages",
    "InterruptBehavior": "shellrt.protocol.tool",
    "PermissionBehavior": "shellrt.protocol.permission",
    "PermissionResult": "shellrt.protocol.permission",
    "PermissionSubject": "shellrt.protocol.permission",
    "ProgressEvent": "shellrt.protocol.context",
    "ProgressSink": "shellrt.protocol.context",
    "ProtocolError": "shellrt.protocol.errors",
    "ResultEnvelope": "shellrt.protocol.results",
    "ServiceNotAvailableError": "shellrt.protocol.errors",
    "TextBlock": "shellrt.protocol.messages",
    "Tool": "shellrt.protocol.tool",
    "ToolCatalog": "shellrt.protocol.catalog",
    "ToolContext": "shellrt.protocol.context",
    "ToolDefinitionError": "shellrt.protocol.errors",
    "ToolExecutionError": "shellrt.protocol.errors",
    "ToolOutput": "shellrt.protocol.tool",
    "ToolResultBlock": "shellrt.protocol.messages",
    "ToolUseBlock": "shellrt.protocol.messages",
    "UserMessage": "shellrt.protocol.messages",
    "ValidationResult": "shellrt.protocol.tool",
    "apply_message_budget": "shellrt.protocol.results",
    "empty_output_text": "shellrt.protocol.results",
    "error_envelope": "shellrt.protocol.results",
    "persist_result_text": "shellrt.protocol.results",
    "preview_text": "shellrt.protocol.results",
    "to_anthropic": "shellrt.protocol.definitions",
    "to_openai": "shellrt.protocol.definitions",
}

__getattr__ = lazy_exports(__name__, _EXPORTS)
