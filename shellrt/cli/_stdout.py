"""Plain-mode stdout: closing it quietly when its reader went away (``| head``), and saying what was lost."""

from __future__ import annotations

import math
import os
import sys
import time
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from shellrt.cli._tty_filter import TerminalOutput

__all__ = ["EXIT_OUTPUT_LOST", "EchoStalled", "echo_until", "report_loss", "silence_stdout", "terminal_output"]

#: ``shellrt run``'s exit status when output was lost (what and why on stderr).
EXIT_OUTPUT_LOST = 74


#: Bytes a pipe takes at once without blocking once `poll` says it has room (``PIPE_BUF``).
_PIPE_BUF = 4096


class EchoStalled(Exception):
    """Raised by `echo_until` when the stream's reader took nothing more by the command's deadline."""


def echo_until(target: BinaryIO, data: bytes, deadline: float) -> None:
    """Write ``data`` to ``target``, waiting for a reader that does not read only until ``deadline``
    (`time.monotonic`); raises `EchoStalled` past it. A blocking write held ``shellrt run``'s loop
    (and the lean path's) while the reader stalled, and its command ran on past ``--timeout`` for
    as long as it did: ``| (sleep 10)`` gave a 2 s timeout 10 s (red team round 42, supervisor2)."""
    target.flush()
    if deadline == math.inf:
        target.write(data)
        target.flush()
        return
    import select  # only a run with a timeout waits this way (`shellrt classify` keeps its budget)

    fd = target.fileno()
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    view = memoryview(data)
    while view:
        left_ms = (deadline - time.monotonic()) * 1000
        if left_ms <= 0 or not poller.poll(min(left_ms, 1 << 30)):
            raise EchoStalled
        view = view[os.write(fd, view[:_PIPE_BUF]) :]


def silence_stdout() -> None:
    """Point fd 1 at /dev/null so the interpreter's final flush cannot raise (or print a traceback)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def report_loss(lost: str | None, capture_failed: bool, code: int) -> int:
    """Plain mode: stdout/stderr got every byte unless capturing failed; say what else happened.

    Shared by the lean local path and the full path, so both end the same way.
    """
    if not lost:
        return code
    if capture_failed:
        print(f"shellrt run: output lost: {lost}", file=sys.stderr)
        return EXIT_OUTPUT_LOST
    # Only the on-disk copy is short: the terminal/pipe received everything.
    print(
        f"shellrt run: note: every byte was streamed, but the spool copy is incomplete: {lost}",
        file=sys.stderr,
    )
    return code


def terminal_output() -> TerminalOutput | None:
    """The filter for a run whose stdout or stderr is a terminal, else None (every byte goes on).

    Loaded only then: most ``shellrt run`` calls write to pipes and keep their import budget.
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream.isatty():
                from shellrt.cli._tty_filter import TerminalOutput

                return TerminalOutput()
        except (AttributeError, ValueError):
            continue
    return None
