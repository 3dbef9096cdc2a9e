"""Each package's __init__ re-exports its public names explicitly; this pins them."""

from __future__ import annotations

import importlib

import pytest

PINNED: dict[str, set[str]] = {
    "shellrt": {"Runtime"},
    "shellrt.protocol": {
        "ContentBlock", "FileReadRecord", "ImageBlock", "ImageSource", "InterruptBehavior", "PermissionBehavior",
        "PermissionResult", "PermissionSubject", "ProgressEvent", "ProgressSink", "ProtocolError", "ResultEnvelope",
        "ServiceNotAvailableError", "TextBlock", "Tool", "ToolCatalog", "ToolContext", "ToolDefinitionError",
        "ToolExecutionError", "ToolOutput", "ToolResultBlock", "ToolUseBlock", "UserMessage", "ValidationResult",
        "apply_message_budget", "empty_output_text", "error_envelope", "persist_result_text", "preview_text",
        "to_anthropic", "to_openai",
    },
    "shellrt.runtime": {
        "CallExecutor", "CallOutcome", "DuplicateToolError", "HistoryRepair", "MessageFormatError", "RestoreResult",
        "Runtime", "SandboxChoice", "StreamingExecution", "ToolRegistry", "format_validation_error",
        "is_concurrency_safe", "parse_tool_uses", "repair_history", "resolve_sandbox", "run_blocks",
    },
    "sandbox": {
        "BackendUnavailableError", "BwrapConfig", "DockerConfig", "ExecRequest", "ExitStatus", "LocalConfig",
        "NetworkMode", "ResourceLimits", "SandboxBackend", "SandboxClosedError", "SandboxConfig", "SandboxError",
        "SandboxExecError", "SandboxPolicy", "SandboxProcess",
        "ASPECTS", "Aspect", "Recyclable", "SandboxPolicyError", "UnsupportedRequestError", "WorkspaceExporter", "check_enforceable",
        "requested_limits",
    },
}


@pytest.mark.parametrize("module_name", sorted(PINNED))
def test_all_is_pinned(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert set(module.__all__) == PINNED[module_name]
    for name in module.__all__:
        assert getattr(module, name) is not None
