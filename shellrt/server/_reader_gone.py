"""Noticing that nobody reads a stdio server's answers any more, without writing one.

Why: a client killed (or one that closed its read end) is seen by a stdio server only
when an answer's write fails. Until then the call in flight ran to its timeout (up to
10 minutes), its sandbox and the session's background tasks with it, and a JSONL server
read on (red team round 36: a SIGKILLed client left both commands of a session running
20 s later, and for as long as the foreground one's timeout). The kernel knows at once:
a pipe whose readers are all gone polls ``POLLERR``, a socket whose peer closed polls
``POLLHUP`` (libuv clients such as Node's give socket pairs), a terminal hung up too.
A regular file, ``/dev/null`` or a pipe someone still reads never does.
"""

from __future__ import annotations

import select

import anyio

__all__ = ["CHECK_S", "reader_gone", "wait_reader_gone"]

#: How often the descriptor is polled (one ``poll`` system call, no wait).
CHECK_S = 0.2
_GONE = select.POLLERR | select.POLLHUP | select.POLLNVAL


def reader_gone(fd: int) -> bool:
    """Whether writes to ``fd`` can reach no reader any more (never blocks)."""
    poller = select.poll()
    poller.register(fd, 0)  # no events asked: only the error and hang-up conditions answer
    try:
        ready = poller.poll(0)
    except OSError:
        return True
    return any(mask & _GONE for _, mask in ready)


async def wait_reader_gone(fd: int) -> None:
    """Return once ``fd`` has no reader (see `reader_gone`); wait for ever otherwise. Polled: the
    kernel raises no event for a reader gone that anyio can wait on without asking for POLLOUT
    (which a pipe with room answers at once)."""
    while True:
        if reader_gone(fd):
            return
        await anyio.sleep(CHECK_S)
