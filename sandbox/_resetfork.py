"""A thread that forks commands hands them no priority a command gave it.

`sandbox._bwrap_sched.calm_prefix` reads the event loop's thread, but local commands are forked
by another: the session cgroup's spawner thread (a root caller) or the session's reaper (a
non-root caller). Both run as the caller, with the caller's ``RLIMIT_RTPRIO``/``RLIMIT_NICE``,
and the kernel checks a request to raise a task's priority against the TARGET's limits: a
command of the same uid could ``chrt -f -p 1`` or renice the forker, and every later command was
forked real-time or below nice 0 (red team round 37, lead). ``SCHED_RESET_ON_FORK`` makes each
child start under SCHED_OTHER at a nice of 0 or more whatever its forker's state; without
``CAP_SYS_NICE`` nobody can clear the flag again (the kernel refuses a policy change that drops it).
"""

from __future__ import annotations

import os

__all__ = ["reset_on_fork"]


def reset_on_fork() -> bool:
    """Set ``SCHED_RESET_ON_FORK`` on the calling thread, keeping its policy and priority.
    False where the kernel refuses (the caller's calm_prefix still covers its own state)."""
    policy = os.sched_getscheduler(0)
    if policy & os.SCHED_RESET_ON_FORK:
        return True
    try:
        os.sched_setscheduler(0, policy | os.SCHED_RESET_ON_FORK, os.sched_getparam(0))
    except OSError:
        return False
    return True
