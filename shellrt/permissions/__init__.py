"""Governance: permission rules, the decision engine, hooks and settings.

The runtime calls `build_governance` once per session and uses
``gov.gate`` (every call), ``gov.hooks`` (around every call) and
``gov.visible_tools`` (for ``tools[]``). See ``docs/permissions.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shellrt.protocol._lazy import lazy_exports

if TYPE_CHECKING:
    from shellrt.permissions.approvers import (
        TerminalApprover,
        callback_approver,
        terminal_approver_if_interactive,
    )
    from shellrt.permissions.engine import PermissionEngine
    from shellrt.permissions.errors import PermissionsError, RuleSyntaxError, SettingsWriteError
    from shellrt.permissions.gate import RulesGate
    from shellrt.permissions.governance import Governance, InvalidModeError, build_governance
    from shellrt.permissions.hooks import DEFAULT_HOOK_TIMEOUT_S, CommandHookRunner, matcher_matches
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
        PermissionRequestOutcome,
        PostToolUseOutcome,
        PreToolUseOutcome,
    )
    from shellrt.permissions.modes import PERMISSION_MODES, PermissionMode
    from shellrt.permissions.rules import PermissionRule, RuleOrigin, parse_rule
    from shellrt.permissions.ruleset import RuleSet
    from shellrt.permissions.settings import HookSpec
    from shellrt.permissions.sources import SOURCE_ORDER, Settings, load_settings
    from shellrt.permissions.suggest import suggest_rules
    from shellrt.permissions.visibility import visible_tools

__all__ = [
    "DEFAULT_HOOK_TIMEOUT_S",
    "PERMISSION_MODES",
    "SOURCE_ORDER",
    "ApprovalRequest",
    "ApprovalResponse",
    "Approver",
    "BasicGate",
    "CommandHookRunner",
    "Governance",
    "HookNotice",
    "HookRunner",
    "HookSpec",
    "InvalidModeError",
    "NoHooks",
    "PermissionDecision",
    "PermissionEngine",
    "PermissionGate",
    "PermissionMode",
    "PermissionRequestOutcome",
    "PermissionRule",
    "PermissionsError",
    "PostToolUseOutcome",
    "PreToolUseOutcome",
    "RuleOrigin",
    "RuleSet",
    "RuleSyntaxError",
    "RulesGate",
    "Settings",
    "SettingsWriteError",
    "TerminalApprover",
    "build_governance",
    "callback_approver",
    "load_settings",
    "matcher_matches",
    "parse_rule",
    "suggest_rules",
    "terminal_approver_if_interactive",
    "visible_tools",
]

#: Each public name -> the module defining it, imported on first use (see `shellrt.protocol._lazy`).
_EXPORTS: dict[str, str] = {
    "ApprovalRequest": "shellrt.permissions.interfaces",
    "ApprovalResponse": "shellrt.permissions.interfaces",
    "Approver": "shellrt.permissions.interfaces",
    "BasicGate": "shellrt.permissions.interfaces",
    "CommandHookRunner": "shellrt.permissions.hooks",
    "DEFAULT_HOOK_TIMEOUT_S": "shellrt.permissions.hooks",
    "Governance": "shellrt.permissions.governance",
    "HookNotice": "shellrt.permissions.interfaces",
    "HookRunner": "shellrt.permissions.interfaces",
    "HookSpec": "shellrt.permissions.settings",
    "InvalidModeError": "shellrt.permissions.governance",
    "NoHooks": "shellrt.permissions.interfaces",
    "PERMISSION_MODES": "shellrt.permissions.modes",
    "PermissionDecision": "shellrt.permissions.interfaces",
    "PermissionEngine": "shellrt.permissions.engine",
    "PermissionGate": "shellrt.permissions.interfaces",
    "PermissionMode": "shellrt.permissions.modes",
    "PermissionRequestOutcome": "shellrt.permissions.interfaces",
    "PermissionRule": "shellrt.permissions.rules",
    "PermissionsError": "shellrt.permissions.errors",
    "PostToolUseOutcome": "shellrt.permissions.interfaces",
    "PreToolUseOutcome": "shellrt.permissions.interfaces",
    "RuleOrigin": "shellrt.permissions.rules",
    "RuleSet": "shellrt.permissions.ruleset",
    "RuleSyntaxError": "shellrt.permissions.errors",
    "RulesGate": "shellrt.permissions.gate",
    "SOURCE_ORDER": "shellrt.permissions.sources",
    "Settings": "shellrt.permissions.sources",
    "SettingsWriteError": "shellrt.permissions.errors",
    "TerminalApprover": "shellrt.permissions.approvers",
    "build_governance": "shellrt.permissions.governance",
    "callback_approver": "shellrt.permissions.approvers",
    "load_settings": "shellrt.permissions.sources",
    "matcher_matches": "shellrt.permissions.hooks",
    "parse_rule": "shellrt.permissions.rules",
    "suggest_rules": "shellrt.permissions.suggest",
    "terminal_approver_if_interactive": "shellrt.permissions.approvers",
    "visible_tools": "shellrt.permissions.visibility",
}

__getattr__ = lazy_exports(__name__, _EXPORTS)
