"""A new I/O directory for each recycled task (round 42, docker5).

The host makes every command's FIFOs and request file in the session's I/O directory, on the
host's ``/dev/shm`` when that is a tmpfs, whose superblock numbers inodes from one counter. A
command sees its own FIFO's number (``stat -L /proc/self/fd/2``) and the directory's, made at the
session's start (``stat /.shellrt-io``: the mount point, whatever its mode): the difference counted
every command every earlier task of a recycled container ran (87 after 41 commands, 3 fresh). So
after the reset's verdict the host makes a new directory beside it (same entries, same modes, same
owner) and swaps the two names (`swap_io_dir`: the backend keeps its path); the tmpfs renewal's
child binds it over the old one in the container's mount namespace, by pidfd
(`_freshtmp.renew_tmpfs`); then `check_io_dir` proves that what the container shows at the mount
point is the new directory, and removes the old. Nothing of a task runs during a reset, and the
executor names the directory by path (fd 8 only with ``root_can_administer``, never recycled).
"""

from __future__ import annotations

import os
import shutil
import stat

from sandbox.docker._nsmount import top_mounts
from sandbox.docker._pidref import PidRef
from sandbox.errors import BackendUnavailableError

__all__ = ["check_io_dir", "swap_io_dir"]


def _fresh_copy(io_dir: str, new: str, entries: frozenset[str]) -> None:
    """``new``: a directory of ``io_dir``'s mode and owner holding copies of its ``entries``."""
    st = os.lstat(io_dir)
    os.mkdir(new, 0o700)
    for name in sorted(entries):
        src = os.path.join(io_dir, name)
        est = os.lstat(src)
        if not stat.S_ISREG(est.st_mode):
            raise BackendUnavailableError(f"the I/O directory's {name} is not a regular file")
        with open(src, "rb") as fh:
            data = fh.read()
        fd = os.open(os.path.join(new, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(os.path.join(new, name), stat.S_IMODE(est.st_mode))
    os.chmod(new, stat.S_IMODE(st.st_mode))
    if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
        os.chown(new, st.st_uid, st.st_gid)


def swap_io_dir(io_dir: str, entries: frozenset[str]) -> None:
    """Put a new directory holding copies of ``entries`` at ``io_dir``, the last one at
    ``<io_dir>.old`` (`check_io_dir` removes it); `BackendUnavailableError` on failure."""
    new, old = f"{io_dir}.new", f"{io_dir}.old"
    for stale in (new, old):  # an earlier attempt that failed half-way
        shutil.rmtree(stale, ignore_errors=True)
    try:
        _fresh_copy(io_dir, new, entries)
        os.rename(io_dir, old)
        try:
            os.rename(new, io_dir)
        except OSError:
            os.rename(old, io_dir)  # the host's path keeps naming a whole directory
            raise
    except OSError as exc:
        raise BackendUnavailableError(f"could not make a new I/O directory: {exc}") from exc


def check_io_dir(ref: PidRef, io_dir: str, target: str, depth: int) -> None:
    """``ref``'s container shows ``io_dir`` (the new one) at ``target``, read-only, its mount stack
    ``depth`` deep as before; then the old directory goes. `BackendUnavailableError` otherwise."""
    made = os.lstat(io_dir)
    with ref.proc_dir() as proc:
        try:
            shown = os.stat(f"{proc}/root{target}")
        except OSError as exc:
            raise BackendUnavailableError(f"the container's {target} cannot be checked: {exc}") from exc
    stack = top_mounts(ref, target)
    if (shown.st_dev, shown.st_ino) != (made.st_dev, made.st_ino) or len(stack) != depth or not stack[-1][1]:
        raise BackendUnavailableError(
            f"{target} in the container is not the new I/O directory, read-only ({stack})"
        )
    shutil.rmtree(f"{io_dir}.old", ignore_errors=True)
