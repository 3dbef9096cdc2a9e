"""Keep the directories that hold the session's /tmp and state dir out of the sandbox's reach.

A bwrap session keeps its /tmp (``<temp>/shellrt-bwrap-tmp-XXXX/tmp``) and its state dir
(``<temp>/shellrt-bwrap-XXXX``) under the host's temp dir, and every start binds them *by
path*. With the temp dir inside a writable root (``TMPDIR`` under the workspace), the root's
bind showed both holders writable: a command renamed the session's /tmp away and put a symlink
to any host directory there, and the next start bound that directory as the writable /tmp (the
file tools reached it through the same path); it could also plant directories in the temp dir
that later starts sweep and read (red team, round 11). So, after the roots' binds:

* the temp dir strictly inside a writable root is hidden again (an empty tmpfs; the state dir
  and /tmp are bound after it, as before);
* a holder of the session's /tmp that a root still shows is bound read-only onto itself, so
  its entry cannot be renamed or replaced (the state dir is a mount point already: EBUSY).

The temp dir (or /tmp) that *is* a writable root cannot be hidden: it is the root. It holds
every other live session's private /tmp, state dir and proxy socket (``/tmp/shellrt-proxy-*``),
and a root caller's idmapped root shows root's 0700 holders as the sandbox uid's own (a non-root
caller's sessions share one uid anyway): a command read and wrote another session's scratch
(red team, round 16). `shared_scratch_root` names such a root; the backend refuses it.

Nothing is added when the temp dir lies outside every writable root (the usual case): the
start costs what it did.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["exposed_temp_dir", "shared_scratch_root", "temp_holder_args"]


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def exposed_temp_dir(roots: Sequence[Path]) -> str | None:
    """The host's temp dir (real path) when it lies strictly inside a writable root, else None."""
    temp = os.path.realpath(tempfile.gettempdir())
    for root in roots:
        for form in {os.path.normpath(str(root)), os.path.realpath(root)}:
            if temp != form and _within(temp, form):
                return temp
    return None


def shared_scratch_root(roots: Sequence[Path]) -> str | None:
    """The first root that shows the host's temp dir or /tmp themselves -- where every session keeps
    its private scratch -- as the root or below it; None when every root is clear of both.

    A temp dir strictly inside a root is hidden by `temp_holder_args`, so that case is clear
    unless the root also shows /tmp (the proxies' place whatever ``TMPDIR`` says): the root is
    then /tmp itself or the file system's root."""
    temp = os.path.realpath(tempfile.gettempdir())
    scratch = {temp, os.path.realpath("/tmp")}
    for root in roots:
        for form in {os.path.normpath(str(root)), os.path.realpath(root)}:
            if form in scratch:
                return form
            if any(_within(place, form) and place != temp and not _within(place, temp) for place in scratch):
                return form
    return None


def temp_holder_args(
    roots: Sequence[Path], tmp: Path | None, reachable: Callable[[str], bool] = lambda _p: True
) -> list[str]:
    """bwrap flags, placed after the writable roots' binds and before the state dir's and /tmp's
    use, keeping the temp dir's holders unwritable (see the module docstring). ``tmp``: the
    session's /tmp on the host (None: a fresh tmpfs, nothing held). ``reachable``: whether
    bwrap can bind the holder (run as the sandbox uid it may not: then neither can commands
    reach it to swap anything)."""
    hidden = exposed_temp_dir(roots)
    if hidden is not None:
        return ["--tmpfs", hidden]
    if tmp is None:
        return []
    holder = os.path.realpath(tmp.parent)
    for root in roots:
        if any(_within(holder, form) for form in {os.path.normpath(str(root)), os.path.realpath(root)}):
            return ["--ro-bind", holder, holder] if reachable(holder) else []
    return []
