"""Bind mode on a root host: the workspace mount, idmapped to the session's leased uid.

Bind mode used to run commands as the workspace's owner, so a root-owned
workspace meant uid 0 in a container sharing the host's user namespace: no
capabilities, but host root's uid all the same (signals to docker-init, root's
``/tmp``, ``/dev/shm`` and image files, and host root's kernel per-user counts:
inotify instances, message-queue bytes). Now commands run as the session's
leased uid (`sandbox._uid_lease`) and the host replaces the container's
workspace mount with an *idmapped* copy of it whose map says "the owner is the
leased uid", as bwrap does (`sandbox._idmap`): the owner's files appear as the
command's, what it creates lands on disk as the owner's, nothing changes hands.
Files of other host uids appear as the overflow uid (their "other" bits only).

The copy is made inside the container's mount namespace before the session
takes its first command: a short-lived child joins it (a multi-threaded
process cannot), clones the mount tree at the workspace (masks and pins
included, ``AT_RECURSIVE``), sets the map and mounts the clone over the
original. The host then checks from outside that the workspace's owner reads
as the leased uid there (fail closed).
"""

from __future__ import annotations

import os
import subprocess
import sys

from sandbox._idmap import IdmapError, userns_fd
from sandbox.docker._pidref import PidRef
from sandbox.errors import BackendUnavailableError

__all__ = ["idmap_workspace"]

_CHILD = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
class Attr(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in ("set", "clr", "propagation", "userns_fd")]
def check(ret, what):
    if ret < 0:
        sys.exit(what + ": " + os.strerror(ctypes.get_errno()))
    return ret
mnt, ns, target = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].encode()  # mnt: a pidfd (`_pidref`)
check(libc.setns(mnt, 0x00020000), "setns")  # CLONE_NEWNS: root and cwd become the container's
# open_tree(AT_FDCWD, target, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE)
tree = check(libc.syscall(428, -100, target, 1 | 0o2000000 | 0x8000), "open_tree")
attr = Attr(0x00100000, 0, 0, ns)  # MOUNT_ATTR_IDMAP
# mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, size)
check(libc.syscall(442, tree, b"", 0x1000 | 0x8000, ctypes.byref(attr), ctypes.sizeof(attr)), "mount_setattr")
# move_mount(tree, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH)
check(libc.syscall(429, tree, b"", -100, target, 0x00000004), "move_mount")
"""

_ADVICE = (
    "set DockerConfig.user to the 'uid:gid' commands should run as (the workspace's owner to keep "
    "the old behaviour), or use workspace_mode 'copy'"
)


def idmap_workspace(ref: PidRef, target: str, owner: tuple[int, int], ids: tuple[int, int]) -> None:
    """Mount ``target`` in the mount namespace of ``ref``'s process over itself, ``owner`` mapped to ``ids``."""
    pid = ref.alive()
    try:
        ns = userns_fd(owner[0], owner[1], ids[0], ids[1])
    except (IdmapError, OSError) as exc:
        raise BackendUnavailableError(f"cannot idmap the bind-mounted workspace ({exc}); {_ADVICE}") from exc
    try:
        proc = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _CHILD, str(ref.pidfd), str(ns), target],
            capture_output=True,
            text=True,
            timeout=30,
            pass_fds=(ns, ref.pidfd),
            cwd="/",  # not the caller's (a workspace): relative LD_PRELOAD entries resolve there (round 49)
        )
    finally:
        os.close(ns)
    if proc.returncode != 0:
        raise BackendUnavailableError(
            f"cannot idmap the bind-mounted workspace {target} (its file system, or one masked below it, "
            f"may not support idmapped mounts): {proc.stderr.strip()[-300:]}; {_ADVICE}"
        )
    seen = os.stat(f"/proc/{pid}/root{target}")
    ref.alive()
    if (seen.st_uid, seen.st_gid) != ids:
        raise BackendUnavailableError(
            f"the workspace {target} reads as {seen.st_uid}:{seen.st_gid} in the container after idmapping, "
            f"not the session's {ids[0]}:{ids[1]}; {_ADVICE}"
        )
