"""Private host scratch directories that are swept when their owner died without cleaning up.

A backend's state directory and the bwrap session /tmp live under the system
temp dir and are removed at ``close()``. A process that is SIGKILLed never gets
there. Each such directory therefore holds an ``.owner.lock`` its owner keeps
``flock``ed for its whole life: the kernel drops the lock when the owner dies
(whatever pid namespace it ran in), so a later start that can take the lock
knows the directory is orphaned and removes it. Directories younger than a
minute are left alone: the owner may not have taken its lock yet.

A bwrap session's own holders (its /tmp, its state dir) go below /tmp whatever ``TMPDIR`` says
(`HOLDER_BASE`): every bwrap sandbox hides /tmp and its own process's temp dir, not another
process's. With a ``TMPDIR`` outside /tmp, one process's session /tmp stayed in the read-only host
view of every other process's sandboxes, and a non-root caller's sessions share one uid (0700 keeps
no command of it out): tenant A's ``grep -r`` read what tenant B's command left in its /tmp (red
team round 40, tenants). /tmp is the one host directory every sandbox of every process replaces.

Every other `OwnedDir` (``shellrt run`` spools, batch task directories with their workspace copies
and hidden tests, batch artifacts, the local backend's state dir, Inspect sample dirs, the docker
backend's host directory) goes there too by default, for the same reason (red team round 40,
tenants2). A registry of live processes' temp dirs, hidden at each sandbox start, was the other way:
a session sandbox's mounts are fixed when it starts, so a process started later stayed in view of
every session started before it. A size-limited ``TMPDIR`` therefore bounds none of these: size
/tmp (or give a batch run a ``scratch_dir`` below /tmp).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import time
from pathlib import Path

__all__ = [
    "HOLDER_BASE",
    "KNOWN_PREFIXES",
    "OwnedDir",
    "holder_bases",
    "remove_tree",
    "sweep_known_orphans",
    "sweep_orphans",
]

#: The parent of every shellrt-owned temporary directory (`OwnedDir`'s default): a bwrap session's
#: /tmp and state dir, run spools, batch and Inspect workspace copies, the docker host directory.
HOLDER_BASE = Path("/tmp")

#: Temp-dir prefixes of `OwnedDir` users outside ``sandbox`` (``shellrt run`` spools, batch
#: task dirs): any sandbox start sweeps them too. Session dirs are not temporary: never listed.
KNOWN_PREFIXES = ("shellrt-run-", "shellrt-batch-")
_SWEPT_KNOWN: set[int] = set()

_LOCK = ".owner.lock"
#: A directory this young may be one whose owner has not locked it yet.
_GRACE_S = 60.0


def holder_bases() -> list[Path | None]:
    """Where a sweep looks for a killed owner's holders: /tmp, and the temp dir (None) when it
    differs (holders an older shellrt made there)."""
    same = os.path.realpath(tempfile.gettempdir()) == os.path.realpath(HOLDER_BASE)
    return [HOLDER_BASE] if same else [HOLDER_BASE, None]


class OwnedDir:
    """A fresh 0700 directory below ``directory`` (None: `HOLDER_BASE`, whatever ``TMPDIR`` says),
    locked by this process until `remove`."""

    def __init__(self, prefix: str, directory: Path | None = None) -> None:
        base = directory or HOLDER_BASE
        try:
            self.path = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
        except OSError as exc:
            if base != HOLDER_BASE:
                raise
            from sandbox._holder_base import HolderBaseError  # only when /tmp fails: `run` stays lean

            raise HolderBaseError(exc, HOLDER_BASE) from exc
        self._lock_fd: int | None = os.open(self.path / _LOCK, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def remove(self) -> None:
        """Delete the directory and everything in it, then let go of the lock. Idempotent."""
        remove_tree(self.path)
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            os.close(fd)

    def keep(self) -> None:
        """Leave the directory for the user (e.g. a result file in it): no sweep will remove it."""
        with contextlib.suppress(OSError):
            (self.path / _LOCK).unlink()
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            os.close(fd)


def sweep_known_orphans() -> None:
    """Once per process: sweep every `KNOWN_PREFIXES` directory of the temp dir whose owner is gone."""
    if os.getpid() in _SWEPT_KNOWN:
        return
    _SWEPT_KNOWN.add(os.getpid())
    for prefix in KNOWN_PREFIXES:
        sweep_orphans(prefix)


def sweep_orphans(prefix: str, directory: Path | None = None) -> list[Path]:
    """Remove the ``prefix*`` directories (made by `OwnedDir`) whose owner is gone; returns them.
    ``directory`` None: every `holder_bases` place (/tmp, and an older shellrt's temp dir)."""
    if directory is None:
        return [path for base in holder_bases() for path in _sweep(prefix, base or Path(tempfile.gettempdir()))]
    return _sweep(prefix, directory)


def _sweep(prefix: str, directory: Path) -> list[Path]:
    removed: list[Path] = []
    now = time.time()
    try:  # one listing, the kinds from it: a kept directory (no lock) costs one failed open, not
        # five calls (700 kept batch artifact directories in /tmp added ~80 ms to every start)
        with os.scandir(directory) as listing:
            found = [entry for entry in listing if entry.name.startswith(prefix)]
    except OSError:
        return removed
    for entry in found:
        path = Path(entry.path)
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
            fd = os.open(path / _LOCK, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            continue  # not ours (no lock file), or gone meanwhile
        try:
            if now - os.stat(path, follow_symlinks=False).st_mtime < _GRACE_S:
                raise OSError("young: its owner may not have locked it yet")
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # its owner is alive (or may be)
        try:
            remove_tree(path)
            removed.append(path)
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)
    return removed


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def remove_tree(path: Path | str, *, dir_fd: int | None = None) -> None:
    """Remove ``path`` and everything below it, however deep; follows no link, raises nothing.

    These trees are shaped by sandboxed commands (the session ``/tmp``, the state dir):
    ``shutil.rmtree`` recursed once per level on Python 3.11, and a chain of 3000
    directories raised ``RecursionError`` out of ``close()`` and out of every later
    start's orphan sweep (red team, round 10). One directory fd is open at a time; the
    way back up is ``..``, checked against the device and inode seen on the way down
    (a tree that moved meanwhile is left where it is). What cannot be removed is left.
    ``dir_fd``: ``path`` is relative to that directory.
    """
    try:
        fd = os.open(path, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(path, dir_fd=dir_fd)  # a file or a link, or nothing
        return
    #: Per level from the top: (st_dev, st_ino, its name in its parent, subdirectories left).
    stack: list[tuple[int, int, str, list[str]]] = []
    name = ""
    try:
        while True:
            stack.append((*_identity(fd), name, _clear_files(fd)))
            while True:
                _dev, _ino, here, pending = stack[-1]
                if pending:
                    name = pending.pop()
                    with contextlib.suppress(OSError):
                        child = _enter(fd, name)
                        os.close(fd)
                        fd = child
                        break
                    continue
                stack.pop()
                if not stack:
                    break
                parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = parent
                if _identity(fd) != stack[-1][:2]:
                    return  # moved meanwhile: no way to tell where ".." leads
                with contextlib.suppress(OSError):
                    os.rmdir(here, dir_fd=fd)
            if not stack:
                break
    except OSError:
        return
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):
        os.rmdir(path, dir_fd=dir_fd)


def _enter(fd: int, name: str) -> int:
    """Subdirectory ``name`` of ``fd``, opened; one its owner may not read (bwrap's cwd reports are
    0300: round 42, bwrap5) is made readable first, through a descriptor of it (no name followed)."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
    except PermissionError:
        pinned = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
        try:
            os.chmod(f"/proc/self/fd/{pinned}", 0o700)
        finally:
            os.close(pinned)
        return os.open(name, _DIR_FLAGS, dir_fd=fd)


def _identity(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def _clear_files(fd: int) -> list[str]:
    """Unlink every non-directory in directory ``fd``; returns the names of its subdirectories."""
    subdirs: list[str] = []
    with contextlib.suppress(OSError), os.scandir(fd) as entries:
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                subdirs.append(entry.name)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(entry.name, dir_fd=fd)
    return subdirs
