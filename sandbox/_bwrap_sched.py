"""A command's scheduling is the sandbox's own, never its caller's.

A process inherits its parent's scheduling policy, nice and the two rlimits that let an
unprivileged process raise its own priority (``RLIMIT_RTPRIO``, ``RLIMIT_NICE``). shellrt run
under a real-time policy (``chrt -r``, a unit's ``CPUSchedulingPolicy=``) or at a negative nice
(a harness keeping its supervision responsive under load) gave every command the same: a
real-time busy loop takes up to 95% of a CPU from every ordinary process of the host and no
cgroup CPU limit (CFS quota) counts it; a negative nice outweighs the host's processes (red team
round 36). The same for the I/O class: a caller under ``ionice -c 1`` (real time, root's) gave
every command requests served before every ordinary process's. Every bwrap sandbox therefore
starts under SCHED_OTHER (BATCH and IDLE, which only lower a priority, are kept), at a nice of 0
or more (a positive one is kept), outside the real-time I/O class (back to "none": from its nice),
with both rlimits 0:0, so no command can raise either again (the real-time I/O class needs
CAP_SYS_ADMIN or CAP_SYS_NICE, which no command holds). The zygote, its holder and its root spawner do this to
themselves (`sandbox._zygote_main`); one bwrap per command through ``prlimit`` starts under
`calm_prefix` and `RLIMIT_FLAGS`. The local backend's commands (fresh starts, warm shells, those
its reaper starts) start under ``calm_prefix(limits=True)`` (review of round 36: they still had
the caller's policy and nice).
"""

from __future__ import annotations

import ctypes
import functools
import os
import resource
import shutil
import threading

__all__ = ["CALM_POLICIES", "IOPRIO_CLASS_RT", "RLIMIT_FLAGS", "calm_prefix", "calm_this_thread", "io_class"]

#: Policies a command may inherit: none of them runs before an ordinary process.
CALM_POLICIES = (os.SCHED_OTHER, os.SCHED_BATCH, os.SCHED_IDLE)
#: ``prlimit`` flags: neither limit lets a command raise its priority (0: no real-time priority,
#: no nice below 0 -- what an unprivileged process gets by default).
RLIMIT_FLAGS = ("--nice=0:0", "--rtprio=0:0")


#: The real-time I/O class: served before every best-effort request of the host's disks.
IOPRIO_CLASS_RT = 1
#: ``ioprio_get`` by machine (``os`` has no wrapper).
_IOPRIO_GET = {"x86_64": 252, "aarch64": 31}
#: ``ioprio_set`` by machine.
_IOPRIO_SET = {"x86_64": 251, "aarch64": 30}
#: This process's machine, read once: `io_class` runs at every local start, and ``os.uname`` is a
#: system call that cannot answer differently later (issue 22 item 2, round 54).
_MACHINE = os.uname().machine
_IOPRIO_WHO_PROCESS = 1


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def io_class() -> int:
    """The calling thread's I/O scheduling class (0 none: from its nice, 1 real time, 2 best
    effort, 3 idle); -1 where it cannot be read (an unknown machine), which counts as real time."""
    number = _IOPRIO_GET.get(_MACHINE)
    if number is None:
        return -1
    value = int(_libc().syscall(number, _IOPRIO_WHO_PROCESS, 0))
    return -1 if value < 0 else value >> 13


def calm_this_thread() -> None:
    """Lower the calling thread to what `calm_prefix` gives a process: a `CALM_POLICIES` policy,
    a nice of 0 or more, outside the real-time I/O class. For host threads a command's traffic
    drives (the filtering proxy's, each lookup's: red team round 36, threads); threads they start
    inherit it. Lowering one's own priority needs no privilege; a few syscalls, once a thread.
    Raises ``OSError`` when the kernel refuses (no known way to lower the I/O class here)."""
    if os.sched_getscheduler(0) not in CALM_POLICIES:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    tid = threading.get_native_id()
    if os.getpriority(os.PRIO_PROCESS, tid) < 0:
        os.setpriority(os.PRIO_PROCESS, tid, 0)
    if io_class() in (IOPRIO_CLASS_RT, -1):
        number = _IOPRIO_SET.get(_MACHINE)
        if number is None or _libc().syscall(number, _IOPRIO_WHO_PROCESS, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "cannot leave the real-time I/O class on this machine")


def _program(name: str) -> str:
    path = shutil.which(name, path=os.defpath + ":/usr/sbin:/sbin")
    if path is None:
        raise FileNotFoundError(
            f"shellrt needs {name} to start a command without its caller's scheduling priority "
            "(apt-get install util-linux coreutils), or run shellrt under SCHED_OTHER at nice 0"
        )
    return path


def calm_prefix(*, limits: bool = False) -> list[str]:
    """Programs to put before a process the calling thread starts, so that it starts under a
    `CALM_POLICIES` policy at a nice of 0 or more and outside the real-time I/O class: ``ionice -c
    0`` for a caller in that class, ``chrt --other 0`` for a real-time or deadline caller, ``nice
    -n N`` for one at nice -N; with ``limits`` (a start that has no ``prlimit`` of its own: the
    local backend), ``prlimit`` `RLIMIT_FLAGS` for a caller whose ``RLIMIT_RTPRIO`` or
    ``RLIMIT_NICE`` is not 0. Empty (no exec) for an ordinary caller.
    Raises `FileNotFoundError` (with what to do) when one is needed and missing."""
    prefix: list[str] = []
    if io_class() in (IOPRIO_CLASS_RT, -1):
        prefix += [_program("ionice"), "-c", "0"]
    if os.sched_getscheduler(0) not in CALM_POLICIES:
        prefix += [_program("chrt"), "--other", "0"]
    nice = os.getpriority(os.PRIO_PROCESS, 0)
    if nice < 0:
        prefix += [_program("nice"), "-n", str(-nice)]
    if limits and any(any(resource.getrlimit(r)) for r in (resource.RLIMIT_RTPRIO, resource.RLIMIT_NICE)):
        prefix += [_program("prlimit"), *RLIMIT_FLAGS, "--"]
    return prefix
