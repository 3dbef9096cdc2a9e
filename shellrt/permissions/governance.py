"""`build_governance`: the one entry point the runtime calls to get a gate, hooks and settings.

Why one function: the runtime should not know how many files are read, in
what order, or how rules, modes and hooks are wired together. It gets a
`Governance` with the `PermissionGate` to pass every call through, the
`HookRunner` to call around it, the merged `Settings` (``mcp_servers`` for the
MCP proxy), and ``diagnostics`` to show the user (malformed rules and the like).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from shellrt.permissions.errors import PermissionsError
from shellrt.permissions.hooks import CommandHookRunner
from shellrt.permissions.interfaces import Approver, HookRunner, PermissionGate
from shellrt.permissions.modes import PERMISSION_MODES, PermissionMode, parse_mode
from shellrt.permissions.sources import Settings, load_settings, local_settings_path
from shellrt.permissions.visibility import visible_tools
from shellrt.protocol import Tool

if TYPE_CHECKING:
    from shellrt.permissions.engine import PermissionEngine

__all__ = ["Governance", "InvalidModeError", "build_governance", "governed_settings"]

T = TypeVar("T", bound=Tool[Any, Any])


class InvalidModeError(PermissionsError, ValueError):
    """Raised by `build_governance` when ``mode`` is not one of the permission modes."""


@dataclass
class Governance:
    """Everything the runtime needs from governance for one session."""

    gate: PermissionGate
    hooks: HookRunner
    settings: Settings
    engine: PermissionEngine
    diagnostics: list[str] = field(default_factory=list)
    #: Set when the session's sandbox fell back to none (``auto`` without bubblewrap): why
    #: ``bypassPermissions`` is refused (every command would run unasked on the host).
    unconfined: str | None = None

    @property
    def mode(self) -> str:
        return self.engine.mode

    def set_mode(self, mode: str) -> None:
        """Switch the session's mode (e.g. leaving ``plan``); raises `InvalidModeError`.

        Managed ``disableBypassPermissionsMode`` still applies: asking for
        ``bypassPermissions`` then raises too, rather than silently widening; so does
        ``allowManagedPermissionRulesOnly`` for a widening mode the managed settings did not set,
        and ``bypassPermissions`` in a session ``auto`` started without a sandbox (`unconfined`).
        """
        parsed = parse_mode(mode)
        if parsed is None:
            raise InvalidModeError(
                f"unknown permission mode {mode!r}; use one of {', '.join(PERMISSION_MODES)}"
            )
        refusal = self.settings.mode_refusal(parsed)
        if refusal is None and parsed == "bypassPermissions":
            refusal = self.unconfined
        if refusal is not None:
            raise InvalidModeError(refusal)
        self.engine.mode = parsed
        if isinstance(self.hooks, CommandHookRunner):
            self.hooks.mode = parsed

    def allowed_roots(self) -> tuple[Path, ...]:
        """Workspace first, then ``permissions.additionalDirectories`` (for ``ToolContext.allowed_roots``)."""
        roots = [self.settings.workspace, *self.settings.additional_directories]
        return tuple(dict.fromkeys(roots))

    def visible_tools(self, tools: Sequence[T]) -> list[T]:
        """``tools`` minus those denied outright by a rule, order kept."""
        return visible_tools(tools, self.gate)


def build_governance(
    workspace: Path,
    *,
    settings_files: Sequence[Path] = (),
    mode: str | None = None,
    approver: Approver | None = None,
    allow: Sequence[str] = (),
    deny: Sequence[str] = (),
    home: Path | None = None,
    managed_path: Path | None = None,
    trust_workspace: bool = False,
) -> Governance:
    """Load every settings source and wire the engine, gate and hooks.

    ``approver`` None means headless: asks are denied after PermissionRequest
    hooks had their chance. Raises `InvalidModeError` for an unknown ``mode``;
    everything else that is wrong ends up in ``diagnostics``.
    """
    # Here, not at module level: the engine loads the command analysis (tree-sitter), which a
    # reader of the settings alone (`governed_settings`, `shellrt permissions list`) never needs.
    from shellrt.permissions.engine import PermissionEngine
    from shellrt.permissions.governance_gate import LOCAL_SETTINGS_REL, TrustKeepingGate
    from shellrt.permissions.trust import file_digest

    workspace = Path(workspace)
    settings, hooks = governed_settings(
        workspace,
        settings_files=settings_files,
        mode=mode,
        allow=allow,
        deny=deny,
        home=home,
        managed_path=managed_path,
        trust_workspace=trust_workspace,
    )
    diagnostics = settings.diagnostics
    engine = PermissionEngine(
        settings.rules,
        mode=settings.mode,
        workspace=workspace,
        additional_directories=settings.additional_directories,
        degraded=settings.degraded,
    )
    gate = TrustKeepingGate(
        engine,
        approver=approver,
        hooks=hooks,
        local_settings=local_settings_path(workspace),
        diagnostics=diagnostics,
    )
    gate.trust = settings.trust
    # An answer is added only to the bytes the session started with (see `save_allow_rules`).
    trust = settings.trust
    gate.local_settings_digest = (
        trust.digests[LOCAL_SETTINGS_REL]
        if trust is not None and LOCAL_SETTINGS_REL in trust.digests
        else file_digest(local_settings_path(workspace))
    )
    return Governance(gate=gate, hooks=hooks, settings=settings, engine=engine, diagnostics=diagnostics)


def governed_settings(
    workspace: Path,
    *,
    settings_files: Sequence[Path] = (),
    mode: str | None = None,
    allow: Sequence[str] = (),
    deny: Sequence[str] = (),
    home: Path | None = None,
    managed_path: Path | None = None,
    trust_workspace: bool = False,
) -> tuple[Settings, CommandHookRunner]:
    """The merged settings and their hooks, as `build_governance` wires them, without the engine.

    Why apart: a command that only shows the settings (``shellrt permissions list``) then loads
    no command analysis. ``settings.degraded`` already says whether a guard hook was lost; raises
    `InvalidModeError` for an unknown ``mode``.
    """
    parsed_mode: PermissionMode | None = None
    if mode is not None:
        parsed_mode = parse_mode(mode)
        if parsed_mode is None:
            raise InvalidModeError(
                f"unknown permission mode {mode!r}; use one of {', '.join(PERMISSION_MODES)}"
            )
    workspace = Path(workspace)
    settings = load_settings(
        workspace,
        settings_files=settings_files,
        mode=parsed_mode,
        allow=allow,
        deny=deny,
        home=home,
        managed_path=managed_path,
        trust_workspace=trust_workspace,
    )
    hooks = CommandHookRunner(
        settings.hook_specs,
        workspace=workspace,
        mode=settings.mode,
        diagnostics=settings.diagnostics,
        workspace_hooks=settings.trust.hook_commands if settings.trust is not None else None,
    )
    if hooks.lost_guard:  # a guard hook that can match nothing may be the one that mattered
        settings.degraded = True
    return settings, hooks
