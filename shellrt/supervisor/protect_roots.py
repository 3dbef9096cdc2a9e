"""The protected-files check over every root a command may write, not the workspace alone.

An extra writable root (``additionalDirectories``, `SandboxPolicy.writable_roots`)
is as good a place as the workspace to plant a ``.git/config`` with
``core.fsmonitor``, a git hook, ``.claude/settings.json`` or an ``.envrc`` for the
operator's next git, agent or shell there. Each root gets its own `CommandGuard`
(its own inotify instance, baseline and in-flight record); a root inside another
is left to the outer one's walk, and the outer walk skips a root watched on its
own (the workspace inside an extra root), so no path is judged twice.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shellrt.supervisor.protect import CommandGuard, WorkspaceGuard, WriteDeny

__all__ = ["RootGuards", "guarded_roots", "root_guards"]


def guarded_roots(backend: Any) -> list[str]:
    """The host directories of the backend's writable roots, workspace first (roots with no
    host view, as docker's ``/tmp``, are left out; none at all without the workspace's)."""
    hosts: list[str] = []
    for root in backend.writable_roots():
        try:
            host = backend.to_host_path(root)
        except Exception:  # a backend without a host view of this root: nothing to guard there
            continue
        if host is not None:
            hosts.append(str(host))
    workspace = backend.to_host_path(backend.workspace)
    if workspace is None or not hosts or hosts[0] != str(workspace):
        return []
    return hosts


def root_guards(
    roots: Sequence[str | Path],
    session_dir: Path,
    settings_files: Sequence[Path] = (),
    write_deny: WriteDeny | None = None,
) -> list[WorkspaceGuard]:
    """A `WorkspaceGuard` per root (the workspace first), each real and not inside an earlier
    one; a root that holds another skips it; ``settings_files`` go to the root holding them;
    ``write_deny`` (the session's write-deny globs) to every root."""
    real: list[str] = []
    for index, root in enumerate(roots):
        if not os.path.isdir(root):
            if index == 0:
                return []
            continue
        path = os.path.realpath(root)
        if not any(_within(path, kept) for kept in real):
            real.append(path)
    files = [_walk_name(path) for path in settings_files]
    guards = []
    for index, root in enumerate(real):
        inner = [r for r in real if r != root and _within(r, root)]
        mine = [f for f in files if _within(f, root) and not any(_within(f, r) for r in inner)]
        guards.append(
            WorkspaceGuard(
                Path(root),
                session_dir,
                skip=inner,
                extra_root=index > 0,
                settings_files=mine,
                write_deny=write_deny,
            )
        )
    return guards


def _walk_name(path: Path) -> str:
    """``path`` as the walk spells it: its directory resolved, its own name kept (a symlink
    there is the protected entry itself)."""
    absolute = os.path.abspath(path)
    return os.path.join(os.path.realpath(os.path.dirname(absolute)), os.path.basename(absolute))


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


class RootGuards:
    """One `CommandGuard` per writable root, stepped together (the supervisor's side)."""

    def __init__(self, guards: list[CommandGuard]) -> None:
        self.guards = guards

    @classmethod
    def for_backend(
        cls,
        backend: Any,
        session_dir: Path,
        settings_files: Sequence[Path] = (),
        write_deny: WriteDeny | None = None,
    ) -> RootGuards | None:
        """Guards over the backend's writable roots (None when the workspace has no host view).

        ``settings_files``: the operator's ``--settings`` files; those inside a root are
        protected there like the workspace's own settings (a command may not rewrite what
        the next session obeys). ``write_deny``: a new file a write-deny glob names is reverted."""
        try:
            roots = guarded_roots(backend)
        except Exception:
            roots = []
        guards = root_guards(roots, session_dir, settings_files, write_deny)
        return cls([CommandGuard(guard) for guard in guards]) if guards else None

    async def before(self, busy: bool, *, background: bool = False) -> None:
        for guard in self.guards:
            await guard.before(busy, background=background)

    async def after(self, busy: bool) -> tuple[str, ...]:
        notes: list[str] = []
        for guard in self.guards:
            notes += await guard.after(busy)
        return tuple(notes)

    async def sweep(self, busy: bool) -> None:
        for guard in self.guards:
            await guard.sweep(busy)

    async def final(self) -> tuple[str, ...]:
        notes: list[str] = []
        for guard in self.guards:
            notes += await guard.final()
        return tuple(notes)

    def accept_file(self, path: Path) -> None:
        """Keep ``path`` as it is now, in the root that holds it (the innermost one)."""
        real = os.path.realpath(path)
        holders = [g.guard for g in self.guards if _within(real, os.path.realpath(g.guard.root))]
        if holders:
            max(holders, key=lambda g: len(str(g.root))).accept_file(path)
