"""Hide a read-denied path that does not exist yet, outside the writable roots, for good.

A mask needs its path to exist, and the sandbox shows the host live: a ``Read(...)`` deny
for ``~/.aws/credentials`` while ``~/.aws`` is missing hid nothing, and a command running
when the operator (or a host program) then wrote it could read it until it ended (red team,
rounds 8-10). Outside the writable roots the sandbox only reads, so the nearest existing
ancestor of such a path can be *frozen* without creating anything on the host: an empty
tmpfs over it, holding a read-only bind of each entry it has now (a symlink made again as
one). Every entry shows as before, live below its own name; a name that appears later is not
in the tmpfs, so the missing component, when it appears, is not there either -- nor is any
other new entry of that directory, until a sandbox made after it shows it (the denied path
itself then gets its mask).

Not frozen (what stays as before, see docs/security.md): an ancestor inside a writable root
(the workspace is a live, writable bind; freezing it would hide the operator's and the
command's new files), ``/`` or any directory holding a place the sandbox binds later (a root,
the state dir, ``/tmp``, ``/dev``, ``/proc``), and one with more than `MAX_ENTRIES` entries
(one mount each).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

__all__ = ["MAX_ENTRIES", "frozen_args", "nearest_existing"]

#: Entries of a directory to freeze at most: a bind each, ~1 ms each per bwrap start here.
MAX_ENTRIES = 64


def nearest_existing(path: Path) -> Path | None:
    """The deepest existing directory on the way to ``path`` (which is missing), reached without
    a symlink; None when ``path`` exists or a symlink or non-directory is on the way."""
    for parent in path.parents:
        try:
            st = os.lstat(parent)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode):
            return None
        # Every component above it must be a directory too (a symlink would move the freeze).
        try:
            if os.path.realpath(parent) != str(parent):
                return None
        except (OSError, ValueError):
            return None
        return parent
    return None


def frozen_args(
    missing: Iterable[Path],
    keep: Sequence[Path],
    writable: Sequence[Path],
    reachable: Callable[[Path], bool] = lambda _p: True,
) -> list[str]:
    """bwrap flags freezing the nearest existing ancestor of each ``missing`` path.

    ``keep``: places bound later (roots, state dir, ...): an ancestor holding one is left
    alone. ``writable``: the writable roots: an ancestor inside one is left alone. Placed
    right after the root's bind, before every mask (which then applies on the entries' binds).
    ``reachable``: whether bwrap can bind what a directory holds (run as the sandbox uid, it may
    not cross every directory): one it cannot is left alone (nor can its commands read it).
    """
    points: set[Path] = set()
    for path in missing:
        try:
            os.lstat(path)
            continue  # it exists: its own mask hides it
        except OSError:
            pass
        point = nearest_existing(path)
        if point is None or point == Path("/"):
            continue
        if any(point == w or w in point.parents for w in writable):
            continue  # live and writable: cannot be frozen
        if any(point == k or point in k.parents for k in (*keep, Path("/tmp"), Path("/dev"), Path("/proc"))):
            continue
        if reachable(point):
            points.add(point)
    args: list[str] = []
    for point in sorted(points, key=lambda p: len(p.parts)):  # shallowest first: each over its parent's
        args += _freeze(point)
    return args


def _freeze(point: Path) -> list[str]:
    try:
        with os.scandir(point) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return []
    if len(entries) > MAX_ENTRIES:
        return []
    try:
        mode = stat.S_IMODE(os.stat(point).st_mode)
    except OSError:
        return []
    args = ["--perms", f"{mode:04o}", "--tmpfs", str(point)]
    for entry in entries:
        inner = str(point / entry.name)
        try:
            if entry.is_symlink():
                args += ["--symlink", os.readlink(inner), inner]
            else:
                args += ["--ro-bind-try", inner, inner]  # gone by then: left out
        except OSError:
            return []  # gone meanwhile: nothing frozen rather than a start that fails
    return [*args, "--remount-ro", str(point)]
