"""A bwrap command's cwd report: a FIFO the host makes before the command starts and alone reads.

The report was a file the command's shell created in the session's state directory, which every
command of the session saw writable (red team round 42, bwrap5): a non-root caller's commands could
list that directory (their uid owns it), watch it and rewrite a later command's report before the
host read it; a root caller's could fill it (1733), so later reports failed. Now the host makes
each report ahead, a FIFO in a directory every command sees read-only and cannot list: a command
can name no report but its own (64 random bits), create nothing there, and opening its own FIFO
for writing needs no writable mount (a FIFO is not a file of the file system's). The host holds
the read end from the start, so the shell's open never blocks, and reads what is in the pipe once
the command's pid namespace is gone (no writer is left); nothing is read from a path.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from pathlib import Path

from sandbox._hostproc import REPORT_MAX, report_text

__all__ = ["ReportFifos"]


class ReportFifos:
    """The FIFOs of one runner's live reports: made by `make`, consumed by `read`, all dropped by `close`.

    ``mode``: the FIFO's permissions (a root caller's sandbox uid is not the host's: 0622).
    """

    def __init__(self, mode: int = 0o600) -> None:
        self._mode = mode
        self._fds: dict[Path, int] = {}
        self._lock = threading.Lock()

    def make(self, path: Path) -> None:
        """The FIFO at ``path`` (a fresh random name) and the host's read end of it, open now."""
        os.mkfifo(path, self._mode)
        try:
            os.chmod(path, self._mode)  # whatever the caller's umask
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(path)
            raise
        with self._lock:
            self._fds[path] = fd

    def read(self, path: Path | None) -> str | None:
        """What the command's shell wrote (its final cwd), or None; the FIFO is gone after."""
        if path is None:
            return None
        with self._lock:
            fd = self._fds.pop(path, None)
        if fd is None:
            return None
        chunks: list[bytes] = []
        size = 0
        try:
            while size <= REPORT_MAX:
                try:
                    chunk = os.read(fd, REPORT_MAX + 1 - size)
                except OSError as exc:
                    if exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
                        break
                    raise
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        except OSError:
            return None
        finally:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(path)
        return report_text(b"".join(chunks))

    def discard(self, path: Path | None) -> None:
        """Drop the report of a run that never started: its read end and its FIFO go now, not at
        `close` (round 43, review20: each failed start kept one descriptor and one FIFO, and a
        caller's input fails starts at will).
        """
        if path is None:
            return
        with self._lock:
            fd = self._fds.pop(path, None)
        if fd is None:
            return
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)

    def close(self) -> None:
        """Drop every report still unread (a start that failed, a runner closing)."""
        with self._lock:
            fds, self._fds = self._fds, {}
        for path, fd in fds.items():
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(path)
