"""A command is the first process the kernel's OOM killer picks, never its caller's equal.

A process inherits ``oom_score_adj`` (and its floor, ``oom_score_adj_min``) from its parent, so
every bwrap command ran at its caller's score: 0 (the host's own processes' score) for an ordinary
caller, below it for one started by a unit with ``OOMScoreAdjust=``. Under host-wide memory
pressure (a non-root caller on cgroup v1 has no memory cgroup at all) a hostile command's memory
then weighed no more than a host service's, or less (red team round 36, bwrap2). Every start
from the host (zygote, spawner, each per-command bwrap) therefore runs under `oom_prefix`, and
the zygote's processes raise their own score again (`sandbox._zygote_main.calm_scheduling`).

Raising a score needs no privilege. Where the process that raises it holds ``CAP_SYS_RESOURCE`` in
the host's user namespace (an ordinary root caller) the kernel also raises the floor, so no
command can lower its score again; otherwise a command may lower its own down to its caller's
floor (0 for an ordinary caller), never below.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["OOM_SCORE_ADJ", "oom_prefix"]

#: What every sandbox process runs at: the kernel's maximum, as Kubernetes gives a best-effort pod.
#: Among the sandbox's own processes (and in a session's memory cgroup) the largest still goes first.
OOM_SCORE_ADJ = 1000


def _own_score() -> int:
    """The calling process's ``oom_score_adj``; -1000 (the lowest) where it cannot be read."""
    try:
        return int(Path("/proc/self/oom_score_adj").read_text())
    except (OSError, ValueError):
        return -1000


def oom_prefix() -> list[str]:
    """``choom -n 1000 --`` to put before a process the caller starts (the caller's own score
    stays); empty where the caller already runs at `OOM_SCORE_ADJ`.
    Raises `FileNotFoundError` (with what to do) when ``choom`` is missing."""
    if _own_score() >= OOM_SCORE_ADJ:
        return []
    path = shutil.which("choom", path=os.defpath + ":/usr/sbin:/sbin")
    if path is None:
        raise FileNotFoundError(
            "bwrap needs choom to start a command at the highest OOM score, so the kernel never kills "
            "the host's processes before it (apt-get install util-linux, 2.33 or later)"
        )
    return [path, "-n", str(OOM_SCORE_ADJ), "--"]
