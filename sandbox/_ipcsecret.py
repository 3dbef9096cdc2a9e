"""A per-uid secret in a SysV shared memory segment: the keyring's stand-in where ``keyctl`` is refused.

Why: shellrt under docker's default seccomp profile (and other filters) cannot use the user
keyring (`sandbox._keyring`), so every process compiled its static programs (~2 s at start). No
file can stand in: a sandboxed command writes files that look like the caller's (root's for a root
caller, through idmapped roots) anywhere a writable root covers, and any session's root may cover
any path (red team round 29, static). A segment of the host's IPC namespace is out of every
command's reach: bwrap runs each in an IPC namespace of its own (``--unshare-ipc``, the C init's
``CLONE_NEWIPC``), docker each container. Mode 0600 keeps other uids out (root reads it, as it does
the keyring); a segment under our key that another uid made, or that others can use, gives no
secret (fail closed: each process builds its own programs). It lives until reboot or ``ipcrm``.
"""

from __future__ import annotations

import ctypes
import errno
import os
import time
import zlib

__all__ = ["ipc_key", "secret"]

_SIZE = 32
_MAGIC = b"shellrt1"  # written after the secret: a reader never takes a half-written one
_IPC_CREAT = 0o1000
_IPC_EXCL = 0o2000
_SHM_RDONLY = 0o10000
_FAILED = ctypes.c_void_p(-1).value


def ipc_key(uid: int) -> int:
    """The segment's SysV key for ``uid`` (one per uid; never IPC_PRIVATE)."""
    return zlib.crc32(b"shellrt:static-programs-mac:%d" % uid) & 0x7FFFFFFF or 1


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
    libc.shmget.restype = ctypes.c_int
    libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
    libc.shmat.restype = ctypes.c_void_p
    libc.shmdt.argtypes = [ctypes.c_void_p]
    libc.shmdt.restype = ctypes.c_int
    return libc


def _untrusted(shmid: int, uid: int) -> str | None:
    """Why segment ``shmid`` is not this uid's own secret (from ``/proc/sysvipc/shm``: the caller's
    IPC namespace), None when the uid made it, owns it and no one else may use it."""
    with open("/proc/sysvipc/shm", encoding="ascii") as fh:
        next(fh, None)
        for line in fh:
            f = line.split()
            if len(f) >= 11 and int(f[1]) == shmid:
                perms, size, owner, creator = int(f[2], 8), int(f[3]), int(f[7]), int(f[9])
                if owner != uid or creator != uid or perms & 0o077 or size != _SIZE + len(_MAGIC):
                    return f"the segment (key {f[0]}) is not uid {uid}'s alone (uid {owner}, mode {perms:o})"
                return None
    return "the segment vanished"


def _fill(libc: ctypes.CDLL, shmid: int, created: bool) -> bytes | str:
    addr = libc.shmat(shmid, None, 0 if created else _SHM_RDONLY)
    if addr is None or addr == _FAILED:
        return f"cannot attach it ({os.strerror(ctypes.get_errno())})"
    try:
        if created:
            ctypes.memmove(addr, os.urandom(_SIZE), _SIZE)
            ctypes.memmove(addr + _SIZE, _MAGIC, len(_MAGIC))
        deadline = time.monotonic() + 0.5
        while ctypes.string_at(addr + _SIZE, len(_MAGIC)) != _MAGIC:  # its maker is writing it
            if time.monotonic() > deadline:
                return "it holds no secret"
            time.sleep(0.005)
        return ctypes.string_at(addr, _SIZE)
    finally:
        libc.shmdt(addr)


def secret() -> bytes | str:
    """This uid's 32-byte secret in the host IPC namespace (made on first use), or why there is none."""
    uid = os.geteuid()
    libc = _libc()
    size = _SIZE + len(_MAGIC)
    shmid = libc.shmget(ipc_key(uid), size, _IPC_CREAT | _IPC_EXCL | 0o600)
    created = shmid >= 0
    if not created:
        err = ctypes.get_errno()
        if err == errno.EEXIST:
            shmid = libc.shmget(ipc_key(uid), size, 0)
            err = ctypes.get_errno()
        if shmid < 0:
            return f"no SysV shared memory secret ({os.strerror(err)})"
    try:
        why = _untrusted(shmid, uid)
    except (OSError, ValueError) as exc:
        why = f"/proc/sysvipc/shm cannot be read ({exc})"
    if why is not None:
        return f"no SysV shared memory secret: {why}"
    found = _fill(libc, shmid, created)
    return found if isinstance(found, bytes) else f"no SysV shared memory secret: {found}"
