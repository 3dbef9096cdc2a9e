"""One settings file: read, validate piece by piece, and report problems with file and line.

Why piece by piece: a team's ``.claude/settings.json`` carries keys we do not
use (``env``, ``model``…) and may carry one bad rule among fifty good ones.
One bad rule is reported and ignored; the rest still apply. A file that
cannot be read or is not JSON at all marks the load ``broken``: the engine
then refuses to allow through rules or bypass mode (it fails closed), since
the unreadable file may have held the deny rule that mattered.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shellrt.permissions.errors import RuleSyntaxError
from shellrt.permissions.json_lines import JsonLocator
from shellrt.permissions.modes import PermissionMode, parse_mode
from shellrt.permissions.rules import PermissionRule, RuleKind, RuleOrigin, parse_rule
from shellrt.permissions.settings_bytes import MAX_SETTINGS_BYTES, read_settings_bytes

__all__ = [
    "GUARD_EVENTS",
    "HOOK_EVENTS",
    "MAX_RULES_PER_FILE",
    "MAX_SETTINGS_BYTES",
    "FileSettings",
    "HookCommandConfig",
    "HookEvent",
    "HookMatcherConfig",
    "HookOnFailure",
    "HookSpec",
    "load_settings_file",
    "read_settings_bytes",
    "settings_digest",
    "settings_root",
]


#: Rules one settings file may hold (each is judged on every call); a file with more is unread.
MAX_RULES_PER_FILE = 4096

HookEvent = Literal["PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest"]
HOOK_EVENTS: tuple[str, ...] = ("PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest")
#: What a hook's failure means (``onFailure``): no answer, or a block of the call it guards.
HookOnFailure = Literal["continue", "block"]

_TOP_LEVEL_KEYS = {
    "$schema",
    "permissions",
    "hooks",
    "mcpServers",
    "webFetch",
    "sandbox",
    "allowManagedPermissionRulesOnly",
    "allowManagedHooksOnly",
    "disableBypassPermissionsMode",
}
_PERMISSION_KEYS = {
    "allow",
    "deny",
    "ask",
    "defaultMode",
    "additionalDirectories",
    "disableBypassPermissionsMode",
}


class HookCommandConfig(BaseModel):
    """``{"type": "command", "command": "...", "timeout": 30, "onFailure": "block"}`` (timeout in
    seconds; ``onFailure`` as in Claude Code: ``"block"`` makes a guard's failure a block)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    type: Literal["command"] = "command"
    command: str = Field(min_length=1)
    timeout: float | None = Field(default=None, gt=0, le=3600)
    #: Checked in `_load_hooks`: an unknown value keeps the hook and blocks (a typo must not drop a guard).
    on_failure: str = Field(default="continue", alias="onFailure")


class HookMatcherConfig(BaseModel):
    """``{"matcher": "Edit|Write", "hooks": [...]}``; an empty or ``*`` matcher matches every tool."""

    model_config = ConfigDict(extra="forbid")

    matcher: str = ""
    hooks: list[HookCommandConfig]


@dataclass(frozen=True)
class HookSpec:
    """One configured command hook, with where it came from."""

    event: HookEvent
    matcher: str
    command: str
    timeout: float | None
    origin: RuleOrigin
    #: ``block``: a PreToolUse or PermissionRequest hook that cannot answer (fails to start, times
    #: out, crashes, prints no valid answer, or its trusted files changed) denies the call.
    on_failure: HookOnFailure = "continue"


@dataclass
class FileSettings:
    """What one settings file contributes."""

    path: Path
    source: str
    exists: bool = False
    broken: bool = False
    #: A PreToolUse or PermissionRequest hook entry of it was dropped as malformed: it may be the
    #: guard that mattered, so the session is degraded when the file's hooks would have run.
    lost_guard: bool = False
    #: Its content (or its ``permissions`` section) could not be read at all, so neither could its
    #: restrictions (``allowManagedPermissionRulesOnly``, ``disableBypassPermissionsMode``): a managed
    #: file so is taken to hold them (`shellrt.permissions.sources`), since they only narrow.
    unread: bool = False
    rules: list[PermissionRule] = field(default_factory=list)
    hooks: list[HookSpec] = field(default_factory=list)
    default_mode: PermissionMode | None = None
    additional_directories: list[Path] = field(default_factory=list)
    mcp_servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The ``webFetch`` section (allowPrivateHosts, allowPorts, upgradeHttp, maxBytes, …), read by the WebFetch tool.
    web_fetch: dict[str, Any] = field(default_factory=dict)
    #: The ``sandbox`` section (maskedPaths, unmaskDefaults, unmaskedPaths), read by shellrt.runtime.sandbox_policy.
    sandbox: dict[str, Any] = field(default_factory=dict)
    disable_bypass: bool = False
    managed_rules_only: bool = False
    managed_hooks_only: bool = False
    diagnostics: list[str] = field(default_factory=list)
    #: `settings_digest` of the bytes this load parsed (None: absent): workspace trust is judged
    #: on exactly these bytes, never on a second read that a swap could change.
    digest: str | None = None


def settings_digest(data: bytes) -> str:
    """``sha256:<hex>`` of a settings file's bytes (what the trust store records)."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def settings_root(path: Path) -> Path:
    """The directory relative path specifiers in ``path`` are anchored at.

    A file inside ``.shellrt/`` or ``.claude/`` governs the directory that
    holds that folder (the project root, or your home for user settings);
    any other file governs its own directory.
    """
    parent = path.parent
    if parent.name in (".shellrt", ".claude"):
        return parent.parent
    return parent


def load_settings_file(
    path: Path, source: str, *, home: Path, root: Path | None = None, inside: Path | None = None
) -> FileSettings:
    """Load one file; a missing file is empty, an unreadable one is ``broken`` (see module doc).
    ``inside``: the workspace a workspace file must not leave through a symlink."""
    out = FileSettings(path=path, source=source)
    try:
        data_bytes = read_settings_bytes(path, inside)
    except FileNotFoundError:
        return out
    except OSError as exc:
        out.exists = out.broken = out.unread = True
        out.digest = "unreadable"
        out.diagnostics.append(
            f"{path}: cannot read settings ({exc.strerror or exc}); allow rules and bypass mode are disabled"
        )
        return out
    out.exists = True
    out.digest = settings_digest(data_bytes)
    try:
        text = data_bytes.decode("utf-8")
    except UnicodeDecodeError as exc:
        out.broken = out.unread = True
        out.diagnostics.append(
            f"{path}: cannot read settings ({exc}); allow rules and bypass mode are disabled"
        )
        return out
    if not text.strip():
        return out
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        out.broken = out.unread = True
        out.diagnostics.append(
            f"{path}:{exc.lineno}: not valid JSON ({exc.msg}); allow rules and bypass mode are disabled until it is fixed"
        )
        return out
    except RecursionError:  # a workspace's file nested thousands deep: Python's parser recurses
        out.broken = out.unread = True
        out.diagnostics.append(
            f"{path}: JSON nested too deeply to read; allow rules and bypass mode are disabled until it is fixed"
        )
        return out
    except ValueError as exc:  # an integer of more than 4300 digits: a ValueError, not a JSONDecodeError
        # A workspace's file so crashed every session's start and `shellrt trust add` (red team round 33).
        out.broken = out.unread = True
        out.diagnostics.append(
            f"{path}: a number Python cannot read ({str(exc).split(';')[0]}); write a shorter number; "
            "allow rules and bypass mode are disabled until it is fixed"
        )
        return out
    if not isinstance(data, dict):
        out.broken = out.unread = True
        out.diagnostics.append(
            f"{path}:1: settings must be a JSON object; allow rules and bypass mode are disabled"
        )
        return out
    locator = JsonLocator(text)
    base = root if root is not None else settings_root(path)
    origin_base = RuleOrigin(source, path, None, base)
    if path.parent.name != ".claude":
        _unknown_keys(out, locator, [key for key in data if key not in _TOP_LEVEL_KEYS], "")
    _load_permissions(data.get("permissions"), out, locator, origin_base, home)
    _load_hooks(data.get("hooks"), out, locator, origin_base)
    servers = data.get("mcpServers")
    if isinstance(servers, dict):
        for name, cfg in servers.items():
            if isinstance(cfg, dict):
                out.mcp_servers[str(name)] = cfg
            else:
                out.diagnostics.append(
                    f"{path}:{locator.key_line(name)}: mcpServers.{name} must be an object; ignored"
                )
    elif servers is not None:
        out.diagnostics.append(
            f"{path}:{locator.key_line('mcpServers')}: mcpServers must be an object; ignored"
        )
    web_fetch = data.get("webFetch")
    if isinstance(web_fetch, dict):
        out.web_fetch = web_fetch
    elif web_fetch is not None:
        out.diagnostics.append(f"{path}:{locator.key_line('webFetch')}: webFetch must be an object; ignored")
    sandbox = data.get("sandbox")
    if isinstance(sandbox, dict):
        out.sandbox = sandbox
    elif sandbox is not None:
        out.diagnostics.append(f"{path}:{locator.key_line('sandbox')}: sandbox must be an object; ignored")
    out.managed_rules_only = _restriction(data, "allowManagedPermissionRulesOnly", True, out, locator)
    out.managed_hooks_only = _restriction(data, "allowManagedHooksOnly", True, out, locator)
    if _restriction(data, "disableBypassPermissionsMode", "disable", out, locator):
        out.disable_bypass = True
    return out


#: Unknown keys of one section named one by one; the rest are counted (a file of 80,000 of them).
_MAX_NAMED_UNKNOWN = 20


def _unknown_keys(out: FileSettings, locator: JsonLocator, keys: list[str], prefix: str) -> None:
    """One diagnostic per unknown key, up to `_MAX_NAMED_UNKNOWN`, then one for the rest."""
    for key in keys[:_MAX_NAMED_UNKNOWN]:
        name = f"{prefix}{key}" if prefix else repr(key)
        out.diagnostics.append(f"{out.path}:{locator.key_line(key)}: unknown key {name} ignored")
    if len(keys) > _MAX_NAMED_UNKNOWN:
        out.diagnostics.append(f"{out.path}: {len(keys) - _MAX_NAMED_UNKNOWN} more unknown keys ignored")


#: What each restricting key is "off" with, besides being absent.
_RESTRICTION_OFF: dict[str, tuple[object, ...]] = {
    "allowManagedPermissionRulesOnly": (False, None),
    "allowManagedHooksOnly": (False, None),
    "disableBypassPermissionsMode": (False, None),
}


def _restriction(section: dict[str, Any], key: str, on: object, out: FileSettings, locator: JsonLocator) -> bool:
    """Whether the restricting ``key`` of ``section`` is on. Only narrowing, so any value but ``on``
    and the plain "off" ones (``"true"``, ``1``, ``"Disable"``, ``true`` for ``"disable"``) is
    taken as on, and said: read as off, an administrator's typo silently allowed bypass mode or
    every source's allow rules (red team round 33)."""
    if key not in section:
        return False
    value = section[key]
    if value == on and type(value) is type(on):
        return True
    if out.source != "managed":  # only the managed file's are obeyed (`shellrt.permissions.sources`)
        return False
    if any(value is off or (value == off and type(value) is type(off)) for off in _RESTRICTION_OFF[key]):
        return False
    out.diagnostics.append(
        f"{out.path}:{locator.key_line(key)}: {key} is {json.dumps(value)}, not {json.dumps(on)}; "
        f"taken as {json.dumps(on)} (it only narrows): write {json.dumps(on)} or remove the key"
    )
    return True


def _load_permissions(
    section: object, out: FileSettings, locator: JsonLocator, origin: RuleOrigin, home: Path
) -> None:
    path = out.path
    if section is None:
        return
    if not isinstance(section, dict):
        out.broken = out.unread = True  # it may have held deny rules
        out.diagnostics.append(
            f"{path}:{locator.key_line('permissions')}: permissions must be an object; allow rules and "
            "bypass mode are disabled until it is fixed"
        )
        return
    _unknown_keys(out, locator, [key for key in section if key not in _PERMISSION_KEYS], "permissions.")
    count = sum(len(v) for v in (section.get(k) for k in ("deny", "ask", "allow")) if isinstance(v, list))
    if count > MAX_RULES_PER_FILE:
        # Every rule is judged on every call, on the event loop: 50,000 deny rules of an untrusted
        # repository cost 0.9 s a call (2.2 s for `a && b | c`). Read as a file too large to read.
        out.broken = out.unread = True
        out.diagnostics.append(
            f"{path}:{locator.key_line('permissions')}: {count} permission rules, more than "
            f"{MAX_RULES_PER_FILE}; none of them read, and allow rules and bypass mode are disabled: "
            "keep fewer, broader rules (Bash(npm run:*), Read(./secrets/**))"
        )
        return
    for kind in ("deny", "ask", "allow"):
        values = section.get(kind)
        if values is None:
            continue
        key_offset = locator.key_offset(kind)
        if not isinstance(values, list):
            if kind != "allow":
                out.broken = True
            out.diagnostics.append(
                f"{path}:{locator.line_at(key_offset)}: permissions.{kind} must be a list; ignored"
                + ("" if kind == "allow" else "; allow rules and bypass mode are disabled until it is fixed")
            )
            continue
        cursor = key_offset
        for value in values:
            at = locator.find_value(value, cursor)
            cursor = at + 1
            line = locator.line_at(at)
            rule_origin = RuleOrigin(origin.source, path, line, origin.root)
            rule, problem, degrades = parse_rule_failing_closed(
                value, kind, rule_origin, f"{path}:{line}: malformed {kind} rule {value!r}"
            )
            if rule is not None:
                out.rules.append(rule)
            if problem is not None:
                out.diagnostics.append(problem)
            out.broken = out.broken or degrades
    if "defaultMode" in section:
        mode = parse_mode(section["defaultMode"])
        if mode is None:
            out.diagnostics.append(
                f"{path}:{locator.key_line('defaultMode')}: unknown defaultMode {section['defaultMode']!r} ignored"
            )
        out.default_mode = mode
    dirs = section.get("additionalDirectories")
    if isinstance(dirs, list):
        for d in dirs:
            if isinstance(d, str) and d.strip() and (where := _expand_dir(d.strip(), origin.root or path.parent, home)):
                out.additional_directories.append(where)
            elif isinstance(d, str) and d.strip():
                out.diagnostics.append(
                    f"{path}:{locator.key_line('additionalDirectories')}: directory {d!r} ignored: no such user "
                    "with a home directory here; write ~/path (your own home) or an absolute path"
                )
            else:
                out.diagnostics.append(
                    f"{path}:{locator.key_line('additionalDirectories')}: bad directory {d!r} ignored"
                )
    elif dirs is not None:
        out.diagnostics.append(f"{path}:{locator.key_line('additionalDirectories')}: must be a list; ignored")
    if _restriction(section, "disableBypassPermissionsMode", "disable", out, locator):
        out.disable_bypass = True


def _load_hooks(section: object, out: FileSettings, locator: JsonLocator, origin: RuleOrigin) -> None:
    path = out.path
    if section is None:
        return
    if not isinstance(section, dict):
        out.diagnostics.append(
            f"{path}:{locator.key_line('hooks')}: hooks must be an object; ignored" + _lose_guard(out, None)
        )
        return
    for event, groups in section.items():
        line = locator.key_line(event)
        if event not in HOOK_EVENTS:
            known = next((e for e in HOOK_EVENTS if e.lower() == str(event).lower()), None)
            hint = f" (event names are case-sensitive: did you mean {known!r}?)" if known else ""
            out.diagnostics.append(
                f"{path}:{line}: hook event {event!r} is not supported here{hint}; ignored"
                + (_lose_guard(out, known) if known else "")
            )
            continue
        if not isinstance(groups, list):
            out.diagnostics.append(
                f"{path}:{line}: hooks.{event} must be a list; ignored" + _lose_guard(out, event)
            )
            continue
        for group in groups:
            try:
                cfg = HookMatcherConfig.model_validate(group)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                out.diagnostics.append(
                    f"{path}:{line}: bad {event} hook ({where}: {first['msg']}); ignored" + _lose_guard(out, event)
                )
                continue
            for hook in cfg.hooks:
                hook_line = locator.line_at(locator.find_value(hook.command, locator.key_offset(event)))
                on_failure: HookOnFailure = "continue" if hook.on_failure == "continue" else "block"
                if hook.on_failure not in ("continue", "block"):
                    out.diagnostics.append(
                        f"{path}:{hook_line}: hook onFailure {hook.on_failure!r} is not 'block' or 'continue'; "
                        "treated as 'block'"
                    )
                out.hooks.append(
                    HookSpec(
                        event=event,  # type: ignore[arg-type]
                        matcher=cfg.matcher,
                        command=hook.command,
                        timeout=hook.timeout,
                        origin=RuleOrigin(origin.source, path, hook_line, origin.root),
                        on_failure=on_failure,
                    )
                )


#: Hook events whose answers decide whether a call runs: losing one of their hooks fails closed.
GUARD_EVENTS = frozenset({"PreToolUse", "PermissionRequest"})


def _lose_guard(out: FileSettings, event: str | None) -> str:
    """Mark ``out`` as having lost a guard hook when ``event`` decides calls (None: it may);
    the diagnostic's tail saying so (red team round 28: a dropped guard entry was only reported)."""
    if event is not None and event not in GUARD_EVENTS:
        return ""
    out.lost_guard = True
    return "; it may be a guard, so allow rules, hook allows and bypass mode are disabled until it is fixed"


def parse_rule_failing_closed(
    value: object, kind: str, origin: RuleOrigin, label: str
) -> tuple[PermissionRule | None, str | None, bool]:
    """``(rule, diagnostic, degrades)`` for one rule of a settings file or a command-line flag.

    A malformed allow rule is only ignored (it could only have widened). A malformed deny or
    ask rule may be the one that mattered: it degrades the session (fail closed). ``label``
    names the rule in the diagnostic.
    """
    try:
        return parse_rule(value, _kind(kind), origin), None, False
    except RuleSyntaxError as exc:
        if kind == "allow":
            return None, f"{label} ignored: {exc}", False
        return None, f"{label} ({exc}); allow rules and bypass mode are disabled until it is fixed", True


def _kind(name: str) -> RuleKind:
    return "deny" if name == "deny" else "ask" if name == "ask" else "allow"


def _expand_dir(value: str, root: Path, home: Path) -> Path | None:
    """An ``additionalDirectories`` entry made absolute; ``~user`` is that user's home, as the shell
    reads it (red team round 47: it was a directory named ``~user`` below ``root``); None: a user
    the password database does not know."""
    if value.startswith("//"):
        expanded = Path(value[1:])
    elif value == "~" or value.startswith("~/"):
        expanded = home / value[2:]
    elif value.startswith("~"):
        import pwd

        name, _, rest = value[1:].partition("/")
        try:
            named = pwd.getpwnam(name).pw_dir
        except (KeyError, ValueError):
            return None
        if not os.path.isabs(named):
            return None
        expanded = Path(named) / rest
    elif os.path.isabs(value):
        expanded = Path(value)
    else:
        expanded = root / value
    return Path(os.path.normpath(expanded))
