"""Reading stdin line by line without a thread that cancellation cannot reach.

A blocking ``readline`` in a worker thread keeps a server alive after SIGINT
(the thread sits in ``read`` while stdin stays open, and interpreter exit
joins it). Here the event loop waits for the descriptor to become readable
and only then reads what is there, so a cancelled server stops at once.
Descriptors the loop cannot poll (a regular file) are read in a thread: such
reads never block for long.
"""

from __future__ import annotations

import os
from typing import BinaryIO

import anyio
import anyio.to_thread

__all__ = ["TOO_LONG", "LineReader"]

_CHUNK = 1 << 16


class _TooLong:
    """Returned by `LineReader.readline` for a line longer than the limit (skipped whole)."""

    def __repr__(self) -> str:
        return "TOO_LONG"


TOO_LONG = _TooLong()


class LineReader:
    """Lines (``\\n`` included when present) from a binary stream; None at EOF."""

    def __init__(self, source: BinaryIO, max_line_bytes: int) -> None:
        self._source = source
        self._max = max_line_bytes
        self._buf = bytearray()
        #: How much of ``_buf`` is known to hold no newline: each search starts there, so a long
        #: line costs one scan, not one per chunk (red team round 26: a 60 MB line took 3 s of CPU).
        self._scanned = 0
        self._eof = False
        self._pollable: bool | None = None
        try:
            self._fd: int | None = source.fileno()
        except (AttributeError, OSError, ValueError):
            self._fd = None  # an in-memory stream: read it directly

    async def readline(self) -> bytes | _TooLong | None:
        skipping = False
        while True:
            cut = self._buf.find(b"\n", self._scanned)
            if cut >= 0:
                with memoryview(self._buf) as view:  # one copy of the line, not two (round 40)
                    line = bytes(view[: cut + 1])
                del self._buf[: cut + 1]
                self._scanned = 0
                if skipping or len(line) > self._max + 1:
                    return TOO_LONG
                return line
            self._scanned = len(self._buf)
            if len(self._buf) > self._max:
                skipping = True
                self._buf.clear()
                self._scanned = 0
            if self._eof:
                if not self._buf:
                    return TOO_LONG if skipping else None
                line = bytes(self._buf)
                self._buf.clear()
                self._scanned = 0
                return TOO_LONG if skipping else line
            chunk = await self._read()
            if not chunk:
                self._eof = True
            self._buf += chunk

    async def _read(self) -> bytes:
        fd = self._fd
        if fd is None:
            return self._source.read(_CHUNK) or b""
        if self._pollable is not False:
            try:
                await anyio.wait_readable(fd)
                self._pollable = True
            except (OSError, ValueError, NotImplementedError):
                self._pollable = False  # e.g. a regular file: the loop cannot poll it
            else:
                return os.read(fd, _CHUNK)
        return await anyio.to_thread.run_sync(os.read, fd, _CHUNK, abandon_on_cancel=True)
