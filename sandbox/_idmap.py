"""Idmapped mounts: the writable roots as the sandbox's unprivileged uid sees them, for a root caller.

A root caller's commands run under a dedicated uid/gid (the session's own, leased by
`sandbox._uid_lease`, or the fixed `BwrapConfig.sandbox_uid`), not as host root. The workspace stays owned by whoever owns it; the sandbox
sees it through an *idmapped* mount (Linux >= 5.12; ext4, xfs, btrfs, tmpfs,
overlayfs...) whose map says "the root's owner is the sandbox uid": files of
the owner appear owned by the sandbox uid, and what the sandbox uid creates
lands on disk owned by the owner. Nothing on disk changes hands, nothing is
left to restore, and git sees a repository owned by the user it runs as.
Files of any other owner appear as the overflow uid (65534): readable as
their "other" bits allow, never writable as their owner.

bwrap 0.8 cannot make such a mount. The host makes it here, detached
(``open_tree(OPEN_TREE_CLONE)`` + ``mount_setattr(MOUNT_ATTR_IDMAP)``), and
hands the fd to the zygote, which attaches it over the root inside its mount
namespace (``move_mount``); the host's mount table never sees it.

The map comes from a user namespace a short-lived helper enters and whose
``uid_map``/``gid_map`` this (root) process writes: ``<owner> <sandbox uid> 1``
(one per owner and session: its fd is kept).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import subprocess
import sys
from pathlib import Path

__all__ = ["IdmapError", "idmapped_tree", "userns_fd"]

_SYS_OPEN_TREE = 428  # one number on every architecture (calls added since 5.1 share a table)
_SYS_MOUNT_SETATTR = 442
_AT_FDCWD = -100
_AT_EMPTY_PATH = 0x1000
_AT_RECURSIVE = 0x8000
_OPEN_TREE_CLONE = 1
_OPEN_TREE_CLOEXEC = 0o2000000
_MOUNT_ATTR_IDMAP = 0x00100000

_libc = ctypes.CDLL(None, use_errno=True)


class IdmapError(OSError):
    """An idmapped mount cannot be made here (old kernel, a filesystem without idmap support)."""


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


#: The helper: enter a new user namespace, say so, then wait for stdin to close.
_HELPER = (
    "import ctypes,os;r=ctypes.CDLL(None,use_errno=True).unshare(0x10000000)\n"
    "os.write(1,b'ok' if r==0 else os.strerror(ctypes.get_errno()).encode());os.read(0,1)"
)


def userns_fd(owner_uid: int, owner_gid: int, uid: int, gid: int) -> int:
    """An fd of a user namespace mapping ``owner`` (inside) to ``uid``/``gid`` (outside).

    Its helper process is gone on return; the fd keeps the namespace alive
    (close-on-exec; the caller closes it).
    """
    helper = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", _HELPER],
        cwd="/",  # not the caller's (a workspace): relative LD_PRELOAD entries resolve there (round 49)
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert helper.stdout is not None
        said = helper.stdout.read(2)
        if said != b"ok":
            said += helper.stdout.read()
            raise IdmapError(
                f"cannot create a user namespace for the id map: {said.decode(errors='replace')}"
            )
        Path(f"/proc/{helper.pid}/uid_map").write_text(f"{owner_uid} {uid} 1\n")
        Path(f"/proc/{helper.pid}/gid_map").write_text(f"{owner_gid} {gid} 1\n")
        return os.open(f"/proc/{helper.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        helper.kill()
        helper.wait()
        for stream in (helper.stdin, helper.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


def idmapped_tree(path: Path, ns: int) -> int:
    """A detached copy of the mount tree at ``path`` seen through the user namespace ``ns``'s map.

    Returns the fd (close-on-exec; pass it on explicitly). Raises `IdmapError`
    saying why when the kernel or the filesystem cannot do it.
    """
    flags = _OPEN_TREE_CLONE | _OPEN_TREE_CLOEXEC | _AT_RECURSIVE
    tree = _libc.syscall(_SYS_OPEN_TREE, _AT_FDCWD, str(path).encode(), flags)
    if tree < 0:
        err = ctypes.get_errno()
        raise IdmapError(err, f"open_tree({path}) failed: {os.strerror(err)} (Linux >= 5.12 is needed)")
    attr = _MountAttr(_MOUNT_ATTR_IDMAP, 0, 0, ns)
    done = _libc.syscall(
        _SYS_MOUNT_SETATTR,
        tree,
        b"",
        _AT_EMPTY_PATH | _AT_RECURSIVE,
        ctypes.byref(attr),
        ctypes.sizeof(attr),
    )
    if done < 0:
        err = ctypes.get_errno()
        os.close(tree)
        raise IdmapError(
            err,
            f"cannot make an idmapped mount of {path}: {os.strerror(err)} (its filesystem, or one "
            "mounted below it, does not support idmapped mounts, or the kernel is older than 5.12)",
        )
    return int(tree)
