"""Governance: permission rules, the decision engine, hooks and settings."""

from __future__ import annotations

from shellrt.permissions.interfaces import (
    ApprovalRequest,
    ApprovalResponse,
    Approver,
    BasicGate,
    HookNotice,
    HookRunner,
    NoHooks,
    PermissionDecision,
    PermissionGate,
    PostToolUseOutcome,
    PreToolUseOutcome,
)

__all__ = [
    "ApprovalRequest",
    "ApprovalResponse",
    "Approver",
    "BasicGate",
    "HookNotice",
    "HookRunner",
    "NoHooks",
    "PermissionDecision",
    "PermissionGate",
    "PostToolUseOutcome",
    "PreToolUseOutcome",
]
