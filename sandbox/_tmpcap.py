"""A size cap on the bwrap session's /tmp: a tmpfs of that size mounted on its host directory.

The session's /tmp is a host directory (``shellrt-bwrap-tmp-*/tmp``) bound at /tmp in every
sandbox: the file tools serve /tmp from it and it outlives a zygote restart. Uncapped, a command's
``fallocate -l 50G /tmp/x`` filled the host's disk, or its memory where the host's /tmp is a tmpfs
(red team, round 13). Mounting a sized tmpfs on that directory keeps both properties and makes a
write past the cap fail with ENOSPC. Pages are charged to the memory cgroup of the writer (the
session cgroup when it has a memory limit). Only root can mount on the host: a non-root caller's
/tmp stays a plain directory (`BwrapConfig.default_tmp_bytes`), made below the host's /tmp
whatever ``TMPDIR`` says (`sandbox._scratch.HOLDER_BASE`: every sandbox hides /tmp; round 40), so
a size-limited /tmp bounds it (`NONROOT_TMP_REASON`; why nothing of shellrt's own can: docs/security.md, "Left-overs,
round 14").
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import ctypes.util
import fcntl
import os
import tempfile
from pathlib import Path

from sandbox.errors import BackendUnavailableError

__all__ = [
    "INODE_BYTES",
    "NONROOT_TMP_REASON",
    "REPORTS_BYTES",
    "REPORTS_INODES",
    "REPORTS_NAME",
    "SHM_POOL_NAME",
    "TmpCapError",
    "cap_tmp",
    "default_tmp_size",
    "inode_cap",
    "sweep_tmp_caps",
    "uncap_tmp",
]

#: Bytes of a tmpfs's size per inode it may hold (`inode_cap`): ~1 KiB of kernel memory each
#: (inode and dentry), so a full inode table costs at most a quarter of the size on top of it.
INODE_BYTES = 4096
#: No writable tmpfs gets fewer inodes than this, however small.
MIN_INODES = 1024


def inode_cap(size: int) -> int:
    """``nr_inodes`` for a writable tmpfs of ``size`` bytes.

    Empty files take no blocks: ``size=`` alone left the inode count at the tmpfs default, half
    the host's RAM in pages (3 M here), and 300,000 empty files cost 300 MB of kernel memory that
    no process owns, the OOM killer cannot free and the session kept (red team, round 25). One
    inode per 4 KiB is four times ext4's default density: a 1 GiB /tmp holds 262,144 files.
    """
    return max(MIN_INODES, size // INODE_BYTES)


#: The share of the session's memory ceiling a default-sized /tmp may take (its pages and inodes
#: are charged to the session cgroup and stay there after the command).
TMP_SHARE_OF_CEILING = 4


def default_tmp_size(configured: int | None, ceiling: int | None) -> int | None:
    """The /tmp size of a session whose policy names none: ``configured``, at most a quarter of
    the session's memory ceiling (None: no tmpfs, a host directory on disk).

    A full /tmp stays charged to the session cgroup after the command that wrote it: with /tmp as
    large as the ceiling, every later command -- the ``rm`` that would free it too -- was killed
    by the OOM killer at its start, the session wedged (red team round 25, second wave). A quarter
    (plus its inodes, a sixteenth) leaves most of the ceiling to the commands.
    """
    if ceiling is None or configured is None:  # None: a host directory, on disk (nothing to wedge)
        return configured
    return min(configured, max(MIN_INODES * INODE_BYTES, ceiling // TMP_SHARE_OF_CEILING))


#: Why a non-root caller's session cannot have a ``tmp_bytes`` cap, and the operator's way out.
NONROOT_TMP_REASON = (
    "only root can mount a sized tmpfs on the host directory that holds the session's /tmp (the "
    "file tools serve /tmp from the host side); a non-root caller's /tmp is made below the host's /tmp "
    "(whatever TMPDIR says: the one place every other sandbox hides), so make the host's /tmp a "
    "size-limited filesystem (a tmpfs with size=, or a quota) to bound it, and drop tmp_bytes"
)

#: The sized tmpfs mounts this process holds (unmounted at `uncap_tmp`, else at exit).
_MOUNTED: set[str] = set()
_PREFIX = "shellrt-bwrap-tmp-"
#: The bwrap runner's state directory (`sandbox._hostproc.HostRunner`): its sized ``reports``.
_STATE_PREFIX = "shellrt-bwrap-"
#: A root caller's capped tmpfs for one bwrap per command's /dev/shm (`sandbox._shmpool`), beside ``tmp``.
SHM_POOL_NAME = "shm"
#: The sized cwd-report directory under it (`REPORTS_BYTES`; red team round 25).
REPORTS_NAME = "reports"
#: Its size and file count: a report is one path (at most 4 KiB), one per command running.
REPORTS_BYTES, REPORTS_INODES = 256 * 1024, 256

_MS_NOSUID = 0x2
_MS_NODEV = 0x4
_MNT_DETACH = 0x2


class TmpCapError(BackendUnavailableError):
    """The sized tmpfs could not be mounted (the session does not start: the cap is not silently lost)."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def cap_tmp(path: Path, size: int, *, inodes: int | None = None, mode: int = 0o1777) -> None:
    """Mount a tmpfs of ``size`` bytes and ``inodes`` files (default `inode_cap`; ``mode``,
    nosuid, nodev) on the empty directory ``path``."""
    options = f"size={size},nr_inodes={inodes or inode_cap(size)},mode={mode:o}".encode()
    if _libc().mount(b"tmpfs", os.fsencode(path), b"tmpfs", _MS_NOSUID | _MS_NODEV, options) != 0:
        err = ctypes.get_errno()
        raise TmpCapError(
            f"cannot mount the session's /tmp as a tmpfs of {size} bytes on {path} ({os.strerror(err)}); "
            "set BwrapConfig.default_tmp_bytes=None (or drop tmp_bytes) to run with an uncapped /tmp",
        )
    if not _MOUNTED:
        atexit.register(_uncap_all)
    _MOUNTED.add(os.fspath(path))


def uncap_tmp(path: Path) -> None:
    """Detach the tmpfs from ``path`` (its pages are freed once no sandbox holds it)."""
    _MOUNTED.discard(os.fspath(path))
    if os.path.ismount(path):
        _empty(path)
        _libc().umount2(os.fsencode(path), _MNT_DETACH)


def _empty(path: Path | str) -> None:
    """Remove what the tmpfs holds before detaching it: a mount namespace made while it was mounted
    (another session's holder or zygote copies the host's table) may keep a copy of the mount, and
    with it the files. The kernel drops such copies when the directory is removed (seen here for a
    holder); emptied first, a copy it kept would hold no pages either."""
    from sandbox._scratch import remove_tree

    with contextlib.suppress(OSError):
        for entry in os.scandir(path):
            remove_tree(entry.path)


def _uncap_all() -> None:
    for path in list(_MOUNTED):
        uncap_tmp(Path(path))


def _swept_name(point: str) -> bool:
    """Whether mount point ``point`` is one of ours: a session's ``tmp`` or ``shm`` pool
    (`sandbox._shmpool`), or a runner's ``reports``."""
    name, parent = os.path.basename(point), os.path.basename(os.path.dirname(point))
    if name in ("tmp", SHM_POOL_NAME):
        return parent.startswith(_PREFIX)
    return name == REPORTS_NAME and parent.startswith(_STATE_PREFIX) and not parent.startswith(_PREFIX)


def sweep_tmp_caps() -> list[Path]:
    """Unmount and remove the sized /tmp of every session whose owner died without `uncap_tmp`
    (SIGKILL): the temp-dir sweep (`sandbox._scratch`) empties such a directory but cannot remove a
    mount point, so the mount stayed in the host's table. Owner gone = its ``.owner.lock`` is gone
    (swept) or can be locked. Returns the mount points removed."""
    from sandbox._scratch import holder_bases, remove_tree

    temps = {os.path.realpath(base or tempfile.gettempdir()) for base in holder_bases()}
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as table:
            points = [line.split()[4] for line in table if " - tmpfs " in line]
    except OSError:
        return []
    removed: list[Path] = []
    for point in points:
        parent = os.path.dirname(point)
        if point in _MOUNTED or os.path.dirname(parent) not in temps or not _swept_name(point):
            continue
        fd: int | None = None
        try:
            fd = os.open(os.path.join(parent, ".owner.lock"), os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except FileNotFoundError:
            pass  # swept already: only the mount is left
        except OSError:
            if fd is not None:
                os.close(fd)
            continue  # its owner is alive
        try:
            _empty(point)
            _libc().umount2(os.fsencode(point), _MNT_DETACH)
            remove_tree(parent)
            removed.append(Path(point))
        finally:
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
    return removed
