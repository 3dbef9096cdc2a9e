"""Rewind a recycled container's pid counter: the next task's pids must not tell the last one's forks.

Pids are handed out in order in the container's pid namespace, which a recycled container keeps.
A task that forked N processes moved the next task's first pid by N: a quiet task's successor
started at pid 15, one after 500 forks at 519 (red team round 36, docker2), a number of the
task's choosing read by the next one in ``$$`` or ``/proc/loadavg``. Once the reset has proven
that only docker-init and the executor are left, the host sets the namespace's
``kernel.ns_last_pid`` to a fixed value, so every next task's pids start at the same place.

The sysctl writes the writer's own pid namespace: ``nsenter --pid`` forks a shell into the
container's (host root: it holds ``CAP_SYS_ADMIN`` over the namespace's owner, the host's user
namespace), which writes the host's ``/proc/sys`` (its mount namespace is the host's).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable

__all__ = ["PID_FLOOR", "rewind_pids"]

#: Where every recycled task's pids start (above the container's start-up pids).
PID_FLOOR = 1000

_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


def rewind_pids(host_pid: int, still_the_executor: Callable[[], object]) -> None:
    """Set the pid namespace of ``host_pid`` to hand out `PID_FLOOR` + 1 next (`OSError` on failure).

    The namespace is held open first and ``host_pid`` proven still the executor after that (it
    raises otherwise): entered by a bare pid, a pid the host reused meanwhile would have set the
    HOST's pid counter (round 36 review3).
    """
    nsenter = shutil.which("nsenter", path=_PATH)
    if nsenter is None:
        raise OSError("nsenter (util-linux) is not installed: a recycled container's pids cannot be rewound")
    ns_fd = os.open(f"/proc/{host_pid}/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    try:
        still_the_executor()  # the namespace held is the executor's, not a reused pid's
        try:
            done = subprocess.run(
                [nsenter, f"--pid=/proc/self/fd/{ns_fd}", "--", "/bin/sh", "-c",
                 f"echo {PID_FLOOR} >/proc/sys/kernel/ns_last_pid"],
                capture_output=True,
                timeout=10,
                env={"PATH": _PATH},
                check=False,
                pass_fds=(ns_fd,),
            )  # fmt: skip
        except subprocess.TimeoutExpired as exc:
            raise OSError("rewinding the container's pids timed out") from exc
    finally:
        os.close(ns_fd)
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip()[:200]
        raise OSError(f"rewinding the container's pids failed ({done.returncode}): {said}")
