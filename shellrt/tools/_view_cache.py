"""The session's file-tool view, kept while the filesystem it was made from is unchanged.

`shellrt.tools._paths.view_for` builds a `sandbox.confine.View` from the session's policy (a
lexical key, compared by `_paths`) and from the filesystem: the realpath of every root, of the
session directory and of every mask (a mask named through a symlink covers its target), and the
owner of the roots the tools create files for. A command can change those between two calls (a
masked ``secrets`` moved away and replaced by a symlink to it), so a cached view is used again
only when every answer the filesystem gave its realpaths is the same now: `trace` resolves the
same paths the same way, recording each ``lstat`` (missing, a directory or file, or a symlink
and its target); `CachedView.still_valid` asks them again. A realpath is a function of exactly
those answers, so equal answers give equal realpaths; one ``lstat`` per distinct component is
~50x cheaper than building the view.
"""

from __future__ import annotations

import copy
import os
import posixpath
import stat
from dataclasses import dataclass

from sandbox.confine import View

__all__ = ["CachedView", "owner_of", "trace"]

#: What ``lstat`` said of a path: None (it failed: missing, unsearchable), the symlink's target,
#: or (not a symlink) NUL and its file type (``isdir`` of a place depends on it; no target holds a NUL).
Answer = str | None

#: Symlinks followed in one resolution before it stops (the kernel's own bound).
_MAX_LINKS = 40


def _ask(path: str) -> Answer:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISLNK(st.st_mode):
        return f"\0{stat.S_IFMT(st.st_mode)}"
    try:
        return os.readlink(path)
    except OSError:
        return None


def trace(paths: set[str]) -> dict[str, Answer]:
    """Resolve each absolute path as ``os.path.realpath`` does (component by component, a
    symlink's target from the directory it is in, missing components kept lexically) and return
    every ``lstat`` answer that resolution depended on."""
    answers: dict[str, Answer] = {}

    def look(path: str) -> Answer:
        if path not in answers:
            answers[path] = _ask(path)
        return answers[path]

    def resolve(path: str, links: int) -> tuple[str, int]:
        current = "/"
        for name in path.split("/"):
            if name in ("", "."):
                continue
            if name == "..":
                current = posixpath.dirname(current)
                continue
            candidate = posixpath.join(current, name)
            found = look(candidate)
            if found is None or found.startswith("\0"):  # missing or not a symlink: kept as it is
                current = candidate
                continue
            links += 1
            if links > _MAX_LINKS:  # a loop: realpath keeps the rest lexically
                current = candidate
                continue
            current, links = resolve(posixpath.join(current, found), links)
        return current, links

    for path in paths:
        resolve(path, 0)
    return answers


def owner_of(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """Who owns ``path`` (a root's owner: docker's copy belongs to the container's user), or None."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_uid, st.st_gid)


@dataclass(frozen=True)
class CachedView:
    """A built view, the key it was built for, and the filesystem answers it depends on."""

    key: tuple[object, ...]
    view: View
    answers: dict[str, Answer]
    owners: tuple[tuple[str, tuple[int, int]], ...]

    @classmethod
    def of(cls, key: tuple[object, ...], view: View, more: tuple[str, ...] = ()) -> CachedView:
        """Remember ``view``, traced over every path it was made from (its mounts, their
        backing directories, its masks: a superset of the paths its realpaths resolved) and
        ``more`` (other host paths it was worked out from)."""
        paths = {m.path for m in view.mounts} | {m.host for m in view.mounts} | set(view.masked) | set(more)
        paths |= set(getattr(view, "session_forms", ()))
        owners = tuple((m.host, m.owner) for m in view.mounts if m.owner is not None)
        return cls(key, copy.copy(view), trace({p for p in paths if p.startswith("/")}), owners)

    def still_valid(self) -> bool:
        """Whether every symlink answer and root owner is as when the view was built."""
        for path, answer in self.answers.items():
            if _ask(path) != answer:
                return False
        return all(owner_of(host) == owner for host, owner in self.owners)

    def fresh(self) -> View:
        """A copy for one call: its hard-link table (`View.denied_inodes`) is worked out anew,
        since a command may have linked a masked file since."""
        view = copy.copy(self.view)
        view._denied_inodes = None
        return view
