"""Walking trees a sandboxed command (or a hostile repository) shaped, however deep, without recursion.

On Python 3.11 ``os.walk``, ``shutil.copytree`` and ``shutil.rmtree`` recurse once per level: a
chain of a few hundred to a thousand directories raises `RecursionError` out of whatever host
code walks it (a reset, a collection, a copy-in), and what it was removing is left behind (red
team round 11). Removal is `sandbox._scratch.remove_tree` (fd-based); this module walks with an
explicit stack and refuses a copy-in deeper than `MAX_COPY_DEPTH` (``copytree`` itself recurses).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

__all__ = ["MAX_COPY_DEPTH", "WorkspaceTooDeepError", "check_copy_depth", "walk"]

#: Directory levels a workspace copy-in accepts (``copytree`` needs two frames per level; a real
#: repository is rarely 30 deep, ``node_modules`` included).
MAX_COPY_DEPTH = 256


class WorkspaceTooDeepError(ValueError):
    """Raised before a copy-in of a tree deeper than `MAX_COPY_DEPTH`."""


def walk(top: str) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(top)`` top-down, never following a symlink (links are listed with the files),
    with an explicit stack instead of recursion; unreadable directories are skipped."""
    stack = [top]
    while stack:
        here = stack.pop()
        dirs: list[str] = []
        files: list[str] = []
        try:
            with os.scandir(here) as entries:
                for entry in entries:
                    try:
                        is_dir = entry.is_dir(follow_symlinks=False)
                    except OSError:
                        is_dir = False
                    (dirs if is_dir else files).append(entry.name)
        except OSError:
            continue
        yield here, dirs, files
        stack.extend(os.path.join(here, d) for d in reversed(dirs))


def check_copy_depth(top: str, limit: int = MAX_COPY_DEPTH) -> None:
    """Raise `WorkspaceTooDeepError` when a directory below ``top`` is more than ``limit`` levels deep."""
    stack = [(top, 0)]
    while stack:
        here, depth = stack.pop()
        if depth > limit:
            raise WorkspaceTooDeepError(
                f"workspace {top} has directories more than {limit} levels deep (below "
                f"{os.path.relpath(here, top)[:200]!r}...): shellrt copies workspaces at most {limit} levels "
                "deep. Remove or flatten that tree, or give a workspace without it"
            )
        try:
            with os.scandir(here) as entries:
                subdirs = [e.path for e in entries if e.is_dir(follow_symlinks=False)]
        except OSError:
            continue  # the copy itself reports what it cannot read
        stack.extend((d, depth + 1) for d in subdirs)
