"""Host ends of the FIFOs a containerised command reads and writes.

The docker backend bind-mounts a private host directory into the container and
creates one FIFO per stream there; the command inside opens them, the host reads
them directly. Data thus flows kernel pipe to kernel pipe: no framing, no base64,
no copy through the daemon, and memory stays bounded by the pipe buffer and the
caller's read size whatever the command prints.

The directory is closed to commands (owned by the executor's uid, mode 0700,
mounted read-only), but every open here still uses ``O_NOFOLLOW`` and checks
that what it opened is a FIFO: nothing in the container can turn a host read
into a read of some other host file.
"""

from __future__ import annotations

import errno
import os
import stat

import anyio

from sandbox._fdstream import FdReceiveStream, FdSendStream

__all__ = ["FifoReceiveStream", "FifoSendStream", "make_fifo", "open_fifo"]


def make_fifo(path: str) -> None:
    """Create a FIFO only its owner may open: the executor opens it through CAP_DAC_OVERRIDE and
    hands the open end to the command, which never needs to name it."""
    os.mkfifo(path, 0o600)


def open_fifo(path: str, flags: int) -> int:
    """Open a FIFO non-blocking without following symlinks; refuse anything that is not a FIFO."""
    fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    if not stat.S_ISFIFO(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a FIFO", path)
    return fd


class FifoReceiveStream(FdReceiveStream):
    """Reads a FIFO's read end without blocking the event loop (EOF -> `anyio.EndOfStream`).

    The read end is closed at EOF (every later read says EOF again) and, as every `FdReceiveStream`,
    when the stream is collected: a caller that reads a command to its end, or drops it, without ``aclose()`` (Grep's
    sandbox runner, `DockerBackend.run_capture`) left two descriptors open in the host process for
    good, one command after another up to its ``RLIMIT_NOFILE`` (red team round 37). Closing is
    `FdReceiveStream.close`'s: a task waiting on the descriptor is woken first (round 38)."""

    def receive_nowait(self, max_bytes: int = 65536) -> bytes | None:
        if self._fd is None and self.at_eof:
            raise anyio.EndOfStream
        try:
            return super().receive_nowait(max_bytes)
        except anyio.EndOfStream:
            self.close()
            raise


class FifoSendStream(FdSendStream):
    """Writes a FIFO without blocking the event loop; closing it gives the reader EOF.

    `DockerProcess` closes it when the command's end is told, from another task than the one
    feeding it: `FdSendStream.close` wakes that feeder (`ClosedResourceError`). The old close here
    skipped `anyio.notify_closing`, and a feeder waiting for room in the FIFO of a command that
    ended holding its input back (its read end handed to a sibling) waited for ever (round 38)."""
