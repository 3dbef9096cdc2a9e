"""Reading a person's answer from a terminal's descriptor with a deadline, taking nothing more.

Why (red team round 26): `TerminalApprover` read its answer with ``readline`` in a worker thread.
Nobody answering held the call forever, and a thread blocked in ``readline`` cannot be abandoned:
it would take the next line typed, meant for the next prompt or for the program. Here the waiting
is ``select`` on the descriptor in the asker's own loop, which ends at the deadline or when the
ask is withdrawn; bytes are read one at a time, so nothing past the answer's newline is taken.
An answer typed before its question was shown (a late answer to an expired ask, type-ahead, a
terminal's reply to an escape sequence) is discarded when the next question is put.
"""

from __future__ import annotations

import os
import select
import threading
import time

__all__ = ["AnswerExpired", "AnswerWithdrawn", "discard_pending", "read_line"]

#: How often a waiting read looks whether its ask was withdrawn.
_POLL_S = 0.05
#: The longest line kept (an edited input as JSON); the rest of a longer line is read and dropped.
_MAX_LINE = 1 << 20


class AnswerExpired(Exception):
    """Raised by `read_line` when no whole line came before the deadline."""


class AnswerWithdrawn(Exception):
    """Raised by `read_line` when ``stop`` was set (the call asking was cancelled)."""


def discard_pending(fd: int, *, stale: bool) -> None:
    """Drop what was typed before the question that comes now: a terminal's whole input queue
    (a partial line too); on a pipe or file, where answers may be written ahead on purpose, only
    after a ``stale`` ask (one that expired or was withdrawn: its answer may still come), what can
    be read at once without waiting."""
    try:
        if os.isatty(fd):
            import termios  # POSIX only, as this whole reader (the approver reads by line elsewhere)

            termios.tcflush(fd, termios.TCIFLUSH)
            return
        while stale and select.select([fd], [], [], 0)[0]:
            if not os.read(fd, 65536):
                return
    except OSError:
        return


def read_line(fd: int, deadline: float, stop: threading.Event) -> bytes | None:
    """One line from ``fd`` (without its newline), None at end of input.

    Raises `AnswerExpired` at ``deadline`` (`time.monotonic`) and `AnswerWithdrawn` when ``stop``
    is set; the bytes of a partial line read so far are dropped then."""
    line = bytearray()
    while True:
        left = deadline - time.monotonic()
        if stop.is_set():
            raise AnswerWithdrawn
        if left <= 0:
            raise AnswerExpired
        try:
            ready = select.select([fd], [], [], min(left, _POLL_S))[0]
            byte = os.read(fd, 1) if ready else None
        except OSError:  # EIO: the terminal hung up; EBADF: closed under us
            byte = b""
        if byte is None:
            continue
        if not byte:
            return bytes(line) if line else None
        if byte == b"\n":
            return bytes(line)
        if len(line) < _MAX_LINE:
            line += byte
