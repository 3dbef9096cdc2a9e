"""Tracking the working directory across fresh shells.

Every command runs in a new shell, so ``cd`` would be forgotten; the shell
wrapper reports ``pwd -P`` at exit and `CwdTracker.adopt` takes it over — only
when it still exists and lies inside the allowed roots (the writable roots of
the sandbox). Anything else falls back to the workspace root and the result
says so, so the model is never silently somewhere unexpected.
"""

from __future__ import annotations

import os
from pathlib import PurePosixPath

from sandbox import SandboxBackend
from sandbox.confine import contained

__all__ = ["CwdTracker"]


class CwdTracker:
    """The session's current directory, as a sandbox path."""

    def __init__(self, backend: SandboxBackend) -> None:
        self._backend = backend
        #: The backend sees host paths as they are (local, bwrap): a plain stat will do.
        self._host_paths = type(backend).to_host_path is SandboxBackend.to_host_path
        self.workspace = backend.workspace
        self.cwd = self.workspace
        roots: list[PurePosixPath] = []
        for root in backend.writable_roots():
            roots.append(PurePosixPath(root))
            host = backend.to_host_path(root)
            if host is not None:
                real = backend.to_sandbox_path(host.resolve())
                if real is not None:
                    roots.append(PurePosixPath(real))
        self.roots = tuple(dict.fromkeys(roots))

    def inside_roots(self, path: str) -> bool:
        """True when ``path`` (a sandbox path, judged lexically: ``pwd -P`` is already physical) is one
        of the allowed roots or below one."""
        return path.startswith("/") and contained((path,), self.roots, resolve=False)

    def exists(self, path: str) -> bool:
        """Whether ``path`` is a directory (True when the backend has no host view of it)."""
        if self._host_paths:
            return os.path.isdir(path)
        host = self._backend.to_host_path(path)
        return True if host is None else host.is_dir()

    def set(self, path: str) -> None:
        """Adopt ``path`` as the session cwd if it is inside the roots (else keep the current one)."""
        if self.inside_roots(path):
            self.cwd = path

    def start_dir(self, requested: str | None = None) -> tuple[str, str | None]:
        """The directory the next command starts in, and a note when the tracked one vanished.

        ``requested`` (the caller's view of the cwd, e.g. a tool call's context
        snapshot) is used instead of the tracked cwd when it is inside the roots.
        """
        current = self.cwd if requested is None else requested
        # The tracked cwd is inside the roots by construction; only a caller's view needs the check.
        if current != self.cwd and not self.inside_roots(current):
            return self.workspace, (
                f"The requested directory {current} is outside the allowed roots; "
                f"the command runs at the workspace root {self.workspace}."
            )
        if current != self.workspace and not self.exists(current):
            if current == self.cwd:
                self.cwd = self.workspace
            return self.workspace, self._vanished(current)
        return current, None

    def _vanished(self, path: str) -> str:
        return (
            f"The working directory {path} no longer exists; "
            f"the shell is back at the workspace root {self.workspace}."
        )

    def adopt(self, reported: str | None, before: str) -> tuple[bool, str | None]:
        """Take over the cwd a command reported; returns ``(changed, note)``.

        ``reported`` is None when the shell could not tell (``exec``, killed,
        or its directory was deleted under it).
        """
        if reported is None or reported == before:
            if reported is None and not self.exists(before):
                self.cwd = self.workspace
                return before != self.workspace, self._vanished(before)
            return False, None
        if not self.inside_roots(reported):
            self.cwd = self.workspace
            return before != self.workspace, (
                f"The command changed directory to {reported}, outside the allowed roots "
                f"({', '.join(map(str, self.roots))}); the shell stays at the workspace root {self.workspace}."
            )
        if not self.exists(reported):
            self.cwd = self.workspace
            return before != self.workspace, (
                f"The directory {reported} no longer exists; the shell is back at the workspace root {self.workspace}."
            )
        self.cwd = reported
        return True, None
