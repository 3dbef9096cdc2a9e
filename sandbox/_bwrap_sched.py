"""A command's scheduling is the sandbox's own, never its caller's.

A process inherits its parent's scheduling policy, nice and the two rlimits that let an
unprivileged process raise its own priority (``RLIMIT_RTPRIO``, ``RLIMIT_NICE``). shellrt run
under a real-time policy (``chrt -r``, a unit's ``CPUSchedulingPolicy=``) or at a negative nice
(a harness keeping its supervision responsive under load) gave every command the same: a
real-time busy loop takes up to 95% of a CPU from every ordinary process of the host and no
cgroup CPU limit (CFS quota) counts it; a negative nice outweighs the host's processes (red team
round 36). Every bwrap sandbox therefore starts under SCHED_OTHER (BATCH and IDLE, which only
lower a priority, are kept), at a nice of 0 or more (a positive one is kept), with both rlimits
0:0, so no command can raise either again. The zygote, its holder and its root spawner do this to
themselves (`sandbox._zygote_main`); one bwrap per command through ``prlimit`` starts under
`calm_prefix` and `RLIMIT_FLAGS`.
"""

from __future__ import annotations

import os
import shutil

__all__ = ["CALM_POLICIES", "RLIMIT_FLAGS", "calm_prefix"]

#: Policies a command may inherit: none of them runs before an ordinary process.
CALM_POLICIES = (os.SCHED_OTHER, os.SCHED_BATCH, os.SCHED_IDLE)
#: ``prlimit`` flags: neither limit lets a command raise its priority (0: no real-time priority,
#: no nice below 0 -- what an unprivileged process gets by default).
RLIMIT_FLAGS = ("--nice=0:0", "--rtprio=0:0")


def _program(name: str) -> str:
    path = shutil.which(name, path=os.defpath + ":/usr/sbin:/sbin")
    if path is None:
        raise FileNotFoundError(
            f"bwrap needs {name} to start a command without its caller's scheduling priority "
            "(apt-get install util-linux coreutils), or run shellrt under SCHED_OTHER at nice 0"
        )
    return path


def calm_prefix() -> list[str]:
    """Programs to put before a process the calling thread starts, so that it starts under a
    `CALM_POLICIES` policy at a nice of 0 or more: ``chrt --other 0`` for a real-time or deadline
    caller, ``nice -n N`` for one at nice -N. Empty (no exec) for an ordinary caller.
    Raises `FileNotFoundError` (with what to do) when one is needed and missing."""
    prefix: list[str] = []
    if os.sched_getscheduler(0) not in CALM_POLICIES:
        prefix += [_program("chrt"), "--other", "0"]
    nice = os.getpriority(os.PRIO_PROCESS, 0)
    if nice < 0:
        prefix += [_program("nice"), "-n", str(-nice)]
    return prefix
