"""The workspace root: the one inode of a recycled container that a reset does not replace.

A reset empties the workspace, but the directory itself is the bind mount's source and stays.
The command user owns it, so a task can leave data on the inode that no wipe of its contents
touches: extended attributes (``user.*``; POSIX ACLs, ``system.posix_acl_*``) and inode flags
(``chattr``: ``FS_IOC_SETFLAGS``, ``FS_IOC_FSSETXATTR``'s flags and project id). The next task
on the container would read them (red team round 9). So the host records the state of the
directory right after making it (before anything is copied in) and returns it to that state at
each reset, then checks; mode, owner and times are set anew by the next copy-in.
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
from dataclasses import dataclass

__all__ = ["InodeState", "inode_state", "restore_inode"]

_FS_IOC_GETFLAGS = 0x80086601
_FS_IOC_SETFLAGS = 0x40086602
_FS_IOC_FSGETXATTR = 0x801C581F
_FS_IOC_FSSETXATTR = 0x401C5820
#: struct fsxattr: xflags, extsize, nextents, projid, cowextsize, 8 bytes of padding.
_FSX = struct.Struct("=IIIII8x")
#: What a file system says when it has no such ioctl or attribute at all.
_UNSUPPORTED = (errno.ENOTTY, errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS)


@dataclass(frozen=True, slots=True)
class InodeState:
    """What a task could leave on a directory it owns, besides its entries."""

    xattrs: tuple[tuple[str, bytes], ...]
    #: ``FS_IOC_GETFLAGS`` (None: the file system has none).
    flags: int | None
    #: ``FS_IOC_FSGETXATTR``'s xflags, extsize, projid, cowextsize (None: not supported).
    fsx: tuple[int, int, int, int] | None


def _xattrs(path: str) -> dict[str, bytes]:
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError as exc:
        if exc.errno in _UNSUPPORTED:
            return {}
        raise
    return {name: os.getxattr(path, name, follow_symlinks=False) for name in sorted(names)}


def _ioctl_get(fd: int, request: int, size: int) -> bytes | None:
    buf = bytearray(size)
    try:
        fcntl.ioctl(fd, request, buf)
    except OSError as exc:
        if exc.errno in _UNSUPPORTED:
            return None
        raise
    return bytes(buf)


def _open_dir(path: str) -> int:
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)


def inode_state(path: str) -> InodeState:
    """The directory's extended attributes and inode flags (raises `OSError` when unreadable)."""
    fd = _open_dir(path)
    try:
        raw_flags = _ioctl_get(fd, _FS_IOC_GETFLAGS, 4)
        raw_fsx = _ioctl_get(fd, _FS_IOC_FSGETXATTR, _FSX.size)
    finally:
        os.close(fd)
    fsx = None
    if raw_fsx is not None:
        xflags, extsize, _nextents, projid, cowextsize = _FSX.unpack(raw_fsx)
        fsx = (xflags, extsize, projid, cowextsize)
    return InodeState(
        xattrs=tuple(_xattrs(path).items()),
        flags=struct.unpack("=I", raw_flags)[0] if raw_flags is not None else None,
        fsx=fsx,
    )


def restore_inode(path: str, pristine: InodeState) -> list[str]:
    """Return ``path`` to ``pristine`` (as root: any xattr and flag); what still differs after."""
    want = dict(pristine.xattrs)
    current = _xattrs(path)
    for name in current.keys() - want.keys():
        os.removexattr(path, name, follow_symlinks=False)
    for name, value in want.items():
        if current.get(name) != value:
            os.setxattr(path, name, value, follow_symlinks=False)
    now = inode_state(path)
    fd = _open_dir(path)
    try:
        if pristine.flags is not None and now.flags != pristine.flags:
            fcntl.ioctl(fd, _FS_IOC_SETFLAGS, struct.pack("=I", pristine.flags))
        now = inode_state(path)
        if pristine.fsx is not None and now.fsx != pristine.fsx:
            xflags, extsize, projid, cowextsize = pristine.fsx
            fcntl.ioctl(fd, _FS_IOC_FSSETXATTR, _FSX.pack(xflags, extsize, 0, projid, cowextsize))
    finally:
        os.close(fd)
    now = inode_state(path)
    problems = []
    if now.xattrs != pristine.xattrs:
        problems.append("its extended attributes (or ACLs) could not be reset")
    if now.flags != pristine.flags or now.fsx != pristine.fsx:
        problems.append("its inode flags (chattr) could not be reset")
    return problems
