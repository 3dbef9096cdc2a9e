"""A writable root inside another: the directories between them cannot be renamed from inside.

A root is bound at its path and a mount point cannot be renamed (EBUSY), but the directories
between an enclosing root and a root inside it (``ws`` and ``ws/a/b``: ``ws/a``) are plain
directories of the enclosing root. A command renamed ``ws/a`` away and put a symlink to any host
directory there; the next bwrap start binds ``ws/a/b`` *by path* -- the symlink's target became a
writable root for every later command, and the file tools, which reach the root by the same path,
read and wrote there too (red team, round 11). Each such directory is bound onto itself (from
the enclosing root's source) right after the roots, and the inner root bound again on top: every
one is a mount point, in every sandbox of the session, from its first start.

Nothing is added without nested roots (the usual case): the start costs what it did.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["nested_root_args"]


def nested_root_args(roots: Sequence[Path], sources: Mapping[Path, Path]) -> list[str]:
    """bwrap flags pinning the directories between each root and the root holding it, then the
    inner root again (its bind was covered). ``sources``: where a root is bound from (a root
    caller's idmapped copies), else the root itself."""
    args: list[str] = []
    pinned: set[Path] = set()
    for inner in roots:
        holders = [r for r in roots if r in inner.parents]
        if not holders:
            continue
        outer = max(holders, key=lambda r: len(r.parts))
        between = [d for d in reversed(inner.parents) if outer in d.parents]
        for directory in between:
            try:
                if not stat.S_ISDIR(os.lstat(directory).st_mode):
                    break  # a symlink or a file on the way: bwrap resolves it as before
            except OSError:
                break
            if directory not in pinned:
                pinned.add(directory)
                source = sources.get(outer, outer) / directory.relative_to(outer)
                args += ["--bind", str(source), str(directory)]
        if between:
            args += ["--bind", str(sources.get(inner, inner)), str(inner)]
    return args
