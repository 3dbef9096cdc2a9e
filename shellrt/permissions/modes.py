"""Permission modes, as users of Claude Code know them.

- ``default``: rules, the tool's own check, then ask;
- ``acceptEdits``: file edits inside the workspace (and additional directories) are allowed;
- ``plan``: nothing with side effects runs (only read-only calls can be allowed);
- ``dontAsk``: every ask becomes a deny (for unattended runs that must never block);
- ``bypassPermissions``: everything not denied, not asked by a rule and not caught by a
  safety check is allowed. Managed policy can disable it.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["PERMISSION_MODES", "WIDENING_MODES", "PermissionMode", "parse_mode"]

PermissionMode = Literal["default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"]
PERMISSION_MODES: tuple[str, ...] = get_args(PermissionMode)
#: Modes that allow more than ``default`` does (``plan`` and ``dontAsk`` only narrow): under
#: managed ``allowManagedPermissionRulesOnly`` only the managed settings may choose them.
WIDENING_MODES: frozenset[str] = frozenset({"acceptEdits", "bypassPermissions"})


def parse_mode(value: object) -> PermissionMode | None:
    """The mode named by ``value``, or None when it is not a mode (callers report and ignore it)."""
    if isinstance(value, str) and value in PERMISSION_MODES:
        return value  # type: ignore[return-value]
    return None
