"""Where settings come from, in precedence order, and how they merge into one `Settings`.

Sources, highest first:

1. ``managed`` — ``/etc/shellrt/managed-settings.json`` (or ``$SHELLRT_MANAGED_SETTINGS``
   when that file does not exist — else the variable's file is read as a ``cli`` file —, or
   ``managed_path``);
2. ``cli`` — ``--allow`` / ``--deny`` / ``--mode`` flags and ``--settings FILE``;
3. ``local`` — ``.shellrt/settings.local.json`` then ``.claude/settings.local.json``;
4. ``project`` — ``.shellrt/settings.json`` then ``.claude/settings.json`` (and the
   ``mcpServers`` of ``.mcp.json``);
5. ``user`` — ``~/.shellrt/settings.json`` (``HOME`` from the environment);
6. ``session`` — rules a person saved while answering a prompt.

Rule kinds do not follow precedence (deny > ask > allow from any source);
precedence decides ``defaultMode`` and ``mcpServers`` entries, and the managed
source may forbid lower sources from allowing (``allowManagedPermissionRulesOnly``),
from adding hooks (``allowManagedHooksOnly``) and from using bypass mode
(``disableBypassPermissionsMode: "disable"``).

Local and project files live in the workspace: unless the operator trusts it
(`shellrt.permissions.trust`) only their deny and ask rules apply.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from sandbox._root_links import link_refusal, repo_link_on_the_way
from shellrt.permissions.caller_home import caller_home
from shellrt.permissions.modes import WIDENING_MODES, PermissionMode
from shellrt.permissions.rule_anchors import anchor_saved_rules
from shellrt.permissions.rules import PermissionRule, RuleOrigin
from shellrt.permissions.ruleset import RuleSet
from shellrt.permissions.server_lines import host_commands
from shellrt.permissions.settings import FileSettings, HookSpec, load_settings_file, parse_rule_failing_closed
from shellrt.permissions.trust import WorkspaceTrust, assess_trust

__all__ = [
    "DEFAULT_MANAGED_PATH",
    "MANAGED_ENV",
    "MCP_JSON",
    "SOURCE_ORDER",
    "EffectivePermissions",
    "LoadedSources",
    "Settings",
    "as_sessions_read",
    "discover_files",
    "load_settings",
    "local_settings_path",
]

SOURCE_ORDER: tuple[str, ...] = ("managed", "cli", "local", "project", "user", "session")
DEFAULT_MANAGED_PATH = Path("/etc/shellrt/managed-settings.json")
MANAGED_ENV = "SHELLRT_MANAGED_SETTINGS"
#: Claude Code's project MCP file: only its ``mcpServers`` are read (when the workspace is trusted).
MCP_JSON = ".mcp.json"


@dataclass
class LoadedSources:
    """Working state while merging sources (`Settings` wraps it once merged)."""

    workspace: Path
    home: Path
    files: list[FileSettings] = field(default_factory=list)
    rules: RuleSet = field(default_factory=RuleSet)
    hooks: list[HookSpec] = field(default_factory=list)
    mode: PermissionMode = "default"
    mode_source: str = "default"
    additional_directories: list[Path] = field(default_factory=list)
    mcp_servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    web_fetch: dict[str, Any] = field(default_factory=dict)
    disable_bypass: bool = False
    #: The highest source whose ``disableBypassPermissionsMode`` disabled it (None: none did).
    disable_bypass_by: str | None = None
    managed_rules_only: bool = False
    managed_hooks_only: bool = False
    degraded: bool = False
    diagnostics: list[str] = field(default_factory=list)
    trust: WorkspaceTrust | None = None
    trust_notice: str | None = None


class EffectivePermissions(BaseModel):
    """The merged ``permissions`` section, in the settings-file shape."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    allow: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list)
    default_mode: PermissionMode = Field(default="default", alias="defaultMode")
    additional_directories: list[str] = Field(default_factory=list, alias="additionalDirectories")


class Settings(BaseModel):
    """The effective settings of a session, merged from every source.

    ``model_dump(by_alias=True)`` gives the settings-file shape (``permissions``,
    ``hooks``, ``mcpServers``) for ``ToolContext.settings``; the parsed rules,
    hook specs and per-file details are available as properties.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    permissions: EffectivePermissions = Field(default_factory=EffectivePermissions)
    hooks: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    mcp_servers: dict[str, dict[str, Any]] = Field(default_factory=dict, alias="mcpServers")
    #: WebFetch options merged key by key (higher-precedence sources win).
    web_fetch: dict[str, Any] = Field(default_factory=dict, alias="webFetch")
    #: Which source chose the mode (``managed``, ``cli``, ``local``, ``project``, ``user`` or ``default``).
    mode_source: str = Field(default="default", alias="modeSource")
    #: A settings file existed but could not be read: allow rules and bypass mode are off.
    degraded: bool = False
    diagnostics: list[str] = Field(default_factory=list)
    #: Set when workspace settings files were not trusted: what was ignored and how to trust them.
    trust_notice: str | None = Field(default=None, alias="trustNotice")

    _state: LoadedSources = PrivateAttr()

    @classmethod
    def from_sources(cls, state: LoadedSources) -> Settings:
        effective = state.rules.effective()
        hooks: dict[str, list[dict[str, Any]]] = {}
        for spec in state.hooks:
            entry: dict[str, Any] = {"type": "command", "command": spec.command}
            if spec.timeout is not None:
                entry["timeout"] = spec.timeout
            if spec.on_failure != "continue":
                entry["onFailure"] = spec.on_failure
            hooks.setdefault(spec.event, []).append({"matcher": spec.matcher, "hooks": [entry]})
        out = cls(
            permissions=EffectivePermissions(
                allow=[r.text for r in effective if r.kind == "allow"],
                deny=[r.text for r in effective if r.kind == "deny"],
                ask=[r.text for r in effective if r.kind == "ask"],
                default_mode=state.mode,
                additional_directories=[str(d) for d in state.additional_directories],
            ),
            hooks=hooks,
            mcp_servers=state.mcp_servers,
            web_fetch=state.web_fetch,
            mode_source=state.mode_source,
            degraded=state.degraded,
            diagnostics=state.diagnostics,
            trust_notice=state.trust_notice,
        )
        out._state = state
        return out

    # --- parsed views --------------------------------------------------------------
    @property
    def workspace(self) -> Path:
        return self._state.workspace

    @property
    def home(self) -> Path:
        return self._state.home

    @property
    def mode(self) -> PermissionMode:
        return self._state.mode

    @property
    def trust(self) -> WorkspaceTrust | None:
        """Which workspace settings files were trusted when the session started."""
        return self._state.trust

    @property
    def rules(self) -> RuleSet:
        """Every parsed rule (also those ignored under managed-only), live: session rules are added here."""
        return self._state.rules

    @property
    def hook_specs(self) -> list[HookSpec]:
        return self._state.hooks

    @property
    def files(self) -> list[FileSettings]:
        return self._state.files

    @property
    def additional_directories(self) -> list[Path]:
        return self._state.additional_directories

    @property
    def disable_bypass(self) -> bool:
        return self._state.disable_bypass

    @property
    def managed_rules_only(self) -> bool:
        return self._state.managed_rules_only

    @property
    def managed_hooks_only(self) -> bool:
        return self._state.managed_hooks_only

    def may_widen(self, source: str, _file: Path | None = None) -> bool:
        """Whether what ``source`` allows may widen the session (the sandbox's network allow-list
        from ``WebFetch(domain:…)`` allow rules): under managed-only, only managed settings."""
        return source == "managed" or not self.managed_rules_only

    def mode_refusal(self, mode: PermissionMode) -> str | None:
        """Why managed policy forbids switching the session to ``mode`` (None: it may)."""
        if mode == "bypassPermissions" and self.disable_bypass:
            by = self._state.disable_bypass_by
            return "bypassPermissions is disabled by " + (
                "managed policy" if by in (None, "managed") else f"disableBypassPermissionsMode in the {by} settings"
            )
        managed = self._state.files[0].default_mode if self._state.files else None
        if self.managed_rules_only and mode in WIDENING_MODES and mode != managed:
            return f"{mode} is not the managed settings' defaultMode, and {_MANAGED_ONLY} forbids widening it"
        return None

    def describe(self) -> dict[str, Any]:
        """A JSON-able account of every rule with its source (``shellrt permissions list --json``)."""
        return {
            "mode": self.mode,
            "mode_source": self.mode_source,
            "rules": [
                {
                    "kind": r.kind,
                    "rule": r.text,
                    "source": r.origin.describe(),
                    "ignored": self.rules.ignored(r),
                }
                for r in self.rules.rules
            ],
            "hooks": [
                {"event": h.event, "matcher": h.matcher, "command": h.command, "source": h.origin.describe()}
                for h in self.hook_specs
            ],
            "additional_directories": [str(d) for d in self.additional_directories],
            "mcp_servers": sorted(self.mcp_servers),
            "files": [{"path": str(f.path), "source": f.source, "exists": f.exists} for f in self.files],
            "degraded": self.degraded,
            "diagnostics": list(self.diagnostics),
            "trust": self.trust.describe() if self.trust else None,
        }


def local_settings_path(workspace: Path) -> Path:
    """Where "allow always in this project" answers are saved."""
    return workspace / ".shellrt" / "settings.local.json"


def _managed_files(managed_path: Path | None) -> list[tuple[str, Path]]:
    """The managed source, and ``$SHELLRT_MANAGED_SETTINGS`` demoted to a ``cli`` file when the
    administrator's ``/etc`` file exists.

    Whoever sets an environment variable (the operator, a wrapper, a repository's ``.envrc``) is
    not the administrator: the variable replaces the default path only on a machine with no
    administrator's policy (tests, a developer's laptop). With one, the variable's file is read as
    if passed with ``--settings``: below the managed file, under its managed-only restrictions.
    """
    if managed_path is not None:
        return [("managed", managed_path)]
    named = os.environ.get(MANAGED_ENV)
    if not named:
        return [("managed", DEFAULT_MANAGED_PATH)]
    if os.path.lexists(DEFAULT_MANAGED_PATH) and os.path.abspath(named) != str(DEFAULT_MANAGED_PATH):
        return [("managed", DEFAULT_MANAGED_PATH), ("cli", Path(named))]
    return [("managed", Path(named))]


def discover_files(
    workspace: Path,
    *,
    settings_files: Sequence[Path] = (),
    home: Path | None = None,
    managed_path: Path | None = None,
) -> list[tuple[str, Path]]:
    """Every settings file that may apply, highest precedence first, as (source, path)."""
    home = home if home is not None else _home()
    found: list[tuple[str, Path]] = _managed_files(managed_path)
    found += [("cli", Path(p)) for p in settings_files]
    found += [
        ("local", local_settings_path(workspace)),
        ("local", workspace / ".claude" / "settings.local.json"),
        ("project", workspace / ".shellrt" / "settings.json"),
        ("project", workspace / ".claude" / "settings.json"),
        ("project", workspace / MCP_JSON),
        ("user", home / ".shellrt" / "settings.json"),
    ]
    return found


def load_settings(
    workspace: Path,
    *,
    settings_files: Sequence[Path] = (),
    mode: PermissionMode | None = None,
    allow: Sequence[str] = (),
    deny: Sequence[str] = (),
    ask: Sequence[str] = (),
    home: Path | None = None,
    managed_path: Path | None = None,
    trust: WorkspaceTrust | None = None,
    trust_workspace: bool = False,
) -> Settings:
    """Read every source and merge; problems end up in ``diagnostics``, never as exceptions.

    Workspace settings files are obeyed in full only when trusted (``trust``,
    else `assess_trust` with ``trust_workspace``); untrusted ones keep only their
    deny and ask rules (see `shellrt.permissions.trust`).
    """
    home = home if home is not None else _home()
    if trust is None:
        trust = assess_trust(workspace, trust_workspace=trust_workspace)
    settings = LoadedSources(workspace=workspace, home=home, rules=RuleSet(home=home), trust=trust)
    settings.diagnostics += trust.diagnostics
    ignored: dict[str, list[str]] = {}
    for source, path in discover_files(
        workspace, settings_files=settings_files, home=home, managed_path=managed_path
    ):
        root = workspace if source == "managed" else None
        inside = workspace if source in ("local", "project") else None  # the workspace's own files
        loaded = load_settings_file(path, source, home=home, root=root, inside=inside)
        if source == "cli" and not loaded.exists:
            loaded.diagnostics.append(f"{path}: --settings file not found")
        as_sessions_read(loaded)
        rel = trust.settings_rel(path, source, workspace)
        hook_commands = host_commands(loaded, workspace)  # hooks and stdio MCP servers (round 22)
        if (
            loaded.exists
            and rel is not None
            and not trust.is_trusted_loaded(rel, loaded.digest, hook_commands)
        ):
            ignored.setdefault(rel, []).extend(_tighten_only(loaded))
        settings.files.append(loaded)
        settings.diagnostics += loaded.diagnostics
        settings.degraded = settings.degraded or loaded.broken
    settings.trust_notice = trust.notice(ignored)
    if settings.trust_notice:
        settings.diagnostics.append(settings.trust_notice)
    managed = settings.files[0]
    if managed.unread and managed.source == "managed":
        _assume_managed_restrictions(managed, settings.diagnostics)
    # Only narrows: obeyed from every source, the operator's own files above all (an administrator's
    # key only, it was silently ignored in user and --settings files: red team round 42).
    disabling = [f for f in settings.files if f.disable_bypass]
    settings.disable_bypass = bool(disabling)
    settings.disable_bypass_by = disabling[0].source if disabling else None
    settings.managed_rules_only = managed.managed_rules_only
    settings.managed_hooks_only = managed.managed_hooks_only
    settings.rules.managed_only = managed.managed_rules_only

    cli_origin = RuleOrigin("cli", None, None, workspace)
    cli_rules: list[PermissionRule] = []
    for kind, values in (("deny", deny), ("ask", ask), ("allow", allow)):
        for value in values:
            rule, problem, degrades = parse_rule_failing_closed(
                value, kind, cli_origin, f"--{kind} {value!r}: malformed rule"
            )
            if rule is not None:
                cli_rules.append(rule)
            if problem is not None:
                settings.diagnostics.append(problem)
            settings.degraded = settings.degraded or degrades

    # Rules and hooks, in source order: managed, cli flags, cli files, local, project, user.
    ordered = [managed, *[f for f in settings.files[1:] if f.source == "cli"]]
    ordered += [f for f in settings.files[1:] if f.source != "cli"]
    for index, loaded in enumerate(ordered):
        # A saved "always in this project" rule covers the code it allowed, as it was (round 21).
        # So does a committed one from the store's trust: what `trust add` saw it run (round 23).
        anchored = frozenset({"local"} if trust.flag else {"local", "project"})
        for rule in anchor_saved_rules(loaded.rules, workspace, loaded.source, loaded.path, anchored):
            settings.rules.add(rule)
        if index == 0:
            for rule in cli_rules:
                settings.rules.add(rule)
        if settings.managed_hooks_only and loaded.source != "managed":
            if loaded.hooks:
                settings.diagnostics.append(
                    f"{loaded.path}: hooks ignored (managed policy allows managed hooks only)"
                )
        else:
            settings.hooks += loaded.hooks
            settings.degraded = settings.degraded or loaded.lost_guard  # untrusted: reset by _tighten_only
        if settings.managed_rules_only and loaded.source != "managed":
            _managed_only_sandbox(loaded, settings.diagnostics)
        if settings.managed_rules_only and loaded.source != "managed" and loaded.additional_directories:
            # Directories widen (the file tools and the sandbox may write there), as allow rules do.
            shown = ", ".join(str(d) for d in loaded.additional_directories)
            settings.diagnostics.append(
                f"{loaded.path}: additionalDirectories {shown} ignored: {_MANAGED_ONLY}"
                " lets only managed settings add directories"
            )
        else:
            for directory in _without_repo_links(loaded, workspace, settings.home, settings.diagnostics):
                if directory not in settings.additional_directories:
                    settings.additional_directories.append(directory)
        for name, cfg in loaded.mcp_servers.items():
            settings.mcp_servers.setdefault(name, cfg)
        for key, value in loaded.web_fetch.items():
            if key in _WIDENING_WEB_KEYS and settings.managed_rules_only and loaded.source != "managed":
                # Opening private and metadata addresses, or more ports, to WebFetch widens like an allow rule.
                settings.diagnostics.append(
                    f"{loaded.path}: webFetch.{key} ignored: {_MANAGED_ONLY} lets only managed "
                    f"settings {_WIDENING_WEB_KEYS[key]}"
                )
                continue
            settings.web_fetch.setdefault(key, value)
    if settings.managed_rules_only:
        dropped = [r for r in settings.rules.rules if settings.rules.ignored(r)]
        for rule in dropped:
            settings.diagnostics.append(
                f"{rule.describe()} ignored: managed policy allows managed allow rules only"
            )

    _choose_mode(settings, ordered, mode)
    return Settings.from_sources(settings)


def _without_repo_links(loaded: FileSettings, workspace: Path, home: Path, diagnostics: list[str]) -> list[Path]:
    """A workspace file's directories less those through a symlink inside the workspace (red team,
    round 12): the repository must not open a host directory, nor stop the session by naming one
    (the sandbox policy refuses such a root). An operator's file keeps them: the policy refuses
    and says which real path to name."""
    own = loaded.source in ("local", "project") or _inside(loaded.path, workspace)
    if not own:
        return list(loaded.additional_directories)
    from shellrt.permissions.system_dirs import system_dir_refusal

    kept: list[Path] = []
    for directory in loaded.additional_directories:
        found = repo_link_on_the_way(directory, workspace)
        refused = system_dir_refusal(directory, home) if found is None else None  # round 48
        if found is None and refused is None:
            kept.append(directory)
        else:
            why = link_refusal(directory, *found) if found is not None else refused
            diagnostics.append(f"{loaded.path}: additionalDirectories root dropped: {why}")
    return kept


def _inside(path: Path | None, workspace: Path) -> bool:
    if path is None:
        return False
    real, root = Path(os.path.realpath(path)), Path(os.path.realpath(workspace))
    return real == root or root in real.parents


#: ``webFetch`` keys that open more to WebFetch: only managed settings under managed-only.
_WIDENING_WEB_KEYS = {
    "allowPrivateHosts": "open private hosts to WebFetch",
    "allowPorts": "open more ports of public hosts to WebFetch",
}
#: How diagnostics name the managed policy that limits lower sources to narrowing.
_MANAGED_ONLY = "managed policy (allowManagedPermissionRulesOnly)"


def _choose_mode(
    settings: LoadedSources, ordered: list[FileSettings], cli_mode: PermissionMode | None
) -> None:
    """The highest source's mode; under managed-only, a widening mode only from managed settings."""
    candidates: list[tuple[str, str, PermissionMode | None]] = [
        (ordered[0].source, str(ordered[0].path), ordered[0].default_mode)
    ]
    candidates.append(("cli", "--mode", cli_mode))
    candidates += [(f.source, str(f.path), f.default_mode) for f in ordered[1:]]
    for source, where, value in candidates:
        if value is None:
            continue
        if settings.managed_rules_only and source != "managed" and value in WIDENING_MODES:
            # The operator's own --mode too (fail closed): the policy, not the caller, widens.
            settings.diagnostics.append(
                f"{where}: mode {value} ignored: {_MANAGED_ONLY} lets only managed settings choose a mode "
                "that allows more than default (acceptEdits, bypassPermissions); set permissions.defaultMode "
                "in the managed settings to use it"
            )
            continue
        if value == "bypassPermissions" and settings.disable_bypass:
            by = ", ".join(str(f.path) for f in settings.files if f.disable_bypass)
            who = "managed policy" if settings.disable_bypass_by == "managed" else "your settings"
            settings.diagnostics.append(
                f"bypassPermissions requested by {source} settings is disabled by {who} "
                f"(disableBypassPermissionsMode in {by}); using default"
            )
            continue
        settings.mode, settings.mode_source = value, source
        return


def _tighten_only(loaded: FileSettings) -> list[str]:
    """Strip an untrusted file down to its deny and ask rules; return what was dropped."""
    dropped: list[str] = []
    allows = [r for r in loaded.rules if r.kind == "allow"]
    if allows:
        dropped.append(f"{len(allows)} allow rule(s)")
        loaded.rules = [r for r in loaded.rules if r.kind != "allow"]
    if loaded.hooks:
        dropped.append(f"{len(loaded.hooks)} hook(s)")
        loaded.hooks = []
    loaded.lost_guard = False  # its hooks never run: a malformed one lost nothing
    if loaded.default_mode is not None:
        dropped.append(f"defaultMode {loaded.default_mode}")
        loaded.default_mode = None
    if loaded.mcp_servers:
        dropped.append(f"mcpServers {', '.join(sorted(loaded.mcp_servers))}")
        loaded.mcp_servers = {}
    if loaded.additional_directories:
        dropped.append("additionalDirectories")
        loaded.additional_directories = []
    if loaded.web_fetch:
        dropped.append("webFetch")
        loaded.web_fetch = {}
    widening = [key for key in _SANDBOX_UNMASKING if loaded.sandbox.get(key)]
    if widening:
        # Masks tighten and stay; unmasking secrets widens. (``network.allowedDomains`` is judged
        # against the trust by the sandbox policy, which says so itself.)
        dropped.append(", ".join(f"sandbox.{key}" for key in widening))
        loaded.sandbox = {k: v for k, v in loaded.sandbox.items() if k not in _SANDBOX_UNMASKING}
    return dropped


#: Keys of a ``sandbox`` section that uncover what the default masks hide.
_SANDBOX_UNMASKING = ("unmaskDefaults", "unmaskedPaths")


def _managed_only_sandbox(loaded: FileSettings, diagnostics: list[str]) -> None:
    """Under ``allowManagedPermissionRulesOnly``, drop what a lower source's ``sandbox`` section
    would widen: the network allow-list and unmasking (its masks and network denies stay)."""
    network = loaded.sandbox.get("network") if loaded.sandbox else None
    dropped = [f"sandbox.{key}" for key in _SANDBOX_UNMASKING if loaded.sandbox.get(key)]
    sandbox = {k: v for k, v in loaded.sandbox.items() if k not in _SANDBOX_UNMASKING}
    if isinstance(network, dict) and network.get("allowedDomains"):
        dropped.append("sandbox.network.allowedDomains")
        sandbox["network"] = {k: v for k, v in network.items() if k != "allowedDomains"}
    if dropped:
        loaded.sandbox = sandbox
        diagnostics.append(
            f"{loaded.path}: {', '.join(dropped)} ignored: {_MANAGED_ONLY} lets only managed settings widen the sandbox"
        )


def as_sessions_read(loaded: FileSettings) -> FileSettings:
    """``loaded`` cut to what sessions obey of it: the workspace's own ``.mcp.json`` its servers only.

    One predicate for sessions and for what ``shellrt trust add`` shows the operator: the display
    judged by the name's ending, so a ``conf/team.mcp.json`` (or ``.mcp.json``) given with
    ``--settings``, obeyed in full, had its allow rules and mode left out (red team round 56)."""
    if loaded.path.name == MCP_JSON and loaded.source == "project":
        _only_mcp_servers(loaded)
    return loaded


def _only_mcp_servers(loaded: FileSettings) -> None:
    """``.mcp.json`` configures MCP servers only (as in Claude Code). Its ``sandbox`` section too was
    obeyed: once trusted, ``allowedDomains`` and ``unmaskDefaults`` there opened the network and the
    operator's secrets from a file people read as a server list (red team round 33)."""
    loaded.rules, loaded.hooks, loaded.default_mode = [], [], None
    loaded.additional_directories, loaded.web_fetch, loaded.sandbox = [], {}, {}
    loaded.disable_bypass = False
    loaded.diagnostics = [d for d in loaded.diagnostics if "unknown key" not in d]


def _home() -> Path:
    return caller_home()  # the sandbox masks' home too (round 42)


def _assume_managed_restrictions(managed: FileSettings, diagnostics: list[str]) -> None:
    """A managed file that exists but could not be read may have said "managed rules only" and
    "no bypass mode": both only narrow, so they are assumed (red team, round 14) rather than
    silently dropped, which would let every lower source widen as if there were no administrator.
    (``allowManagedHooksOnly`` is not assumed: it would also silence the user's guard hooks.)"""
    managed.managed_rules_only = True
    managed.disable_bypass = True
    diagnostics.append(
        f"{managed.path}: the managed settings could not be read, so their restrictions are assumed: "
        "only managed settings may allow, add directories or open the sandbox, and bypassPermissions "
        "is disabled; ask your administrator to fix the file"
    )
