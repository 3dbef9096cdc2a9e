"""Path resolution and the file tools' own permission verdicts.

Every file tool resolves the path the model gave (relative to the session's
cwd, ``~`` expanded, symlinks and ``..`` resolved) *before* any permission
decision: a symlink inside the workspace that points outside it is judged by
its target, never by where the link lives.

Tool inputs carry no context, yet ``permission_subject`` (which the rules
engine matches ``Read(...)``/``Edit(...)`` against) must see the resolved path.
`PathInput` therefore remembers the resolution made in ``validate`` in a
private attribute that survives ``backfill``'s copy; the public input is never
mutated.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict, PrivateAttr

from sandbox.base import SandboxBackend
from shellrt.protocol import PermissionResult, PermissionSubject, ToolContext

__all__ = [
    "PathInput",
    "allowed_roots",
    "display_path",
    "file_permission",
    "is_inside",
    "is_read_denied",
    "is_sensitive",
    "resolve_path",
    "rule_denied",
    "subject_for",
]

#: Basenames of shell start-up files: writing one runs code in every future shell.
_SHELL_RC = frozenset(
    {
        ".bashrc",
        ".bash_profile",
        ".bash_login",
        ".bash_logout",
        ".profile",
        ".zshrc",
        ".zprofile",
        ".zshenv",
        ".zlogin",
        ".zlogout",
        ".cshrc",
        ".tcshrc",
        ".kshrc",
        ".inputrc",
        ".gitconfig",
    }
)


class PathInput(BaseModel):
    """Base of inputs with a ``file_path``; remembers the resolved path for governance."""

    model_config = ConfigDict(extra="forbid")

    _resolved: str | None = PrivateAttr(default=None)

    def remember_resolved(self, path: Path) -> None:
        """Record the resolution made with a context (called from ``validate``)."""
        self._resolved = str(path)

    @property
    def resolved(self) -> str | None:
        return self._resolved


def _backend(ctx: ToolContext) -> SandboxBackend | None:
    if not ctx.has_service(SandboxBackend):
        return None
    return ctx.service(SandboxBackend)  # type: ignore[type-abstract]  # looked up by its interface


def _host_view(sandbox_path: str, ctx: ToolContext) -> str:
    """Map a path as the sandbox sees it (``ctx.cwd`` is one) to the host.

    Identity for local/bwrap; docker maps its container workspace. A path with
    no host twin is taken as a host path — it is then governed by where it
    lies on the host (outside the allowed roots: ask).
    """
    backend = _backend(ctx)
    if backend is None:
        return sandbox_path
    mapped = backend.to_host_path(os.path.normpath(sandbox_path))
    return str(mapped) if mapped is not None else sandbox_path


def display_path(host_path: str | Path, ctx: ToolContext) -> str:
    """A host path as the model's other tools (Bash) see it; unchanged when there is no mapping."""
    backend = _backend(ctx)
    if backend is None:
        return str(host_path)
    mapped = backend.to_sandbox_path(Path(host_path))
    return mapped if mapped is not None else str(host_path)


def _absolute(raw: str, ctx: ToolContext) -> str:
    expanded = os.path.expanduser(raw)
    if not os.path.isabs(expanded):
        expanded = os.path.join(ctx.cwd or str(ctx.workspace), expanded)
    return _host_view(expanded, ctx)


def resolve_path(raw: str, ctx: ToolContext) -> Path:
    """Absolute host path for ``raw``: ``~`` expanded, relative to ``ctx.cwd``, symlinks and ``..`` resolved."""
    return Path(os.path.realpath(_absolute(raw, ctx)))


def _literal_path(raw: str, ctx: ToolContext) -> Path:
    """The path as written (normalised, symlinks NOT resolved) — for name-based checks."""
    return Path(os.path.normpath(_absolute(raw, ctx)))


def is_inside(path: Path, root: Path) -> bool:
    """Whether ``path`` is ``root`` or below it (both already resolved)."""
    return path == root or root in path.parents


def allowed_roots(ctx: ToolContext) -> tuple[Path, ...]:
    """Resolved roots the file tools may touch without asking (workspace when none are configured)."""
    roots = ctx.allowed_roots or (ctx.workspace,)
    return tuple(Path(os.path.realpath(r)) for r in roots)


def is_read_denied(path: Path, ctx: ToolContext) -> bool:
    """Whether ``path`` lies under one of the sandbox policy's read-denied paths."""
    return any(is_inside(path, Path(os.path.realpath(d))) for d in ctx.read_denied)


def is_sensitive(path: Path) -> str | None:
    """Why writing ``path`` always needs a person's approval (a safety check), or None."""
    parts = PurePosixPath(path).parts
    name = parts[-1] if parts else ""
    if fnmatch.fnmatchcase(name, ".env*"):
        return "an environment file (.env*) that may hold secrets"
    if name in _SHELL_RC or (name == "config.fish" and "fish" in parts):
        return "a shell start-up file (it runs in every future shell)"
    for i, part in enumerate(parts[:-1]):
        rest = parts[i + 1 :]
        if part == ".ssh":
            return "SSH configuration or keys (.ssh/)"
        if part == ".git" and rest[:1] == ("hooks",):
            return "a git hook (.git/hooks runs code on git commands)"
        if part == ".git" and rest == ("config",):
            return "the git configuration (.git/config can run commands)"
        if (
            part in (".shellrt", ".claude")
            and len(rest) == 1
            and fnmatch.fnmatchcase(rest[0], "settings*.json")
        ):
            return "an agent settings file (it changes permissions)"
    return None


def file_permission(raw: str, ctx: ToolContext, *, write: bool) -> PermissionResult:
    """The file tools' own verdict for ``raw``.

    read-denied -> deny (the sandbox hides it); writes to sensitive paths ->
    ask with ``safety_check`` (no mode may skip it); outside the allowed roots
    -> ask; reads inside -> allow; writes inside -> passthrough (the mode and
    rules decide).
    """
    resolved = resolve_path(raw, ctx)
    if is_read_denied(resolved, ctx):
        return PermissionResult.deny(
            f"{resolved} is in a read-denied location of the sandbox policy; it cannot be read or written. "
            "Work with other files."
        )
    if write:
        reason = is_sensitive(resolved) or is_sensitive(_literal_path(raw, ctx))
        if reason:
            return PermissionResult.ask(f"Writing {resolved} touches {reason}.", safety_check=True)
    roots = allowed_roots(ctx)
    readable = (*roots, Path(os.path.realpath(ctx.session_dir))) if not write else roots
    if not any(is_inside(resolved, r) for r in readable):
        shown = ", ".join(str(r) for r in roots)
        return PermissionResult.ask(f"{resolved} is outside the allowed directories ({shown}).")
    if write:
        return PermissionResult.passthrough("inside the allowed directories")
    return PermissionResult.allow("inside the allowed directories")


def subject_for(tool_input: PathInput, raw: str, *, write: bool) -> PermissionSubject:
    """The permission subject of a single-path call.

    Uses the resolution recorded in ``validate``; an absolute path is resolved
    here; a relative path that was never resolved is marked incomplete (rules
    may then not allow it).
    """
    resolved = tool_input.resolved
    incomplete = False
    if resolved is None:
        expanded = os.path.expanduser(raw)
        if os.path.isabs(expanded):
            resolved = os.path.realpath(expanded)
        else:
            resolved, incomplete = raw, True
    return PermissionSubject(paths=(resolved,), access="write" if write else "read", incomplete=incomplete)


def rule_denied(paths: list[str], ctx: ToolContext, tool_name: str) -> set[str]:
    """Result paths a read-deny rule covers (``Read(./secrets/**)``).

    The rules engine judges a Grep/Glob call by the directory searched; the
    files found below it are checked here, so a deny rule on ``secrets/``
    cannot be sidestepped by searching the workspace root.
    """
    from shellrt.permissions import PermissionGate, RulesGate

    if not ctx.has_service(PermissionGate):
        return set()
    gate = ctx.service(PermissionGate)  # type: ignore[type-abstract]  # looked up by its interface
    if not isinstance(gate, RulesGate):
        return set()
    rules = gate.engine.rules
    if not rules.of_kind("deny"):
        return set()
    return {
        p for p in paths if rules.content_hit("deny", tool_name, PermissionSubject(paths=(p,), access="read"))
    }
