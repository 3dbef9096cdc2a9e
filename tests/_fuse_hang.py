"""A FUSE file system that never answers, for tests of what a hung mount does to the host's tools.

Speaks the kernel's FUSE protocol on ``/dev/fuse`` itself (no libfuse, no fusepy): the root
directory holds ``ok.txt`` (answered), ``slow.txt`` (its attributes answered, every READ left
unanswered: a read blocks, as on a hung NFS or sshfs mount) and ``hang`` (its LOOKUP left
unanswered: even resolving the path blocks). Needs root (``/dev/fuse`` and ``mount``); use in a
mount namespace of its own (``unshare -m``) so nothing outlives the test.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import threading

__all__ = ["HangingFs", "mount_hanging_fs"]

_IN = struct.Struct("<IIQQIIIHH")  # len, opcode, unique, nodeid, uid, gid, pid, extlen, padding
_OUT = struct.Struct("<IiQ")  # len, error, unique
_ATTR = struct.Struct("<QQQQQQIIIIIIIIII")  # fuse_attr: 88 bytes
_LOOKUP, _FORGET, _GETATTR, _OPEN, _READ, _INIT, _OPENDIR, _READDIR, _INTERRUPT, _BATCH_FORGET = (
    1, 2, 3, 14, 15, 26, 27, 28, 36, 42,
)  # fmt: skip
_FILES = {b"ok.txt": (2, b"fine\n"), b"slow.txt": (3, b"never read\n")}


def _attr(ino: int) -> bytes:
    if ino == 1:
        return _ATTR.pack(1, 0, 0, 0, 0, 0, 0, 0, 0, 0o40755, 2, 0, 0, 0, 4096, 0)
    data = next(d for i, d in _FILES.values() if i == ino)
    return _ATTR.pack(ino, len(data), 1, 0, 0, 0, 0, 0, 0, 0o100644, 1, 0, 0, 0, 4096, 0)


def _listing() -> bytes:
    """The root's entries as ``fuse_dirent`` records (ino, next offset, name length, type, name)."""
    out = b""
    for index, (name, (ino, _data)) in enumerate(_FILES.items(), 1):
        record = struct.pack("<QQII", ino, index, len(name), 8) + name  # 8: DT_REG
        out += record + bytes(-len(record) % 8)
    return out


def _serve(fd: int, held: list[int]) -> None:
    while True:
        try:
            request = os.read(fd, 1 << 18)
        except OSError:
            return  # unmounted
        _length, opcode, unique, node, *_ = _IN.unpack_from(request)
        body = request[_IN.size :]
        reply: bytes | None = None
        error = 0
        if opcode == _INIT:
            reply = struct.pack("<IIIIHHIIHHII", 7, 31, 0, 0, 16, 12, 128 * 1024, 1, 32, 0, 0, 0) + bytes(24)
        elif opcode == _LOOKUP:
            name = body.split(b"\0", 1)[0]
            if name == b"hang":
                held.append(unique)
                continue
            if name in _FILES:
                ino = _FILES[name][0]
                reply = struct.pack("<QQQQII", ino, 0, 0, 0, 0, 0) + _attr(ino)
            else:
                error = -errno.ENOENT
        elif opcode == _GETATTR:
            reply = struct.pack("<QII", 0, 0, 0) + _attr(node)
        elif opcode in (_OPEN, _OPENDIR):
            reply = struct.pack("<QIi", 0, 0, 0)
        elif opcode == _READDIR:
            offset = struct.unpack_from("<Q", body, 8)[0]
            reply = _listing() if offset == 0 else b""
        elif opcode == _READ:
            if node == _FILES[b"slow.txt"][0]:
                held.append(unique)
                continue
            offset, size = struct.unpack_from("<QI", body, 8)
            data = next(d for i, d in _FILES.values() if i == node)
            reply = data[offset : offset + size]
        elif opcode in (_FORGET, _BATCH_FORGET, _INTERRUPT):
            continue  # no answer expected (an interrupted request stays unanswered: still hung)
        else:
            error = -errno.ENOSYS
        payload = reply or b""
        try:
            os.write(fd, _OUT.pack(_OUT.size + len(payload), error, unique) + payload)
        except OSError:
            continue


class HangingFs:
    """The mounted file system: ``held`` lists the requests left unanswered so far."""

    def __init__(self, target: str, held: list[int]) -> None:
        self.target = target
        self.held = held
        self._connection = os.minor(os.stat(target).st_dev)

    def abort(self) -> None:
        """End the connection (``fusectl``'s ``abort``): every blocked request fails with ENOTCONN.
        Without it, threads waiting on an answer are unkillable and the process never exits."""
        control = f"{self.target}.ctl"
        os.makedirs(control, exist_ok=True)
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.mount(b"fusectl", control.encode(), b"fusectl", 0, None) != 0:
            raise OSError(ctypes.get_errno(), "mount fusectl")
        with open(f"{control}/{self._connection}/abort", "w") as f:
            f.write("1")


def mount_hanging_fs(target: str) -> HangingFs:
    """Mount the hanging file system on ``target`` (in a mount namespace of the caller's own) and
    serve it from a daemon thread."""
    fd = os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC)
    libc = ctypes.CDLL(None, use_errno=True)
    options = f"fd={fd},rootmode=40000,user_id=0,group_id=0,allow_other".encode()
    if libc.mount(b"rt15hang", target.encode(), b"fuse", 0, options) != 0:
        raise OSError(ctypes.get_errno(), f"mount fuse on {target}")
    held: list[int] = []
    threading.Thread(target=_serve, args=(fd, held), daemon=True).start()
    return HangingFs(target, held)
