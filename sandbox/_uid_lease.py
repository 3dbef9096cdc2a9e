"""Per-session host uids: each root-run sandbox session leases a uid (and the gid of that number) no other live session holds.

The kernel accounts many limits per user, not per process or namespace: inotify
instances and watches (``fs.inotify.max_user_*``), pipe buffers beyond
``fs.pipe-user-pages-soft``, POSIX message-queue bytes, pending signals and
RLIMIT_NPROC (the per-uid "ucounts"), and kill(2)/ptrace permission follow the
uid too. Sessions that shared one sandbox uid shared all of these: one
session's command could take every inotify instance of every other session.
A lease gives each session its own uid for its whole life.

Exclusive on the whole host, whichever process asks: one lock file per uid in a
root-owned 0700 directory (`LEASE_DIR`), ``flock``ed for the session's life
(processes that do not share that directory -- shellrt in containers with their
own /run on one kernel -- need it mounted in, or disjoint pools). The
kernel drops the lock when its holder dies (SIGKILL included), so a crash frees
the uid; the file still names the dead holder's pid, and the next lessee first
kills whatever still runs under that uid (`_reclaim`), or leaves the uid alone
when it cannot. A clean `UidLease.release` empties the file.

The default pool (`DEFAULT_POOL_START`, `DEFAULT_POOL_SIZE`) lies in
0x7E000000-0x7E00FFFF: within the range systemd's UID table leaves unused
(0x70000000-0x7FFDFFFF: above nspawn's container ranges and the 16-bit
/etc/subuid allocations ``useradd`` makes from 100000 up, below systemd's
"foreign" range 0x7FFE0000 and below 2^31, where software that treats uid_t as
signed breaks), and clear of the old fixed default 2000000000 (an older shellrt
on the same host never runs as a leased uid). Any id of the pool that
/etc/passwd, /etc/group, /etc/subuid or /etc/subgid uses is skipped.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from sandbox._proctree import kill_listed
from sandbox.errors import BackendUnavailableError

__all__ = [
    "DEFAULT_POOL_SIZE",
    "DEFAULT_POOL_START",
    "LEASE_DIR",
    "UidLease",
    "UidPoolExhaustedError",
    "in_pool",
    "lease_uid",
    "pool_must_fit",
]

DEFAULT_POOL_START = 0x7E000000  # 2113929216
DEFAULT_POOL_SIZE = 0x10000  # 65536 sessions at once
#: Host-wide: every process on the host leases from the same directory (tmpfs: cleared at boot).
LEASE_DIR = Path("/run/shellrt-uid-leases")
#: How long a reclaim waits for the killed leftovers of a dead holder's session to be gone.
_RECLAIM_WAIT_S = 1.0


def pool_must_fit(start: int, size: int) -> None:
    """Refuse a pool that runs into (uid_t) -1, the kernel's "no change" uid (a config check)."""
    if start + size > 2**32 - 1:
        raise ValueError("uid_pool_start + uid_pool_size must stay below 4294967295 ((uid_t) -1)")


def in_pool(uid: int, start: int, size: int) -> bool:
    """Whether ``uid`` is one of the pool's (a fixed uid there could be leased by a session too)."""
    return start <= uid < start + size


class UidPoolExhaustedError(BackendUnavailableError):
    """Raised when every uid of the configured pool is leased by a live session (or unusable here)."""


@dataclass
class UidLease:
    """A uid/gid held for one session; `release` (or the holder's death) frees it."""

    uid: int
    gid: int
    _fd: int | None = field(default=None, repr=False)
    #: The previous holder died and its uid was reclaimed (diagnostics, tests).
    reclaimed: bool = False

    @property
    def held(self) -> bool:
        """Whether this process still holds the lease."""
        return self._fd is not None

    def release(self) -> None:
        """Free the uid (after every process of the session is gone). Idempotent."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)  # an empty file: released cleanly, nothing to reclaim
        os.close(fd)


def lease_uid(
    start: int, size: int, *, widen: str, directory: Path = LEASE_DIR, etc: Path = Path("/etc")
) -> UidLease:
    """Lease a uid of ``start .. start+size-1`` no live session holds (gid: the same number).

    Raises `UidPoolExhaustedError` naming ``widen`` (the setting that widens the
    pool) when none is free, and `BackendUnavailableError` when the lease
    directory is unsafe or cannot be made. ``etc`` holds the account and subordinate-id
    files whose ids are skipped.
    """
    dir_fd = _open_lease_dir(directory)
    try:
        end = start + size
        taken = [(lo, hi) for lo, hi in _ids_in_use(etc) if lo < end and hi > start]  # the pool's only
        # A random first try: fewer collisions between concurrent starters, less reuse of a uid.
        offset = int.from_bytes(os.urandom(4), "big") % size
        for i in range(size):
            uid = start + (offset + i) % size
            if any(lo <= uid < hi for lo, hi in taken):
                continue
            lease = _try_lock(dir_fd, uid, directory)
            if lease is not None:
                return lease
    finally:
        os.close(dir_fd)
    raise UidPoolExhaustedError(
        f"every uid of the sandbox uid pool {start}..{start + size - 1} is leased by a live session "
        f"(or used by an account or a /etc/subuid range). Fix: close idle sessions, or widen the pool "
        f"with {widen} (pick ids no account or subuid range uses)"
    )


def _open_lease_dir(directory: Path) -> int:
    """An fd of the lease directory (made root-owned 0700 when missing); refused when anyone else could write it."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        try:
            fd = os.open(directory, flags)
        except FileNotFoundError:  # the first lease since boot
            with contextlib.suppress(FileExistsError):
                os.mkdir(directory, 0o700)
            fd = os.open(directory, flags)
    except OSError as exc:
        raise BackendUnavailableError(
            f"cannot open the uid lease directory {directory}: {exc.strerror}. Fix: make it a "
            "directory owned by root, mode 0700 (or remove what is there)"
        ) from exc
    st = os.fstat(fd)
    if st.st_uid != 0 or stat.S_IMODE(st.st_mode) & 0o077:
        os.close(fd)
        raise BackendUnavailableError(
            f"the uid lease directory {directory} is not root's own (owner {st.st_uid}, mode "
            f"{stat.S_IMODE(st.st_mode):o}): another user could free or forge leases. Fix: remove it "
            "(it is remade root-owned 0700)"
        )
    return fd


def _try_lock(dir_fd: int, uid: int, directory: Path) -> UidLease | None:
    """The lease of ``uid`` when no live holder has it (its dead holder's leftovers reclaimed)."""
    name = str(uid)
    try:
        fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    except OSError as exc:
        raise BackendUnavailableError(
            f"cannot make the uid lease file {name} in {directory}: "
            f"{exc.strerror}. Fix: the directory must be on a writable file system (a booted host's /run "
            "is a tmpfs), or set a fixed sandbox_uid (docker: user) to run without leases"
        ) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return None  # a live session holds it
        raise
    try:
        stale = os.pread(fd, 64, 0).strip()
        if stale and not _reclaim(uid):
            os.close(fd)  # its leftovers would not die: the file keeps naming the dead holder
            return None
        if stale:
            os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except BaseException:
        os.close(fd)
        raise
    return UidLease(uid, uid, fd, reclaimed=bool(stale))


def _reclaim(uid: int) -> bool:
    """Kill what still runs as ``uid`` after its holder died; whether none is left."""
    deadline = time.monotonic() + _RECLAIM_WAIT_S
    while True:
        left = _pids_of(uid)
        if not left:
            return True
        if time.monotonic() > deadline:
            return False
        kill_listed(left, functools.partial(_pids_of, uid))  # pidfds: an exited one's pid may be reused
        time.sleep(0.01)


def _pids_of(uid: int) -> list[int]:
    """Live host pids with ``uid`` as real, effective or saved uid (from /proc/<pid>/status).

    Zombies are left out: they hold no file, no inotify instance, no pipe, and
    only their parent can make them go.
    """
    wanted = str(uid).encode()
    found: list[int] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status", "rb") as f:
                for line in f:
                    if line.startswith(b"State:") and line.split()[1:2] == [b"Z"]:
                        break
                    if line.startswith(b"Uid:"):
                        if wanted in line.split()[1:4]:
                            found.append(int(entry.name))
                        break
        except OSError:
            continue  # gone meanwhile
    return found


#: `_ids_in_use` per ``etc``: (what the four files were when read, the ranges read from them).
_USED: dict[Path, tuple[tuple[tuple[int, int, int] | None, ...], list[tuple[int, int]]]] = {}


def _ids_in_use(etc: Path) -> list[tuple[int, int]]:
    """`_read_ids_in_use`, read again only when one of its files changed (a stat of each, not a parse)."""
    seen = tuple(_signature(os.path.join(etc, name)) for name in ("passwd", "group", "subuid", "subgid"))
    cached = _USED.get(etc)
    if cached is None or cached[0] != seen:
        cached = _USED[etc] = (seen, _read_ids_in_use(etc))
    return cached[1]


def _signature(path: str) -> tuple[int, int, int] | None:
    """(inode, mtime, size) of ``path``: a file replaced or rewritten changes it (None: missing)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def _read_ids_in_use(etc: Path) -> list[tuple[int, int]]:
    """[lo, hi) ranges of ids the host uses: account and group ids, and subuid/subgid ranges."""
    used: list[tuple[int, int]] = []
    for name in ("passwd", "group"):
        for fields in _rows(etc / name):
            if len(fields) > 2 and fields[2].isdigit():
                used.append((int(fields[2]), int(fields[2]) + 1))
    for name in ("subuid", "subgid"):
        for fields in _rows(etc / name):
            if len(fields) > 2 and fields[1].isdigit() and fields[2].isdigit():
                used.append((int(fields[1]), int(fields[1]) + int(fields[2])))
    return used


def _rows(path: Path) -> list[list[str]]:
    """``path``'s colon-separated rows ([] when it is missing or unreadable)."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            return [line.rstrip("\n").split(":") for line in f]
    except OSError:
        return []
