"""Blocking file work of the host-side tools: in a worker thread, under a deadline, abandonable.

A workspace on a network or FUSE mount that stops answering (a dead NFS server, an sshfs
whose peer went away) blocks ``openat``, ``stat`` and ``read`` in the kernel, uninterruptibly
and for as long as it hangs. Run in the event loop, one path resolution froze every session
of the process; run in a plain worker thread, the call waited for ever and no interrupt
reached it (red team, round 15). `off_loop` gives such work `FILE_IO_TIMEOUT_S`, returns on
cancellation at once, and fails the call with an error that says what happened. A thread
left blocked cannot be killed: it is counted, and past `MAX_STUCK` of them new file work is
refused at once rather than piling up more threads on the same dead mount. A thread counts as
stuck only once it has run for the whole `FILE_IO_TIMEOUT_S`: one whose caller went away sooner (a
batch task's block timeout, an interrupt) and whose work ends by itself is no hung mount, and such
threads let one batch task have every task's file tools refused (red team round 44, batch2).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import anyio

from shellrt.protocol import ToolExecutionError

__all__ = ["FILE_IO_TIMEOUT_S", "MAX_STUCK", "inner_deadline", "off_loop", "stuck_threads"]

#: Seconds one blocking file operation of a tool may take (a local disk answers in far less).
FILE_IO_TIMEOUT_S = 30.0
#: Abandoned operations still blocked, past which new ones are refused at once.
MAX_STUCK = 16

T = TypeVar("T")

_lock = threading.Lock()
#: Abandoned operations still running: their start (`time.monotonic`), by a number of their own.
_abandoned: dict[int, float] = {}
_numbers = itertools.count()


def inner_deadline(limit: float) -> float:
    """The deadline of work inside `off_loop` that can stop itself (a child process killed at it):
    at most ``limit`` and two thirds of `FILE_IO_TIMEOUT_S`, so its own error (what was slow, what to
    do) comes first and its thread is never counted stuck. A PDF child given the same 30 s lost the
    race: "the file system does not answer", one more stuck thread (red team round 33)."""
    return min(limit, FILE_IO_TIMEOUT_S * 2 / 3)


def stuck_threads() -> int:
    """How many abandoned file operations are still running after the whole `FILE_IO_TIMEOUT_S`."""
    oldest = time.monotonic() - FILE_IO_TIMEOUT_S
    with _lock:
        return sum(1 for started in _abandoned.values() if started <= oldest)


def _refuse_when_full(what: str) -> None:
    stuck = stuck_threads()
    if stuck >= MAX_STUCK:
        raise ToolExecutionError(
            f"{what} was not started: {stuck} earlier file operations are still blocked on a file "
            "system that does not answer (a hung network or FUSE mount?). Fix or unmount it "
            "(umount -l), or work on files elsewhere."
        )


async def off_loop(func: Callable[..., T], *args: object, what: str) -> T:
    """``func(*args)`` in a worker thread, given `FILE_IO_TIMEOUT_S`; ``what`` names it in errors."""
    _refuse_when_full(what)
    number, started = next(_numbers), time.monotonic()
    state = {"abandoned": False, "done": False}

    def run() -> T:
        try:
            return func(*args)
        finally:
            with _lock:
                state["done"] = True
                _abandoned.pop(number, None)

    def abandon() -> None:
        with _lock:
            if not state["done"] and not state["abandoned"]:
                state["abandoned"] = True
                _abandoned[number] = started

    timeout = FILE_IO_TIMEOUT_S
    try:
        with anyio.move_on_after(timeout):
            return await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
    except BaseException:
        abandon()  # cancelled (an interrupt, the session closing): the thread may still be blocked
        raise
    abandon()
    raise ToolExecutionError(
        f"{what} did not finish within {timeout:g} s: the file system does not answer (a hung "
        "network or FUSE mount?). It was abandoned; a write may still complete later. Check the "
        "mount, or work on files elsewhere."
    ) from None
