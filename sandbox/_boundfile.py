"""The file a unix socket is bound to, as the kernel records it (``unix_diag``'s ``UDIAG_SHOW_VFS``).

Why: a socket listed by a name relative to its binder's cwd (``bind("x.sock")``) is at a place only
its binder's directory tells. It was found through the processes holding it: a ``readlink`` of every
descriptor of every process on the host, which a sandboxed command holding 18,000 descriptors and
binding a new name every 50 ms made every later check of every session pay (0.25-0.37 s a command;
red team round 53, supdock, Left). The kernel keeps the bound file's device and inode with the socket
and tells them for one socket inode (an exact ``SOCK_DIAG_BY_FAMILY`` request, no dump): the file is
then recognised in a process's cwd by one ``stat``, whatever descriptors anyone holds.

``unix_diag`` answers only for sockets of the asking netlink socket's network namespace: for another
namespace's, a netlink socket is opened in it by a short-lived thread that enters it (``setns``, which
needs ``CAP_SYS_ADMIN``: a root caller's). Where that cannot be had, `bound_files` says so (None) and
the caller falls back on its bounded walk.
"""

from __future__ import annotations

import ctypes
import errno
import os
import socket
import stat
import struct
import threading
from collections.abc import Iterable

__all__ = ["BoundFile", "bound_file_at", "bound_files"]

#: (device as ``st_dev`` encodes it, inode's low 32 bits: the kernel's ``udiag_vfs_ino`` is a u32).
BoundFile = tuple[int, int]

_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLMSG_ERROR = 2
_NLM_F_REQUEST = 0x1
_UDIAG_SHOW_VFS = 2
_UNIX_DIAG_VFS = 1
_CLONE_NEWNET = 0x40000000
_HEADER = struct.Struct("=IHHII")
_REQUEST = struct.Struct("=BBHIII")
_DIAG_MSG_SIZE = 16

_libc = ctypes.CDLL(None, use_errno=True)


def bound_file_at(path: str, bound: BoundFile, mountinfo: str) -> os.stat_result | None:
    """The ``lstat`` of the socket file at ``path`` when it is the file ``bound`` names, else None:
    the same inode on the same filesystem -- its ``st_dev``, or where a filesystem reports another
    device than its superblock's (a btrfs subvolume's), the device ``mountinfo`` (the table of the
    mount namespace ``path`` is looked up in) gives the mount the file is on, as the kernel does."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except (OSError, ValueError):
        return None
    if not stat.S_ISSOCK(st.st_mode) or st.st_ino & 0xFFFFFFFF != bound[1]:
        return None
    if st.st_dev == bound[0]:
        return st
    try:
        fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        again = os.fstat(fd)
        if (again.st_dev, again.st_ino) != (st.st_dev, st.st_ino):
            return None  # replaced meanwhile
        return st if _superblock_of(fd, mountinfo) == bound[0] else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _superblock_of(fd: int, mountinfo: str) -> int | None:
    """The device of the filesystem ``fd`` is on, as ``mountinfo`` lists its mount (``mnt_id`` of
    ``/proc/self/fdinfo``)."""
    with open(f"/proc/self/fdinfo/{fd}", "rb") as fh:
        fields = dict(line.split(b":", 1) for line in fh.read().splitlines() if b":" in line)
    mount = fields.get(b"mnt_id", b"").strip()
    if not mount:
        return None
    with open(mountinfo, "rb") as fh:
        for line in fh:
            parts = line.split(None, 3)
            if len(parts) > 2 and parts[0] == mount:
                major, _sep, minor = parts[2].partition(b":")
                return os.makedev(int(major), int(minor))
    return None


def bound_files(inodes: Iterable[int], pid: str | None = None) -> dict[int, BoundFile | None] | None:
    """Each socket inode's bound file, in the network namespace of ``pid`` (a /proc name; None: this
    process's own): None for an inode that namespace has no socket of, or one bound to no file. None
    in all when the kernel cannot be asked there (no ``unix_diag``, no right to enter)."""
    sock = _diag_socket(pid)
    if sock is None:
        return None
    try:
        return {inode: _ask(sock, inode) for inode in inodes}
    except OSError:
        return None
    finally:
        sock.close()


def _new_socket() -> socket.socket:
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, _NETLINK_SOCK_DIAG)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", 1, 0))
        sock.connect((0, 0))
    except OSError:
        sock.close()
        raise
    return sock


def _diag_socket(pid: str | None) -> socket.socket | None:
    """A ``NETLINK_SOCK_DIAG`` socket of ``pid``'s network namespace (this process's when None)."""
    if pid is None:
        try:
            return _new_socket()
        except OSError:
            return None
    try:
        ns = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    made: list[socket.socket] = []
    try:
        # A thread of its own enters the namespace (setns changes the calling thread's only) and
        # ends there: no thread of this process is ever left in another namespace.
        worker = threading.Thread(target=_open_in, args=(ns, made), daemon=True)
        worker.start()
        worker.join(5)
    finally:
        os.close(ns)
    return made[0] if made else None


def _open_in(ns: int, made: list[socket.socket]) -> None:
    if _libc.setns(ns, _CLONE_NEWNET) != 0:
        return
    try:
        made.append(_new_socket())
    except OSError:
        return


def _ask(sock: socket.socket, inode: int) -> BoundFile | None:
    """One exact request for ``inode``; raises `OSError` on anything but an answer or "no such socket"."""
    seq = inode & 0xFFFFFFFF
    body = _REQUEST.pack(socket.AF_UNIX, 0, 0, 0xFFFFFFFF, seq, _UDIAG_SHOW_VFS) + b"\xff" * 8
    sock.send(_HEADER.pack(_HEADER.size + len(body), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST, seq, 0) + body)
    data = sock.recv(1 << 16)
    if len(data) < _HEADER.size:
        raise OSError("unix_diag: a short answer")
    length, kind, _flags, got_seq, _port = _HEADER.unpack_from(data)
    if got_seq != seq or length > len(data):
        raise OSError("unix_diag: an answer to another request")
    if kind == _NLMSG_ERROR:
        code = -struct.unpack_from("=i", data, _HEADER.size)[0] if length >= 20 else 0
        if code == errno.ENOENT:
            return None  # no such socket in this namespace (gone, or another's)
        raise OSError(code, "unix_diag refused the request")
    if kind != _SOCK_DIAG_BY_FAMILY or length < _HEADER.size + _DIAG_MSG_SIZE:
        raise OSError("unix_diag: an unexpected answer")
    if struct.unpack_from("=I", data, _HEADER.size + 4)[0] != seq:
        raise OSError("unix_diag: an answer about another socket")
    at = _HEADER.size + _DIAG_MSG_SIZE
    while at + 4 <= length:
        attr_len, attr_kind = struct.unpack_from("=HH", data, at)
        if attr_len < 4 or at + attr_len > length:
            raise OSError("unix_diag: a malformed attribute")
        if attr_kind == _UNIX_DIAG_VFS and attr_len >= 12:
            ino, dev = struct.unpack_from("=II", data, at + 4)
            return os.makedev(dev >> 20, dev & 0xFFFFF), ino  # the kernel's dev_t: 12 bits major
        at += (attr_len + 3) & ~3
    return None  # bound to no file (abstract, or not bound)
