"""The docker session's other host directory (workspace copy, mask sources): private, out of reach.

Why: besides the I/O directory (`_iobase`), a docker session keeps a directory on the host for
the workspace copy (copy mode: what the container mounts as its workspace) and the empty files and
directories mounted over read-denied paths. It was ``mkdtemp`` below ``TMPDIR``, whatever that was;
with ``TMPDIR`` inside a sandbox's writable root (this or another shellrt process's bwrap session,
a root caller's commands writing as root through idmapped roots), a command there could rename the
directory away and put its own at the name (or a link), and the copy, or a mask's source, became
the command's (red team round 30 Left, round 31 mend). Now the temp dir is refused when
`writable_place` finds it (as written, a link met, or its resolution) in any live session's root
(every process's, `_liveroots`) -- "set TMPDIR ..." -- and the directory is made below the
resolved temp dir by ``mkdirat`` on a descriptor reached one ``O_NOFOLLOW`` component at a time,
checked (a directory, the caller's, 0700) through its own descriptor before anything is put in it.
It is made below /tmp, not ``TMPDIR``: another shellrt process's bwrap commands of the same uid read
the workspace copy below a ``TMPDIR`` outside /tmp (red team round 40, tenants2).
"""

from __future__ import annotations

import errno
import fcntl
import os
import secrets
import stat
from pathlib import Path

from sandbox._hostprog import writable_place
from sandbox._scratch import _LOCK, HOLDER_BASE, OwnedDir  # the same lock file: sweeps find the owner by it
from sandbox.confine import open_dir_beneath
from sandbox.errors import BackendUnavailableError

__all__ = ["PrivateHostDir", "host_base"]

_DIR = os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def host_base() -> str:
    """/tmp resolved (`HOLDER_BASE`, whatever ``TMPDIR`` says: every bwrap sandbox of every process
    hides it, another process's ``TMPDIR`` it does not: red team round 40, tenants2), or
    BackendUnavailableError (saying what to do) when a sandboxed command could change what it names."""
    named = str(HOLDER_BASE)
    if (place := writable_place(os.path.abspath(named))) is not None:
        raise BackendUnavailableError(
            f"the docker backend keeps its workspace copy and mask files in {named}, but "
            f"{place} lies in a sandbox's writable root (or, as root, a place another user can write): a "
            "command there could change them. Give no session /tmp (or /) as a writable root"
        )
    return os.path.realpath(named)


def _open_nofollow(path: str) -> int:
    """An ``O_PATH`` descriptor of directory ``path`` (absolute, resolved), no link followed."""
    top = os.open("/", os.O_PATH | _DIR)
    try:
        return open_dir_beneath(top, [p for p in path.split("/") if p])
    finally:
        os.close(top)


class PrivateHostDir(OwnedDir):
    """`OwnedDir` made below `host_base` by ``mkdirat`` from an ``O_NOFOLLOW`` walk, and checked."""

    def __init__(self, prefix: str) -> None:  # no super().__init__: the directory is made here
        base = host_base()
        try:
            parent = _open_nofollow(base)
        except OSError as exc:
            raise BackendUnavailableError(
                f"{base} changed while the docker backend opened it ({exc.strerror}): "
                "give no session /tmp (or /) as a writable root"
            ) from exc
        try:
            name, fd = _make(parent, prefix)
            try:
                self._lock_fd: int | None = os.open(
                    _LOCK, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=fd
                )
            finally:
                os.close(fd)
        finally:
            os.close(parent)
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self.path = Path(base) / name


def _make(parent: int, prefix: str) -> tuple[str, int]:
    """A new 0700 directory in ``parent``: its name and a descriptor of it (checked: a directory,
    the caller's, closed to others)."""
    for _ in range(100):
        name = prefix + secrets.token_hex(6)
        try:
            os.mkdir(name, 0o700, dir_fd=parent)
        except FileExistsError:
            continue
        fd = os.open(name, os.O_RDONLY | _DIR, dir_fd=parent)
        st = os.fstat(fd)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            os.close(fd)
            raise BackendUnavailableError(
                f"the docker backend's host directory {name} is not its own 0700 directory"
            )
        return name, fd
    raise OSError(errno.EEXIST, "no free name for the docker backend's host directory")
