"""A size cap on the bwrap session's /tmp: a tmpfs of that size mounted on its host directory.

The session's /tmp is a host directory (``shellrt-bwrap-tmp-*/tmp``) bound at /tmp in every
sandbox: the file tools serve /tmp from it and it outlives a zygote restart. Uncapped, a command's
``fallocate -l 50G /tmp/x`` filled the host's disk, or its memory where the host's /tmp is a tmpfs
(red team, round 13). Mounting a sized tmpfs on that directory keeps both properties and makes a
write past the cap fail with ENOSPC. Pages are charged to the memory cgroup of the writer (the
session cgroup when it has a memory limit). Only root can mount on the host: a non-root caller's
/tmp stays a plain directory (`BwrapConfig.default_tmp_bytes`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path

from sandbox.errors import BackendUnavailableError

__all__ = ["TmpCapError", "cap_tmp", "uncap_tmp"]

_MS_NOSUID = 0x2
_MS_NODEV = 0x4
_MNT_DETACH = 0x2


class TmpCapError(BackendUnavailableError):
    """The sized tmpfs could not be mounted (the session does not start: the cap is not silently lost)."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def cap_tmp(path: Path, size: int) -> None:
    """Mount a tmpfs of ``size`` bytes (mode 1777, nosuid, nodev) on the empty directory ``path``."""
    options = f"size={size},mode=1777".encode()
    if _libc().mount(b"tmpfs", os.fsencode(path), b"tmpfs", _MS_NOSUID | _MS_NODEV, options) != 0:
        err = ctypes.get_errno()
        raise TmpCapError(
            f"cannot mount the session's /tmp as a tmpfs of {size} bytes on {path} ({os.strerror(err)}); "
            "set BwrapConfig.default_tmp_bytes=None (or drop tmp_bytes) to run with an uncapped /tmp",
        )


def uncap_tmp(path: Path) -> None:
    """Detach the tmpfs from ``path`` (its pages are freed once no sandbox holds it)."""
    if os.path.ismount(path):
        _libc().umount2(os.fsencode(path), _MNT_DETACH)
