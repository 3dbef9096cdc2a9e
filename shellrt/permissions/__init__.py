"""Governance: permission rules, the decision engine, hooks and settings.

The runtime calls `build_governance` once per session and uses
``gov.gate`` (every call), ``gov.hooks`` (around every call) and
``gov.visible_tools`` (for ``tools[]``). See ``docs/permissions.md``.
"""

from __future__ import annotations

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
