"""`build_governance`: the one entry point the runtime calls to get a gate, hooks and settings.

Why one function: the runtime should not know how many files are read, in
what order, or how rules, modes and hooks are wired together. It gets a
`Governance` with the `PermissionGate` to pass every call through, the
`HookRunner` to call around it, the merged `Settings` (``mcp_servers`` for the
MCP proxy), and ``diagnostics`` to show the user (malformed rules and the like).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from shellrt.permissions.engine import PermissionEngine
from shellrt.permissions.errors import PermissionsError
from shellrt.permissions.gate import RulesGate
from shellrt.permissions.hooks import CommandHookRunner
from shellrt.permissions.interfaces import Approver, HookRunner, PermissionGate
from shellrt.permissions.modes import PERMISSION_MODES, parse_mode
from shellrt.permissions.sources import Settings, load_settings, local_settings_path
from shellrt.permissions.trust import WorkspaceTrust, file_digest, refresh_recorded_file, trust_store_path
from shellrt.permissions.visibility import visible_tools
from shellrt.protocol import Tool

__all__ = ["Governance", "InvalidModeError", "build_governance"]

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


#: The project's local settings, where "allow always in this project" answers go.
LOCAL_SETTINGS_REL = ".shellrt/settings.local.json"


class _TrustKeepingGate(RulesGate):
    """Re-records the digest of the project's local settings after saving an answer there,
    so the operator's own "allow always in this project" does not untrust the file."""

    trust: WorkspaceTrust | None = None
    #: Told about each save, so the supervisor's protected-files check keeps it (set by the runtime).
    on_saved: Callable[[Path], None] | None = None

    def _record_anchors(
        self, file: Path, texts: list[str], files: frozenset[tuple[str, str]], chain: list[str]
    ) -> None:
        self.anchors_written = None
        super()._record_anchors(file, texts, files, chain)
        if self.anchors_written is not None and self.on_saved is not None:
            self.on_saved(self.anchors_written)  # shellrt's own record of what saved rules allowed

    def _remember(
        self,
        scope: str,
        rules: list[str],
        chain: list[str],
        dirs: frozenset[str] | None = None,
        files: frozenset[tuple[str, str]] | None = None,
    ) -> None:
        before = self.local_settings_digest
        super()._remember(scope, rules, chain, dirs, files)
        written = self.local_settings_digest
        # Only what shellrt itself just wrote is vouched for: a failed save (the file was planted,
        # unparsable, a link) must neither be kept by the protected-files check nor trusted.
        if scope == "project" and self.local_settings is not None and written != before:
            if self.on_saved is not None and file_digest(self.local_settings) == written:
                self.on_saved(self.local_settings)  # swapped since the write: left to the check
            refreshed = (
                self.trust is not None
                and written is not None
                and refresh_recorded_file(self.trust, LOCAL_SETTINGS_REL, written)
            )
            if refreshed and self.trust is not None and self.on_saved is not None:
                self.on_saved(self.trust.store or trust_store_path())  # shellrt's own record


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
    parsed_mode = None
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
    diagnostics = settings.diagnostics
    engine = PermissionEngine(
        settings.rules,
        mode=settings.mode,
        workspace=workspace,
        additional_directories=settings.additional_directories,
        degraded=settings.degraded,
    )
    hooks = CommandHookRunner(
        settings.hook_specs,
        workspace=workspace,
        mode=settings.mode,
        diagnostics=diagnostics,
        workspace_hooks=settings.trust.hook_commands if settings.trust is not None else None,
    )
    if hooks.lost_guard:  # a guard hook that can match nothing may be the one that mattered
        settings.degraded = engine.degraded = True
    gate = _TrustKeepingGate(
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
