"""Judging Grep's hits binary (a NUL byte) at a cost bounded per file, per inode and per call.

Why: Grep drops a hit file holding a NUL byte, as the Python walker skips it, and looked for one
to the end of every hit file, each name of a hard link again, in a worker thread no deadline
stops: one 1 GB text file matching on line 1 and 50 links to it (free to make) cost one Grep 33 s
of reading after ripgrep had answered in milliseconds (red team round 37). Now an inode is judged
once a call, a file's first `NUL_CHECK_FILE_BYTES` at most (the walker searches no further), and
a call's checks read `NUL_CHECK_CALL_BYTES` in all; past that each further file is judged by its
first `FIRST_CHUNK_BYTES`, about what ripgrep itself had read of it to find the hit.
"""

from __future__ import annotations

import os
from typing import BinaryIO

from sandbox.confine import Stamp, stamp

__all__ = [
    "FIRST_CHUNK_BYTES",
    "NUL_CHECK_CALL_BYTES",
    "NUL_CHECK_FILE_BYTES",
    "BinaryJudge",
    "stream_has_nul",
]

#: Bytes of one file looked at for a NUL (the walker's `MAX_SEARCH_BYTES`: it searches no further).
NUL_CHECK_FILE_BYTES = 256 * 1024 * 1024
#: Bytes one call's checks read in all before each further file is judged by its first chunk.
NUL_CHECK_CALL_BYTES = 1 << 30
#: What a file is judged by once a call's budget is spent (ripgrep's own first read is 64 KiB).
FIRST_CHUNK_BYTES = 64 * 1024


def stream_has_nul(fh: BinaryIO, limit: int = NUL_CHECK_FILE_BYTES) -> bool:
    """Whether what is left to read of ``fh``, up to its size now and at most ``limit`` bytes,
    holds a NUL byte (read in 1 MiB chunks). Only up to the size now, as Read never reads past
    what it judged: a command appending faster than the check reads kept it reading, with no
    deadline (red team, round 36)."""
    left = min(os.fstat(fh.fileno()).st_size - fh.tell(), limit)
    while left > 0 and (chunk := fh.read(min(1 << 20, left))):
        left -= len(chunk)
        if b"\x00" in chunk:
            return True
    return False


class BinaryJudge:
    """One call's NUL checks: each inode once, within the call's budget (`NUL_CHECK_CALL_BYTES`)."""

    def __init__(self, budget: int = NUL_CHECK_CALL_BYTES) -> None:
        self.left = budget
        self._seen: dict[Stamp, bool] = {}

    def has_nul(self, fh: BinaryIO) -> bool:
        """`stream_has_nul` of ``fh`` (a regular file, read from where it stands), remembered for
        its inode (and size, modification and change time: a name of the same file says the same;
        a file remade under a freed inode number, or rewritten with its mtime put back, has another
        change time, which only the kernel sets)."""
        st = os.fstat(fh.fileno())
        key = stamp(st)
        known = self._seen.get(key)
        if known is not None:
            return known
        start = fh.tell()
        found = stream_has_nul(fh, min(NUL_CHECK_FILE_BYTES, max(self.left, FIRST_CHUNK_BYTES)))
        self.left -= max(0, fh.tell() - start)
        self._seen[key] = found
        return found
