"""Append whole lines to a JSONL log (transcript, audit record) so a cut line never eats the next.

A full disk cuts a ``write`` short: the part that fit stayed in the file with no newline, and
the next record, written once space was back, was glued to it -- one line that is no JSON, so a
reader (a reopened session, ``shellrt sessions show``, an auditor's ``jq``) lost a record that had
been written whole (red team, round 16). Every append-only log goes through `append_lines`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat

__all__ = ["append_lines", "append_to_log"]

#: Never through a symlink, and never blocking on a FIFO planted at the name (round 13).
_LOG_FLAGS = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def append_to_log(path: str | os.PathLike[str], data: bytes) -> None:
    """Open ``path`` (mode 0600 when made; no symlink, FIFO or other special file) and `append_lines`.

    Raises OSError (a full disk, a planted symlink); callers that must not fail over a log
    record catch it.
    """
    fd = os.open(path, _LOG_FLAGS, 0o600)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, f"{os.fspath(path)} is not a regular file; not appending to it")
        append_lines(fd, data)
    finally:
        os.close(fd)


def append_lines(fd: int, data: bytes, *, size: int | None = None, ends_line: bool = False) -> int:
    """Append ``data`` (whole lines) to the ``O_APPEND`` file ``fd`` (opened for reading too) in one
    ``write``; return the file's size after it (where this write ended); raise OSError when it
    did not fit.

    A write cut short is taken back (the file truncated to where it ended), unless another
    writer appended meanwhile; a file that does not end with a newline (a cut that could not be
    taken back, a crash mid-write, an editor) gets one before ``data``, so ``data`` starts a line.
    ``size``: the file's size from a ``stat`` the caller just made of this same file (saves one).
    ``ends_line``: the caller knows the file ends with a newline at ``size`` (its own last whole
    line ended there, and the file has that size still): the last byte is not read again.
    """
    end = os.fstat(fd).st_size if size is None else size
    if end and not ends_line and os.pread(fd, 1, end - 1) != b"\n":
        data = b"\n" + data
    written = os.write(fd, data)
    if written == len(data):
        return end + written
    with contextlib.suppress(OSError):  # the cut part is ours only when nothing followed it
        if os.fstat(fd).st_size == end + written:
            os.ftruncate(fd, end)
    raise OSError(errno.ENOSPC, f"short write: {written} of {len(data)} bytes fit (is the disk full?)")
