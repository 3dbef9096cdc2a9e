"""Reading a file the sandbox could have written, on the host: workspace files the host judges
(attributes, jq filters, ignore files, settings files) and the cwd report a command's shell leaves.

The sandbox is hostile: any name in it may be a FIFO (an ``open`` that never
returns, inside the event loop that serves every session), a symlink to a
device (``/dev/zero`` never ends) or a huge file. These reads happen on the
host, so they open without blocking, take only regular files and stop at a
bound the caller chooses. The one reader of that kind: the settings loader and
``shellrt run``'s lean pre-scan use it too (stdlib only, so the lean path can).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = ["NOT_REGULAR", "open_without_blocking", "read_bounded", "read_open_regular", "read_regular", "read_regular_bytes"]

#: Why a name that is no regular file is not read (the errors' text).
NOT_REGULAR = "not a regular file (a device, FIFO, socket or directory)"


def open_without_blocking(path: str | Path, *, follow: bool = True) -> int:
    """A read-only descriptor of ``path`` opened so a FIFO or a terminal cannot block or become
    the controlling tty (`OSError` as ``os.open`` raises it)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    return os.open(path, flags)


def read_open_regular(
    fd: int, limit: int, name: str | Path, *, one_link: bool = False, not_regular: str = NOT_REGULAR
) -> bytes:
    """The first ``limit + 1`` bytes of the open file ``fd`` (more than ``limit``: it is larger
    than the caller's bound); `OSError` naming ``name`` when it is no regular file, or has another
    hard link and ``one_link`` asks for none."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, not_regular, str(name))
    if one_link and st.st_nlink != 1:
        raise OSError(errno.EMLINK, "a file with another hard link (perhaps a host file's)", str(name))
    return read_bounded(fd, limit)


def read_bounded(fd: int, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of ``fd`` from where it stands (more than ``limit``: the file is
    larger than the caller's bound), read in pieces of at most 1 MiB."""
    chunks: list[bytes] = []
    left = limit + 1
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_regular_bytes(path: str | Path, limit: int, *, follow: bool = True, one_link: bool = False) -> bytes:
    """As `read_regular`, raising `OSError` that says why (`FileNotFoundError` when missing)."""
    fd = open_without_blocking(path, follow=follow)
    try:
        return read_open_regular(fd, limit, path, one_link=one_link)
    finally:
        os.close(fd)


def read_regular(
    path: str | Path, limit: int, *, follow: bool = True, one_link: bool = False
) -> bytes | None:
    """The first ``limit + 1`` bytes of the regular file ``path`` (more than ``limit``: it is
    larger than the caller's bound), or None when it is missing, unreadable or not a regular
    file. ``follow=False``: a symlink is not followed (git reads in-tree attributes so).
    ``one_link``: a file with another hard link (perhaps a host file's) does not count either."""
    try:
        return read_regular_bytes(path, limit, follow=follow, one_link=one_link)
    except OSError:
        return None
