"""Kill a per-command bwrap's own init (pid 1 of the command's pid namespace) from the host.

bwrap's init is dumpable and runs as the command's uid: a command may write its memory through
``/proc/1/mem`` (seccomp stops ``ptrace`` and ``process_vm_writev``, not that file) and make it
call ``prctl(PR_SET_PDEATHSIG, 0)`` and never return, with its environment (the run marker)
overwritten. Killing the outer bwrap then left the namespace, and every process in it, running
(red team, round 12). SIGKILL to a namespace's init from the host cannot be caught or undone,
and ends every process of the namespace: the kill path sends it to the pid bwrap reported.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal


def init_pid(report: bytes) -> int | None:
    """The ``child-pid`` of bwrap's ``--json-status-fd`` report (one JSON object a line)."""
    for line in report.splitlines():
        with contextlib.suppress(ValueError):
            data = json.loads(line)
            if isinstance(data, dict) and isinstance(data.get("child-pid"), int):
                return int(data["child-pid"])
    return None


def peek(fd: int) -> bytes:
    """What is in the status pipe now, without waiting (the caller keeps it for the final report)."""
    if fd < 0:
        return b""
    chunks: list[bytes] = []
    os.set_blocking(fd, False)
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def kill_init(pid: int, parent: int | None) -> bool:
    """SIGKILL ``pid`` when it is still ``parent``'s child (the outer bwrap has not reaped it, so
    the pid is not reused: checked through a pidfd, which pins it); True if sent."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return False  # gone already: its namespace with it
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            ppid = int(stat.read().rsplit(b")", 1)[1].split()[1])
        if parent is not None and ppid != parent:
            return False
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        return True
    except (OSError, ValueError, IndexError):
        return False
    finally:
        os.close(pidfd)
