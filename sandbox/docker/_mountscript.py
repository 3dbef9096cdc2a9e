"""The ctypes prelude of the host's mount children (`_nsmount`, `_procmask`): one copy (round 41).

Both run a short-lived single-threaded interpreter (`_detach.run_child`) that clones trees with
``open_tree``, makes them read-only with ``mount_setattr``, joins a container's mount namespace by
pidfd and attaches with ``move_mount``. The syscall numbers and flags lived twice; a fix to one
copy (a flag, an error path) could miss the other.
"""

from __future__ import annotations

__all__ = ["mount_script"]

_PRELUDE = """
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def fail(what):
    sys.exit(what + ": " + os.strerror(ctypes.get_errno()))
RO = struct.pack("QQQQ", 1 | 2 | 4 | 8, 0, 0, 0)  # RDONLY NOSUID NODEV NOEXEC
RO_EXEC = struct.pack("QQQQ", 1 | 2 | 4, 8, 0, 0)  # RDONLY NOSUID NODEV, clear NOEXEC (helpers run from it)
def clone(path, read_only=True, where=-100, exec_ok=False):
    tree = libc.syscall(428, where, path.encode(), 1 | 0o2000000)  # open_tree CLONE|CLOEXEC
    if tree < 0:
        fail("open_tree " + path)
    attr = RO_EXEC if exec_ok else RO
    if read_only and libc.syscall(442, tree, b"", 0x1000, attr, len(attr)) != 0:  # mount_setattr EMPTY_PATH
        fail("mount_setattr " + path)
    return tree
def join(pidfd):
    if libc.setns(pidfd, 0x00020000) != 0:  # CLONE_NEWNS, by pidfd: the process, never a reused pid
        fail("setns")
def attach(tree, target):
    if libc.syscall(429, tree, b"", -100, target.encode(), 4) != 0:  # move_mount F_EMPTY_PATH
        fail("move_mount " + target)
"""


def mount_script(body: str) -> str:
    """``body`` after the prelude: ``libc``, ``fail(what)``, ``clone(path, read_only=True,
    exec_ok=False)`` (a detached copy of the tree at ``path``; read-only means no exec unless asked), ``join(pidfd)`` (its mount namespace) and
    ``attach(tree, target)``."""
    return _PRELUDE + body
