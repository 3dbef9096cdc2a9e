"""Tracking the working directory across fresh shells.

Every command runs in a new shell, so ``cd`` would be forgotten; the shell
wrapper reports ``pwd -P`` at exit and `CwdTracker.adopt` takes it over — only
when it still exists and lies inside the allowed roots (the writable roots of
the sandbox). Anything else falls back to the workspace root and the result
says so, so the model is never silently somewhere unexpected. That leniency is
for the session's own cwd (the model's ``cd``, a tool call's context snapshot).

An *explicit* cwd from an API caller (`CwdTracker.explicit`) is different: it is
honoured anywhere the sandbox can see (``/usr/bin``, the sandbox's private
``/tmp``), relative paths are taken from the workspace root, and one that cannot
be used raises `WorkingDirectoryError` — never a quiet move elsewhere. What the
host can judge exactly (local; a path inside the writable roots, which the
sandboxes mount at known host paths) is judged here; anything else only the
sandbox can tell (`shellrt.supervisor._cwd_probe`).
"""

from __future__ import annotations

import errno
import os
import posixpath
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from sandbox import SandboxBackend
from shellrt.supervisor.errors import WorkingDirectoryError
from shellrt.supervisor.shells import REPORT_END
from shellrt.supervisor.text import shown_dir

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
        self._enforced = backend.enforces()
        #: The policy's read-denied paths last seen, and their forms as sandbox paths (see `_hidden`).
        self._masks: tuple[tuple[object, ...], tuple[str, ...]] = ((), ())
        #: The sandbox's view is the host's, unfiltered (local): a host stat is the whole truth.
        self._plain_host = self._host_paths and "filesystem" not in self._enforced

    def _hidden(self, path: str) -> bool:
        """Whether sandbox ``path`` is (under) a read-denied path the sandbox masks.

        Read from the policy at each call: a session may add masks (Read deny rules) as it goes.
        """
        if "read_denied" not in self._enforced:
            return False
        denied = tuple(self._backend.policy.read_denied)
        if denied is not self._masks[0] and denied != self._masks[0]:
            self._masks = (denied, _mask_forms(self._backend, denied))
        forms = self._masks[1]
        if not forms or not path.startswith("/"):
            return False
        from sandbox.confine import normalize

        return (normalize(path).rstrip("/") + "/").startswith(forms)  # see `_mask_forms`

    def explicit(self, requested: str) -> tuple[str, bool]:
        """An API caller's cwd as an absolute sandbox path, and whether only the sandbox can judge it.

        Relative paths start at the workspace root. Raises `WorkingDirectoryError`
        when it is known to be unusable (missing, not a directory, read-denied).
        ``True`` (second value): the host cannot see what the sandbox sees there
        (outside the writable roots of bwrap or docker): ask the sandbox.
        """
        if not requested or "\0" in requested:
            raise WorkingDirectoryError(
                f"cwd {requested!r} is not a directory name; pass an absolute path or one relative to "
                f"the workspace root {self.workspace}"
            )
        path = posixpath.normpath(posixpath.join(self.workspace, requested))
        if path.startswith("//"):
            path = "/" + path.lstrip("/")
        if self._hidden(path):
            raise WorkingDirectoryError(
                f"cwd {path} is hidden from commands (a read-denied path); pick another directory"
            )
        if self._plain_host:
            _check_host_dir(path, Path(path))
            return path, False
        host = self._backend.to_host_path(path) if self.inside_roots(path) else None
        if host is None:
            return path, True
        _check_host_dir(path, host)
        # A symlink inside the roots may lead out of them (or into a hidden path): judged there.
        real = self._backend.to_sandbox_path(host.resolve())
        if real is None or not self.inside_roots(real):
            return path, True
        if self._hidden(real):
            raise WorkingDirectoryError(
                f"cwd {path} leads to {real}, which is hidden from commands (a read-denied path); "
                "pick another directory"
            )
        # What the host judged: the sandbox's init enters a cwd without following a link (red team
        # round 25, second wave), so a path named through one inside the roots starts at its target.
        return real, False

    def inside_roots(self, path: str) -> bool:
        """True when ``path`` (a sandbox path, judged lexically: ``pwd -P`` is already physical) is one
        of the allowed roots or below one."""
        return path.startswith("/") and _contained(path, self.roots)

    def exists(self, path: str) -> bool:
        """Whether ``path`` (inside the roots) is a physical directory: reached from the host twin of
        its root one component at a time, never through a symbolic link (True when the backend has
        no host view of it).

        ``pwd -P`` never reports a link, so a report through one is forged; and the host must not
        judge with its own eyes what a link leads to (red team round 13): ``ws/l -> /tmp`` led the
        host's ``isdir`` into the host's /tmp, which the sandbox cannot see -- an oracle on host
        paths, and an adopted cwd no command could start in (every later command failed).
        """
        if not plain_path(path):
            return False  # judged normalised, entered as written: ``ws/link/../b`` (round 36)
        root = self._root_of(path)
        if root is None:
            return os.path.isdir(path) if self._host_paths else True
        host_root = root if self._host_paths else self._backend.to_host_path(root)
        if host_root is None:
            return True
        # Lexically below ``root`` (`_root_of` matched the normalised path): the rest after it, sliced
        # (``posixpath.relpath`` made both absolute again, ~24 us per call with its ``getcwd``).
        normal = posixpath.normpath(path)
        base = root.rstrip("/")
        return _walk_physical(
            os.fspath(host_root), [] if normal == root else normal[len(base) + 1 :].split("/")
        )

    def _root_of(self, path: str) -> str | None:
        """The innermost allowed root holding ``path`` (lexically), or None."""
        if not path.startswith("/"):
            return None
        normal = posixpath.normpath(path)
        best: str | None = None
        for root in map(str, self.roots):
            if (normal == root or normal.startswith(root.rstrip("/") + "/")) and (
                best is None or len(root) > len(best)
            ):
                best = root
        return best

    def set(self, path: str) -> None:
        """Adopt ``path`` as the session cwd if it is inside the roots and not read-denied (else keep
        the current one)."""
        if self.inside_roots(path) and plain_path(path) and not self._hidden(path):
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
                f"The requested directory {_shown(current)} is outside the allowed roots; "
                f"the command runs at the workspace root {self.workspace}."
            )
        if current != self.workspace and not self.exists(current):
            if current == self.cwd:
                self.cwd = self.workspace
            return self.workspace, self._vanished(current)
        if current != self.workspace and self._hidden(current):  # a mask added since, or a caller's view
            if current == self.cwd:
                self.cwd = self.workspace
            return self.workspace, self._masked(current, moved=False)
        return current, None

    def unenterable(self, path: str, why: str) -> str:
        """The sandbox cannot enter ``path``, the session's cwd: back to the workspace root (a note)."""
        if self.cwd == path:
            self.cwd = self.workspace
        return (
            f"The working directory {_shown(path)} cannot be entered in the sandbox ({why}); the shell is back at "
            f"the workspace root {self.workspace}: run the command again there (or `cd` elsewhere first)."
        )

    def _masked(self, path: str, *, moved: bool) -> str:
        """A read-denied directory is never the session's cwd (red team round 25): every later call
        would resolve its relative paths in it and be refused, as an explicit cwd there is."""
        what = "The command changed directory to {}, which is" if moved else "The working directory {} is"
        return (
            f"{what.format(_shown(path))} hidden from commands (a read-denied path); the shell is at the "
            f"workspace root {self.workspace}."
        )

    def _vanished(self, path: str) -> str:
        return (
            f"The working directory {_shown(path)} no longer exists; "
            f"the shell is back at the workspace root {self.workspace}."
        )

    def adopt(self, reported: str | None, before: str) -> tuple[bool, str | None]:
        """Take over the cwd a command reported; returns ``(changed, note)``.

        ``reported`` is None when the shell could not tell (``exec``, killed,
        or its directory was deleted under it). A bash report ends in `REPORT_END`, taken off
        here: the bytes before it are the name whole, a last CR or LF included (round 27).
        """
        if reported is not None and reported.endswith(REPORT_END):
            reported = reported[: -len(REPORT_END)] or None
        if reported is None or reported == before:
            if reported is None and not self.exists(before):
                self.cwd = self.workspace
                return before != self.workspace, self._vanished(before)
            return False, None
        if not plain_path(reported):
            self.cwd = self.workspace
            return before != self.workspace, (
                f"The command reported the working directory {_shown(reported)}, which is not a plain "
                "physical path (`pwd -P` never prints `.`, `..`, doubled or trailing slashes); the shell "
                f"stays at the workspace root {self.workspace}."
            )
        if not self.inside_roots(reported):
            self.cwd = self.workspace
            return before != self.workspace, (
                f"The command changed directory to {_shown(reported)}, outside the allowed roots "
                f"({', '.join(map(str, self.roots))}); the shell stays at the workspace root {self.workspace}."
            )
        if not self.exists(reported):
            self.cwd = self.workspace
            return before != self.workspace, (
                f"The directory {_shown(reported)} no longer exists; the shell is back at the workspace root {self.workspace}."
            )
        if self._hidden(reported):
            self.cwd = self.workspace
            return before != self.workspace, self._masked(reported, moved=True)
        self.cwd = reported
        return True, None


def plain_path(path: str) -> bool:
    """Whether ``path`` is absolute and already normal: no ``.`` or ``..`` component, no doubled or
    trailing slash (``/`` itself is plain), as ``pwd -P`` prints a directory.

    The host judges a path lexically (normalised), the kernel enters it as written, resolving a
    link before the ``..`` after it: ``ws/a/../b`` with ``a -> /elsewhere`` is ``ws/b`` to the
    host's checks and ``/b`` to ``chdir`` (red team round 36). Only a plain path is both.
    """
    return path.startswith("/") and posixpath.normpath(path) == path and not path.startswith("//")


def _shown(path: str) -> str:
    """A directory the sandbox reported, for a note: bash's ``$'...'`` when it is not UTF-8 or holds
    a character a reader cannot see (`shown_dir`)."""
    return shown_dir(path)


def _contained(path: str, roots: Iterable[object]) -> bool:
    """Lexical containment (`sandbox.confine.contained`), loaded only when a cwd is judged:
    a command that stays where it started (``shellrt run -- true``) never needs it."""
    from sandbox.confine import contained

    return contained((path,), roots, resolve=False)


_DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC


def _walk_physical(root: str, parts: list[str]) -> bool:
    """Whether ``parts`` below the directory ``root`` (the operator's: followed) are directories,
    none of them a symbolic link (``O_NOFOLLOW`` at each step; ``O_PATH``: nothing is opened)."""
    try:
        fd = os.open(root, _DIR_FLAGS)
    except (OSError, ValueError):
        return False
    try:
        for part in parts:
            if part in ("", ".", ".."):
                return False
            nxt = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except (OSError, ValueError):  # missing, a file, a link (ELOOP/ENOTDIR), a NUL byte
        return False
    finally:
        os.close(fd)
    return True


def _mask_forms(backend: SandboxBackend, denied: tuple[Path, ...]) -> tuple[str, ...]:
    """The read-denied paths as sandbox paths, lexical and resolved (as `sandbox.confine.contained`
    counts roots), each as a prefix: ~20 us a path to work out (`contained` did it at each call:
    ~0.6 ms for a session's 28 masks), so once per change of the list, not per command."""
    from sandbox.confine import normalize

    forms: list[str] = []
    for path in denied:
        inside = backend.to_sandbox_path(Path(path))
        if inside is None:
            continue
        text = normalize(str(PurePosixPath(inside)))
        real = os.path.realpath(text)
        forms += [text, real] if real != text else [text]
    # Each with one trailing slash ("/" stays "/"): ``normal + "/"`` starts with one of these
    # exactly when ``normal`` is that path or below it.
    return tuple(dict.fromkeys(f.rstrip("/") + "/" for f in forms))


def _check_host_dir(path: str, host: Path) -> None:
    """Raise `WorkingDirectoryError` unless ``host`` (the host twin of sandbox ``path``) can be a cwd."""
    try:
        is_dir = host.is_dir()
        exists = is_dir or os.path.lexists(host)
    except OSError as exc:  # e.g. a path component the caller may not search
        raise WorkingDirectoryError(f"cwd {path} cannot be used: {exc.strerror or exc}") from exc
    if not exists:
        raise WorkingDirectoryError(
            f"cwd {path} does not exist in the sandbox; create it first (e.g. `mkdir -p {path}`) or pass "
            "an existing directory"
        )
    if not is_dir:
        raise WorkingDirectoryError(
            f"cwd {path} is not a directory ({os.strerror(errno.ENOTDIR)}); pass a directory"
        )
    if not os.access(host, os.X_OK):
        raise WorkingDirectoryError(f"cwd {path} cannot be entered ({os.strerror(errno.EACCES)})")
