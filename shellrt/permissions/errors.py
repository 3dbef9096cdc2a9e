"""Exceptions of the governance layer (root: `PermissionsError`).

Governance fails closed: most problems (a malformed rule, a broken hook) are
reported as diagnostics and never raised into the runtime. These exceptions
are for callers that ask for something impossible.
"""

from __future__ import annotations

__all__ = ["PermissionsError", "RuleSyntaxError", "SettingsWriteError"]


class PermissionsError(Exception):
    """Root of every error raised by ``shellrt.permissions``."""


class RuleSyntaxError(PermissionsError, ValueError):
    """Raised by `parse_rule` when a rule string is malformed.

    Loaders catch it, report the rule with its file and line, and ignore the
    rule (a malformed rule never widens access).
    """


class SettingsWriteError(PermissionsError, OSError):
    """Raised when a remembered rule cannot be saved to ``.shellrt/settings.local.json``."""
