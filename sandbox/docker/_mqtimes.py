"""A recycled container's ``/dev/mqueue`` times: the reset's, not the last task's (round 45).

Every writable place a command reaches is renewed at a reset (the tmpfs mounts: `_freshtmp`; the
I/O directory: `_freshio`; the workspace is emptied by the host) but ``/dev/mqueue``: an IPC
namespace has one mqueue file system, which cannot be mounted anew. The reset empties it, and a
task that made and removed its queues itself left nothing to remove, so the root's modification
and change times stayed those of the task's last ``mq_open`` or ``mq_unlink``, a moment the task
chose (the file system keeps whole seconds): the next task read it with ``stat /dev/mqueue``
against the reset's own time (the renewed ``/tmp``), a few bits a reset. The host now sets the
root's access and modification times to the reset's moment, which moves its change time there
too; the directory is opened through the executor's ``/proc`` directory (`PidRef.proc_dir`) and
must be the container's mqueue mount (its device, from the same process's ``mountinfo``).
"""

from __future__ import annotations

import os
import time

from sandbox.docker._pidref import PidRef
from sandbox.docker._reset import ResetError, parse_mountinfo

__all__ = ["restamp_mqueue"]

_MQUEUE = "/dev/mqueue"


def restamp_mqueue(ref: PidRef) -> None:
    """Set the container's ``/dev/mqueue`` root times to now (`ResetError` if it cannot be proven
    to be that mount). No mqueue mount: nothing to do."""
    with ref.proc_dir() as base:
        with open(f"{base}/mountinfo", encoding="utf-8", errors="replace") as fh:
            lines = [line for line in fh.read().splitlines() if line.split(" ")[4:5] == [_MQUEUE]]
        if not lines:
            return
        top = lines[-1]  # the last mount at a place is the one on top
        if parse_mountinfo(top)[0].fstype != "mqueue":
            raise ResetError(f"{_MQUEUE} is not the container's mqueue mount on top")
        major, _, minor = top.split(" ")[2].partition(":")
        fd = os.open(f"{base}/root{_MQUEUE}", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            if os.fstat(fd).st_dev != os.makedev(int(major), int(minor)):
                raise ResetError(f"{_MQUEUE} as opened is not the container's mqueue mount")
            now = time.time_ns()
            os.utime(fd, ns=(now, now))
        finally:
            os.close(fd)
