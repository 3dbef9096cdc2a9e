"""The runtime: tool registry, single-call lifecycle, orchestration of many calls, sessions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shellrt.protocol._lazy import lazy_exports

if TYPE_CHECKING:
    from shellrt.runtime.execution import CallExecutor, CallOutcome, format_validation_error
    from shellrt.runtime.messages import HistoryRepair, MessageFormatError, parse_tool_uses, repair_history
    from shellrt.runtime.orchestration import StreamingExecution, is_concurrency_safe, run_blocks
    from shellrt.runtime.registry import DuplicateToolError, ToolRegistry
    from shellrt.runtime.sandbox_choice import SandboxChoice, resolve_sandbox
    from shellrt.runtime.session import RestoreResult, Runtime

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

#: Each public name -> the module defining it, imported on first use (see `shellrt.protocol._lazy`).
_EXPORTS: dict[str, str] = {
    "CallExecutor": "shellrt.runtime.execution",
    "CallOutcome": "shellrt.runtime.execution",
    "DuplicateToolError": "shellrt.runtime.registry",
    "HistoryRepair": "shellrt.runtime.messages",
    "MessageFormatError": "shellrt.runtime.messages",
    "RestoreResult": "shellrt.runtime.session",
    "Runtime": "shellrt.runtime.session",
    "SandboxChoice": "shellrt.runtime.sandbox_choice",
    "StreamingExecution": "shellrt.runtime.orchestration",
    "ToolRegistry": "shellrt.runtime.registry",
    "format_validation_error": "shellrt.runtime.execution",
    "is_concurrency_safe": "shellrt.runtime.orchestration",
    "parse_tool_uses": "shellrt.runtime.messages",
    "repair_history": "shellrt.runtime.messages",
    "resolve_sandbox": "shellrt.runtime.sandbox_choice",
    "run_blocks": "shellrt.runtime.orchestration",
}

__getattr__ = lazy_exports(__name__, _EXPORTS)
