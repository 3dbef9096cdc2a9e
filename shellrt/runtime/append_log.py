"""An append-only file kept open between writes (the session transcript).

Opening and closing the file for every line cost two syscalls and a path walk per
record, twice per call. The descriptor is kept instead; before each write one
``stat`` of the path tells whether the file is still the one held open — when it
was removed or replaced (a person rotating the transcript), the path is opened
again, so lines always land where the path points, as they did before.
"""

from __future__ import annotations

import os
from pathlib import Path

from shellrt.protocol.line_append import append_lines

__all__ = ["AppendLog"]


class AppendLog:
    """Append whole lines to ``path`` (created with ``mode``); `close` releases the descriptor."""

    def __init__(self, path: Path, *, mode: int = 0o600) -> None:
        self.path = path
        self._name = os.fspath(path)  # stat and open take it as it is (a Path converts on every call)
        self._mode = mode
        self._fd: int | None = None
        self._identity: tuple[int, int] | None = None

    def append(self, data: bytes) -> None:
        """Write ``data`` (whole lines) at the end of the file in one ``write`` (O_APPEND); raises OSError.

        A line a full disk cut is taken back, never left to glue itself to the next (round 16).
        """
        fd, size = self._current()
        try:
            append_lines(fd, data, size=size)
        except OSError as exc:  # say which file, as a failed open would have
            raise OSError(exc.errno, f"{exc.strerror} ({self.path})") from exc

    def close(self) -> None:
        fd, self._fd, self._identity = self._fd, None, None
        if fd is not None:
            os.close(fd)

    def _current(self) -> tuple[int, int]:
        """The descriptor of the file the path names now, and its size (the ``stat`` that tells
        it is the same file gives the size too: `append_lines` then needs no ``fstat`` of its own)."""
        if self._fd is not None:
            try:
                st = os.stat(self._name)
            except FileNotFoundError:
                st = None
            if st is not None and (st.st_dev, st.st_ino) == self._identity:
                return self._fd, st.st_size
            self.close()
        # Never through a symlink: the transcript lands in the session directory or nowhere.
        fd = os.open(
            self._name, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, self._mode
        )
        st = os.fstat(fd)
        self._fd, self._identity = fd, (st.st_dev, st.st_ino)
        return fd, st.st_size
