"""An append-only file kept open between writes (the session transcript).

Opening and closing the file for every line cost two syscalls and a path walk per
record, twice per call. The descriptor is kept instead; before each write one
``stat`` of the path tells whether the file is still the one held open — when it
was removed or replaced (a person rotating the transcript), the path is opened
again, so lines always land where the path points, as they did before.

The same ``stat`` tells whether the file still ends where this log's last whole line
ended: then it ends with that line's newline, and `append_lines` need not read the last
byte again to know that the next line starts a line of its own (one ``pread`` less a line,
two a call). Any other size (another writer, a cut write, a truncation) reads it, as before.
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
        #: The file's size right after this log's last write, when that write was whole and
        #: ended a line (None: unknown, the last byte is read before the next write).
        self._end: int | None = None

    def append(self, data: bytes) -> None:
        """Write ``data`` (whole lines) at the end of the file in one ``write`` (O_APPEND); raises OSError.

        A line a full disk cut is taken back, never left to glue itself to the next (round 16).
        """
        fd, size = self._current()
        self._end, end = None, self._end
        try:
            after = append_lines(fd, data, size=size, ends_line=size == end)
        except OSError as exc:  # say which file, as a failed open would have
            raise OSError(exc.errno, f"{exc.strerror} ({self.path})") from exc
        if data.endswith(b"\n"):
            self._end = after

    def close(self) -> None:
        fd, self._fd, self._identity, self._end = self._fd, None, None, None
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
