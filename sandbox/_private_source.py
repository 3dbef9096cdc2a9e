"""Whether a host directory holds anything a stranger to its owners could not read.

A root host copies a batch task's (or an Inspect sample's) workspace source with root's
reading rights and hands the copy to the sandbox user. When the source is named by data the
operator did not write (a task file, a dataset's sandbox config), that copy is a way to read
files no sandbox user could read on the host: ``"workspace": "/root"``, another user's home,
``/var/lib/...`` (red team round 15). `first_private` finds the first such entry, so the
caller can refuse the source before anything is copied.

"A stranger" was judged by the mode's *other* bits, which every uid that is neither the owner
nor in the group gets (a leased sandbox uid is never either); but an operator's fixed sandbox uid
may be one the host names: an ACL ``u:U:---`` over a world-readable file, or a 0604 file whose
group is U's, closes it to U alone, and the copy handed U what the host denies it (red team round
48). Now every uid but root must have the bits (`sandbox._reach.every_user_has`: the owner, the
owning group, each user and group an ACL names, and a stranger): directories need ``r`` and ``x``,
regular files ``r``, and every ancestor of the source ``x`` (it must be reachable).
Symlinks are not followed (a copy keeps them as links); FIFOs, sockets and devices are left
out of every copy, so they are not judged. Blocking; no recursion (the tree may be deep).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from sandbox._reach import acl_of, every_user_has

__all__ = ["SourceChanged", "first_private", "opened_as"]

_DIR_NEEDS = stat.S_IROTH | stat.S_IXOTH


def every_user_reads(path: str | os.PathLike[str] | int, st: os.stat_result, needs: int) -> bool:
    """Whether every uid but root has ``needs`` ("others"-placed) on ``path`` (a path, read
    without following a last link, or an open descriptor), stat'ed as ``st``; its ACL included.
    A class of the mode without them (owner, group or its ACL mask, other) answers at once; else
    the ACL is read, uncached (a walk meets each inode once: caching cost ~2x here)."""
    if needs * 0o111 & ~st.st_mode:
        return False
    return every_user_has(st, acl_of(path, follow=False), needs)


class SourceChanged(ValueError):
    """Raised by `opened_as` when ``real`` did not open as itself: a link swapped in on its way."""


def opened_as(real: str) -> tuple[int, int]:
    """The (device, inode) of the directory the real path ``real`` opens: what a caller judges
    with `first_private` and then copies must be one directory (`copy_tree`'s ``identity``); read
    before and after the judgement, a path swapped in between (a link, a directory on the way)
    was copied in place of what was judged (red team round 38). `SourceChanged` when the kernel's
    path of what it opened is not ``real`` (the open went through a link); OSError when nothing
    opens as a directory there."""
    fd = os.open(real, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        if os.readlink(f"/proc/self/fd/{fd}") != real:
            raise SourceChanged(
                f"{real} changed while it was judged (a link or directory on its way was swapped)"
            )
        st = os.fstat(fd)
        return st.st_dev, st.st_ino
    finally:
        os.close(fd)


def first_private(
    source: str | os.PathLike[str],
    *,
    reached_from: str | os.PathLike[str] | None = None,
    leave_out: Iterable[str | os.PathLike[str]] = (),
    limit: int = 1_000_000,
) -> str | None:
    """The first path at, above or below ``source`` a stranger could not read or reach, else None.

    ``source`` is resolved first (its real path is what a copy reads). ``reached_from``: a
    directory whose own place the operator chose (a task file's); it and its ancestors are not
    judged when the source lies inside it (what lies below it is). ``leave_out``: paths the copy leaves out (the
    run's own files), not judged. Past ``limit`` entries the walk stops and the
    source counts as private (fail closed: too big to judge)."""
    real = Path(os.path.realpath(source))
    skipped = {os.path.realpath(p) for p in leave_out}
    top = Path(os.path.realpath(reached_from)) if reached_from is not None else None
    inside = top is not None and (real == top or top in real.parents)
    for ancestor in reversed(real.parents):
        if inside and top is not None and (ancestor == top or ancestor in top.parents):
            continue
        try:
            st = os.stat(ancestor)
        except OSError:
            return str(ancestor)
        if not every_user_reads(ancestor, st, stat.S_IXOTH):  # (an ancestor is no link: realpath)
            return str(ancestor)
    stack = [str(real)]
    seen = 0
    while stack:
        here = stack.pop()
        try:
            st = os.lstat(here)
        except OSError:
            return here
        if not stat.S_ISDIR(st.st_mode):
            return None  # not a directory: the copy refuses it with its own error
        if not (inside and here == str(top)) and not every_user_reads(here, st, _DIR_NEEDS):
            return here  # (the chosen directory itself is the operator's: not judged)
        try:
            with os.scandir(here) as entries:
                for entry in entries:
                    seen += 1
                    if seen > limit:
                        return f"{here} (more than {limit} entries: not judged)"
                    if entry.path in skipped:
                        continue
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        return entry.path
                    if stat.S_ISDIR(info.st_mode):
                        stack.append(entry.path)
                    elif stat.S_ISREG(info.st_mode) and not every_user_reads(entry.path, info, stat.S_IROTH):
                        return entry.path
        except OSError:
            return here
    return None
