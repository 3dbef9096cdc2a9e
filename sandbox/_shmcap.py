"""Root caller, one bwrap per command: an inode cap on the command's /dev/shm, set from the host.

bubblewrap's ``--tmpfs`` takes a size but no ``nr_inodes``, so each command's fresh /dev/shm had
the tmpfs default of half the host's RAM in pages (3 M inodes, ~3 GB of kernel memory in empty
files; red team, round 25). Nothing in that namespace keeps a capability after bwrap, and
``mount(2)`` cannot remount another namespace's mount; the new mount API can: ``fspick`` on the
mount through ``/proc/<init>/root`` and ``fsconfig`` (``nr_inodes``, then reconfigure), as host
root (``CAP_SYS_ADMIN`` over every user namespace). bwrap reads its seccomp program only after
its mounts and ``pivot_root``, and the host writes it only after this: the command never runs
with the default count. A non-root caller holds no such capability (its sessions' zygote mounts
a capped /dev/shm of its own; one bwrap per command keeps the default, docs/security.md).
"""

from __future__ import annotations

import ctypes
import os

import anyio

__all__ = ["cap_dev_shm"]

_FSPICK = 433
_FSCONFIG = 431
_FSPICK_CLOEXEC = 1
_FSPICK_EMPTY_PATH = 8
_FSCONFIG_SET_STRING = 1
_FSCONFIG_CMD_RECONFIGURE = 7
_AT_FDCWD = -100

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _reconfigure(fd: int, inodes: int) -> None:
    """``nr_inodes`` of the tmpfs whose root ``fd`` (an ``O_PATH`` fd) is, set by reconfiguring it."""
    ctx = _libc.syscall(_FSPICK, fd, b"", _FSPICK_CLOEXEC | _FSPICK_EMPTY_PATH)
    if ctx < 0:
        raise OSError(ctypes.get_errno(), "fspick /dev/shm")
    try:
        value = str(inodes).encode()
        if _libc.syscall(_FSCONFIG, ctx, _FSCONFIG_SET_STRING, b"nr_inodes", value, 0) < 0:
            raise OSError(ctypes.get_errno(), "fsconfig nr_inodes")
        if _libc.syscall(_FSCONFIG, ctx, _FSCONFIG_CMD_RECONFIGURE, None, None, 0) < 0:
            raise OSError(ctypes.get_errno(), "fsconfig reconfigure")
    finally:
        os.close(ctx)


def _host_shm() -> int | None:
    try:
        return os.stat("/dev/shm").st_dev
    except OSError:
        return None


def _try_cap(pid: int, host: int | None, size: int, inodes: int) -> bool | None:
    """One look at the init's /dev/shm: capped (True), failed or gone (False), not there yet (None)."""
    try:
        fd = os.open(f"/proc/{pid}/root/dev/shm", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:  # not made yet, or the init is gone
        try:
            os.stat(f"/proc/{pid}")
        except OSError:
            return False
        return None
    except OSError:
        return False
    try:
        seen = os.fstatvfs(fd)
        if os.fstat(fd).st_dev == host or seen.f_blocks * seen.f_frsize != size:
            return None  # the host's (before pivot_root) or the sandbox's /dev tree without it
        if seen.f_files > inodes:
            _reconfigure(fd, inodes)
        return os.fstatvfs(fd).f_files <= inodes
    except OSError:
        return False
    finally:
        os.close(fd)


async def cap_dev_shm(pid: int, size: int, inodes: int, timeout_s: float) -> bool:
    """Wait until bwrap's init ``pid`` shows its own /dev/shm (a tmpfs of ``size`` bytes, not the
    host's: before ``pivot_root`` the path is the host's) and give it at most ``inodes`` inodes.
    False when that did not happen in ``timeout_s`` (the init gone, or the cap refused): the
    caller then withholds the seccomp program, so the command never starts."""
    host = _host_shm()
    with anyio.move_on_after(timeout_s):
        while (done := _try_cap(pid, host, size, inodes)) is None:  # noqa: ASYNC110 (nothing to wait on)
            await anyio.sleep(0.001)
        return done
    return False
