"""Where a container's SysV IPC ids go next: what one task could leave the next to read (round 41).

A recycled container keeps its IPC namespace, and with it the cursor from which the kernel hands
out SysV ids (``idr_alloc_cyclic``): a task that made and removed 50 shared memory segments left
the next task's first ``shmget`` id 51 where it would have been 1, with no object left for the
reset to find. The cursor cannot be rewound, nor read; so the host takes one id of each kind
itself (a host thread joins the namespace by pidfd, creates a private object and removes it) once
before anything of the image runs and again at each reset. Each id must follow the last one the
host took: any other id means the task allocated SysV ids, and that container is not reused (as
round 36 does for a task that moved its network counters). The next task's first ids then count
only the resets of its container, never what a task chose.
"""

from __future__ import annotations

import ctypes
import os

from sandbox.docker._nsthread import in_own_thread
from sandbox.docker._pidref import PidRef

__all__ = ["IpcIds", "ipc_id_problems", "take_ipc_ids"]

#: The id the host took of each kind: ``shm``, ``msg``, ``sem``.
IpcIds = dict[str, int]

_CLONE_NEWIPC = 0x08000000
_IPC_PRIVATE = 0
_IPC_RMID = 0


def _take(libc: ctypes.CDLL) -> IpcIds:
    """One private object of each kind, made and removed at once; their ids."""
    got: IpcIds = {}
    for kind in ("shm", "msg", "sem"):
        if kind == "shm":
            ident = int(libc.shmget(_IPC_PRIVATE, 1, 0o600))
        elif kind == "msg":
            ident = int(libc.msgget(_IPC_PRIVATE, 0o600))
        else:
            ident = int(libc.semget(_IPC_PRIVATE, 1, 0o600))
        if ident < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"{kind}get in the container's IPC namespace: {os.strerror(err)}")
        if kind == "shm":
            removed = int(libc.shmctl(ident, _IPC_RMID, None))
        elif kind == "msg":
            removed = int(libc.msgctl(ident, _IPC_RMID, None))
        else:
            removed = int(libc.semctl(ident, 0, _IPC_RMID))
        if removed != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"removing the {kind} object the host made: {os.strerror(err)}")
        got[kind] = ident
    return got


def take_ipc_ids(ref: PidRef) -> IpcIds:
    """The next id of each kind in the IPC namespace of ``ref``'s process, taken (and its object
    removed) by a host thread that joins it through the pidfd (`OSError` on any failure)."""
    def run() -> IpcIds:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.setns(ref.pidfd, _CLONE_NEWIPC) != 0:  # by pidfd: never a reused pid's namespace
            err = ctypes.get_errno()
            raise OSError(err, f"setns(ipc of pid {ref.pid}): {os.strerror(err)}")
        return _take(libc)

    return in_own_thread(run, name="shellrt-ipc-ids", what="taking SysV ids in the container's IPC namespace")


def ipc_id_problems(before: IpcIds | None, now: IpcIds) -> list[str]:
    """Why ``now`` does not follow ``before`` (empty: no SysV id was allocated in between)."""
    if before is None:
        return ["the IPC namespace's next SysV ids were not recorded before the task"]
    moved = sorted(kind for kind in now if now[kind] != before.get(kind, -2) + 1)
    if not moved:
        return []
    return [
        f"the task allocated SysV IPC ids ({', '.join(moved)}): the next task's ids would count them "
        "(a task that uses SysV IPC gets a fresh container)"
    ]
