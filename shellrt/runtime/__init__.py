"""The runtime: tool registry, single-call lifecycle, orchestration of many calls, sessions."""

from __future__ import annotations

from shellrt.runtime.execution import CallExecutor, CallOutcome, format_validation_error
from shellrt.runtime.messages import HistoryRepair, MessageFormatError, parse_tool_uses, repair_history
from shellrt.runtime.orchestration import StreamingExecution, is_concurrency_safe, run_blocks
from shellrt.runtime.registry import DuplicateToolError, ToolRegistry
from shellrt.runtime.session import RestoreResult, Runtime, SandboxChoice, resolve_sandbox

__all__ = [
    "CallExecutor",
    "CallOutcome",
    "DuplicateToolError",
    "HistoryRepair",
    "MessageFormatError",
    "RestoreResult",
    "Runtime",
    "SandboxChoice",
    "StreamingExecution",
    "ToolRegistry",
    "format_validation_error",
    "is_concurrency_safe",
    "parse_tool_uses",
    "repair_history",
    "resolve_sandbox",
    "run_blocks",
]
