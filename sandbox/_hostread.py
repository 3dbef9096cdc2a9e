"""Reading a file the sandbox could have written, on the host: workspace files the host judges
(attributes, jq filters, ignore files) and the cwd report a command's shell leaves.

The sandbox is hostile: any name in it may be a FIFO (an ``open`` that never
returns, inside the event loop that serves every session), a symlink to a
device (``/dev/zero`` never ends) or a huge file. These reads happen before a
command runs, on the host, so they open without blocking, take only regular
files and stop at a bound the caller chooses.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["read_regular"]


def read_regular(
    path: str | Path, limit: int, *, follow: bool = True, one_link: bool = False
) -> bytes | None:
    """The first ``limit + 1`` bytes of the regular file ``path`` (more than ``limit``: it is
    larger than the caller's bound), or None when it is missing, unreadable or not a regular
    file. ``follow=False``: a symlink is not followed (git reads in-tree attributes so).
    ``one_link``: a file with another hard link (perhaps a host file's) does not count either."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (one_link and st.st_nlink != 1):
            return None
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)
