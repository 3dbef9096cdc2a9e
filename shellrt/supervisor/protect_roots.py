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
from pathlib import Path
from typing import Any

from shellrt.supervisor.protect import CommandGuard, WorkspaceGuard

__all__ = ["RootGuards", "guarded_roots"]


def guarded_roots(backend: Any) -> list[str]:
    """The host directories of the backend's writable roots, workspace first, each real and
    not inside an earlier one (roots with no host view, as docker's ``/tmp``, are left out)."""
    out: list[str] = []
    for root in backend.writable_roots():
        try:
            host = backend.to_host_path(root)
        except Exception:  # a backend without a host view of this root: nothing to guard there
            continue
        if host is None or not os.path.isdir(host):
            continue
        real = os.path.realpath(host)
        if not any(_within(real, kept) for kept in out):
            out.append(real)
    if out and out[0] != os.path.realpath(backend.to_host_path(backend.workspace) or ""):
        return []  # no host view of the workspace itself: the backend guards nothing here
    return out


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


class RootGuards:
    """One `CommandGuard` per writable root, stepped together (the supervisor's side)."""

    def __init__(self, guards: list[CommandGuard]) -> None:
        self.guards = guards

    @classmethod
    def for_backend(cls, backend: Any, session_dir: Path) -> RootGuards | None:
        """Guards over the backend's writable roots (None when the workspace has no host view)."""
        try:
            roots = guarded_roots(backend)
        except Exception:
            roots = []
        if not roots:
            return None
        guards = []
        for index, root in enumerate(roots):
            inner = [r for r in roots if r != root and _within(r, root)]
            guards.append(
                CommandGuard(WorkspaceGuard(Path(root), session_dir, skip=inner, extra_root=index > 0))
            )
        return cls(guards)

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
