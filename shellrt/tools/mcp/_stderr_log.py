"""An MCP server's stderr log that keeps its tail within a cap.

The server wrote its stderr straight into ``<session>/mcp-<name>.stderr.log``: a hostile or
broken server filled the disk at its own pace (the log outlives its process, and a restarted
server appends). Its stderr is now a pipe; a thread copies it into the log, and when the log
passes `LOG_CAP_BYTES` its oldest part is dropped, so it holds the last half-cap or more,
after a line saying how much was dropped. A thread, not a task: it needs no event loop and ends
when every holder of the pipe's write end has gone (the server, its children, and our copy,
closed when the connection's generation ends).
"""

from __future__ import annotations

import fcntl
import os
import select
import struct
import termios
import threading
from pathlib import Path
from typing import TextIO

__all__ = ["LOG_CAP_BYTES", "CappedLog"]

#: Most bytes the log holds (it is cut back to half of this, plus a note, when it passes it).
LOG_CAP_BYTES = 4 * 1024 * 1024
_CHUNK = 64 * 1024


class CappedLog:
    """A pipe whose data a thread appends to ``path``, keeping the file under ``cap`` bytes.

    ``writer`` is the pipe's write end for the server (the caller closes it once the server
    started); `settle` waits until what was written so far is in the file.
    """

    def __init__(self, path: Path, cap: int = LOG_CAP_BYTES) -> None:
        read_fd, write_fd = os.pipe2(os.O_CLOEXEC)
        try:
            flags = os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW
            log_fd = os.open(path, flags, 0o600)
        except BaseException:
            os.close(read_fd)
            os.close(write_fd)
            raise
        self._read_fd, self._log_fd, self._cap = read_fd, log_fd, cap
        self._idle = threading.Condition()
        self._waiting = False  # the copier is blocked reading an empty pipe
        self._done = False  # the copier ended (its descriptors are closed)
        self.writer: TextIO = os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")
        self._thread = threading.Thread(target=self._copy, name=f"mcp-stderr-{path.name}", daemon=True)
        self._thread.start()

    def settle(self, timeout: float = 0.25) -> None:
        """Wait (at most ``timeout``) until the pipe is empty and its data is in the file."""
        with self._idle:
            self._idle.wait_for(lambda: self._done or (self._waiting and not self._unread()), timeout)

    def _unread(self) -> int:
        try:
            count: int = struct.unpack("i", fcntl.ioctl(self._read_fd, termios.FIONREAD, b"\0" * 4))[0]
        except OSError:
            return 0
        return count

    def _copy(self) -> None:
        try:
            size = os.fstat(self._log_fd).st_size
            logging = True
            readable = select.poll()
            readable.register(self._read_fd, select.POLLIN)
            while True:
                with self._idle:
                    self._waiting = True
                    self._idle.notify_all()
                # Wait for data with poll, then say so, then read: while the copier holds a chunk it
                # read but has not written, it is never "waiting" (a read that set it after the data
                # had left the pipe let `settle` return before the write: gaps9 failed 2 of 5).
                readable.poll()
                with self._idle:
                    self._waiting = False
                chunk = os.read(self._read_fd, _CHUNK)
                if not chunk:
                    break
                if logging:
                    try:
                        os.write(self._log_fd, chunk)
                        size += len(chunk)
                        if size > self._cap:
                            size = _keep_tail(self._log_fd, size, self._cap // 2)
                    except OSError:  # a full disk: drained unlogged from now on (never a SIGPIPE)
                        logging = False
        except OSError:
            pass
        finally:
            with self._idle:
                self._done = True
                os.close(self._read_fd)
                os.close(self._log_fd)
                self._idle.notify_all()


def _keep_tail(log_fd: int, size: int, keep: int) -> int:
    """Cut the log to its last ``keep`` bytes after a note; returns the new size."""
    tail = os.pread(log_fd, keep, size - keep)
    note = f"[shellrt: {size - len(tail)} earlier bytes of this log were dropped (it keeps the last part)]\n"
    os.ftruncate(log_fd, 0)
    os.write(log_fd, note.encode() + tail)  # O_APPEND: written at the new end, offset 0
    return len(note) + len(tail)
