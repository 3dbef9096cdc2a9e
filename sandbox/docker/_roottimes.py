"""A recycled container's ``/dev/mqueue`` and ``/dev/pts`` times: the reset's, not the last task's
(round 45).

Every writable place a command reaches is renewed at a reset (the tmpfs mounts: `_freshtmp`; the
I/O directory: `_freshio`; the workspace is emptied by the host) but ``/dev/mqueue``: an IPC
namespace has one mqueue file system, which cannot be mounted anew. The reset empties it, and a
task that made and removed its queues itself left nothing to remove, so the root's modification
and change times stayed those of the task's last ``mq_open`` or ``mq_unlink``, a moment the task
chose (the file system keeps whole seconds): the next task read it with ``stat /dev/mqueue``
against the reset's own time (the renewed ``/tmp``), a few bits a reset. The host now sets the
root's access and modification times to the reset's moment, which moves its change time there
too; the directory is opened through the executor's ``/proc`` directory (`PidRef.proc_dir`) and
must be the container's mount of that type on top (its device, from the same process's
``mountinfo``). ``/dev/pts`` likewise (a devpts the host mounts at the start, `_ptys`): a pty
leaves its root's modification time alone, but the first listing after it changed sets its access
time (``relatime``) to a moment the task chose, which later tasks read.
"""

from __future__ import annotations

import os
import time

from sandbox.docker._pidref import PidRef
from sandbox.docker._reset import ResetError, parse_mountinfo

__all__ = ["RESTAMPED", "restamp_roots"]

#: The writable mounts no reset renews, and their file system types.
RESTAMPED = {"/dev/mqueue": "mqueue", "/dev/pts": "devpts"}


def restamp_roots(ref: PidRef) -> None:
    """Set the times of each `RESTAMPED` root of the container to now (`ResetError` if one cannot
    be proven to be that mount). A place with no mount: nothing to do."""
    with ref.proc_dir() as base:
        with open(f"{base}/mountinfo", encoding="utf-8", errors="replace") as fh:
            table = fh.read().splitlines()
        for place, fstype in RESTAMPED.items():
            lines = [line for line in table if line.split(" ")[4:5] == [place]]
            if not lines:
                continue
            top = lines[-1]  # the last mount at a place is the one on top
            if parse_mountinfo(top)[0].fstype != fstype:
                raise ResetError(f"{place} is not the container's {fstype} mount on top")
            major, _, minor = top.split(" ")[2].partition(":")
            fd = os.open(f"{base}/root{place}", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                if os.fstat(fd).st_dev != os.makedev(int(major), int(minor)):
                    raise ResetError(f"{place} as opened is not the container's {fstype} mount")
                now = time.time_ns()
                os.utime(fd, ns=(now, now))
            finally:
                os.close(fd)
