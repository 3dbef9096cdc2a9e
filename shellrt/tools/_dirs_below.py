"""Directories below an anchored root, each opened once while sorted paths are walked.

Why: Glob and Grep check the paths a repository's git index names (`shellrt.tools._tracked`,
`shellrt.tools._gitignore.rules_along`). Opening each path's directories from the root again cost
its depth per path, and joining each prefix its length per level: 2,000 names 1,000 levels deep
(a 1.2 MB index a repository plants) held Grep 24 s, a 64 MB one for many minutes (red team round
36, review3). Paths sharing a directory are neighbours once sorted, so a stack of open directories
opens each directory once; a budget bounds what distinct directories cost.
"""

from __future__ import annotations

import os
from collections.abc import Callable

__all__ = ["DirsBelow", "plain_relative"]

_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def plain_relative(path: str) -> bool:
    """Whether ``path`` is relative with no empty, ``.`` or ``..`` component (string operations only)."""
    framed = f"/{path}/"
    return bool(path) and "//" not in framed and "/./" not in framed and "/../" not in framed


class DirsBelow:
    """A stack of directories open below ``root_fd`` (not owned), each reached without following a
    symbolic link; at most ``budget`` directories are opened in all (then `spent` is True)."""

    def __init__(self, root_fd: int, budget: int) -> None:
        self._root = root_fd
        self._names: list[str] = []
        self._fds: list[int] = []
        self._budget = budget
        self.spent = False

    def enter(self, parts: list[str], opened: Callable[[int, int], None] | None = None) -> int | None:
        """The fd of the directory ``parts`` names below the root, or None: not a directory reached
        without a symlink, or the budget spent. ``opened(depth, fd)`` is called for each directory
        opened now (``parts[:depth]``), before the next level; what it raises goes to the caller."""
        kept = self._common(parts)
        while len(self._fds) > kept:
            os.close(self._fds.pop())
            self._names.pop()
        for part in parts[kept:]:
            if part in ("", ".", ".."):
                return None
            if self._budget <= 0:
                self.spent = True
                return None
            self._budget -= 1
            try:
                fd = os.open(part, _FLAGS, dir_fd=self._fds[-1] if self._fds else self._root)
            except OSError:
                return None
            self._fds.append(fd)
            self._names.append(part)
            if opened is not None:
                opened(len(self._fds), fd)
        return self._fds[-1] if self._fds else self._root

    def _common(self, parts: list[str]) -> int:
        """How many leading levels of ``parts`` are open (binary search: list comparisons run in C)."""
        lo, hi = 0, min(len(self._names), len(parts))
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._names[:mid] == parts[:mid]:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def close(self) -> None:
        while self._fds:
            os.close(self._fds.pop())
        self._names.clear()
