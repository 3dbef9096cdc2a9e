"""A per-uid secret in the kernel's user keyring: proof that shellrt itself wrote a cached file.

Why the keyring: every file a sandboxed command can write looks like the caller's own on the
host (a root caller's idmapped root, a non-root caller's uid), so no owner or mode check tells a
file shellrt made from one a command planted (red team round 28, static). A key in the user
keyring is readable by the caller's processes only, and the sandboxes refuse ``keyctl`` /
``add_key`` / ``request_key`` to every command (bwrap's and docker's seccomp filters). No key
(another architecture, no keyring, shellrt itself under a filter that refuses ``keyctl``): a
secret in the host's SysV IPC namespace stands in (`sandbox._ipcsecret`, out of every command's
reach too); with neither, `secret` says why, and callers must trust no cached file.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import threading

from sandbox import _ipcsecret
from sandbox._seccomp import DENIED, MACHINES

__all__ = ["DESCRIPTION", "secret"]

#: The key's description in the user keyring (one key per uid, shared by its shellrt processes).
DESCRIPTION = b"shellrt:static-programs-mac"
_SIZE = 32
_KEY_SPEC_USER_KEYRING = -4
_KEYCTL_SETPERM = 5
_KEYCTL_SEARCH = 10
_KEYCTL_READ = 11
#: Possessor: all; the uid's other processes: view, read, search (they need not possess it).
_PERM = 0x3F0B0000

_lock = threading.Lock()
_found: bytes | str | None = None


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _keyctl(libc: ctypes.CDLL, nr: int, *args: int | bytes | ctypes.Array[ctypes.c_char]) -> int:
    """One keyctl call; raises OSError with the kernel's errno."""
    conv = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    ret = int(libc.syscall(ctypes.c_long(nr), *conv))
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return ret


def _read(libc: ctypes.CDLL, keyctl: int) -> bytes | None:
    """The key's payload, None when the user keyring has none."""
    try:
        serial = _keyctl(libc, keyctl, _KEYCTL_SEARCH, _KEY_SPEC_USER_KEYRING, b"user", DESCRIPTION, 0)
    except OSError as exc:
        if exc.errno in (errno.ENOKEY, errno.EKEYEXPIRED, errno.EKEYREVOKED):
            return None
        raise
    buf = ctypes.create_string_buffer(_SIZE)
    size = _keyctl(libc, keyctl, _KEYCTL_READ, serial, buf, _SIZE)
    if size != _SIZE:
        raise OSError(errno.EINVAL, f"the keyring's {DESCRIPTION.decode()} key has {size} bytes, not {_SIZE}")
    return buf.raw


def _make(libc: ctypes.CDLL, add_key: int, keyctl: int) -> None:
    payload = os.urandom(_SIZE)
    ret = int(
        libc.syscall(
            ctypes.c_long(add_key),
            b"user",
            DESCRIPTION,
            payload,
            ctypes.c_size_t(_SIZE),
            ctypes.c_long(_KEY_SPEC_USER_KEYRING),
        )
    )
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    try:
        _keyctl(libc, keyctl, _KEYCTL_SETPERM, ret, _PERM)
    except OSError:
        pass  # the possessor can still read it; the next process finds out whether it can


def _from_keyring() -> bytes | str:
    arch = MACHINES.get(platform.machine())
    if arch is None:
        return f"no keyring syscall numbers for {platform.machine()}"
    add_key, keyctl = DENIED["add_key"][arch], DENIED["keyctl"][arch]  # the numbers the sandboxes deny
    if add_key is None or keyctl is None:
        return f"no keyring syscalls on {platform.machine()}"
    libc = _libc()
    try:
        found = _read(libc, keyctl)
        if found is None:
            _make(libc, add_key, keyctl)
            # Read back what the keyring holds: a racing process's key replaced ours or ours theirs;
            # the loser's files then fail the check and are built again (never trusted wrongly).
            found = _read(libc, keyctl)
    except OSError as exc:
        return f"the user keyring cannot be used ({exc.strerror or exc})"
    if found is None:
        return "the user keyring kept no key"
    return found


def _lookup() -> bytes | str:
    """The keyring's secret, else the host IPC namespace's (`sandbox._ipcsecret`: where ``keyctl``
    is refused, e.g. under docker's default seccomp profile), else why neither."""
    found = _from_keyring()
    if isinstance(found, bytes):
        return found
    other = _ipcsecret.secret()
    return other if isinstance(other, bytes) else f"{found}; {other}"


def secret() -> bytes | str:
    """This uid's 32-byte secret (made on first use), or why there is none (looked up once per process)."""
    global _found
    with _lock:
        if _found is None:
            _found = _lookup()
        return _found
