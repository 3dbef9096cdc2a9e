"""Cost bounds that hold on a loaded machine (round 49, timing).

A wall-clock bound counts the time a test waited for a core: CI's parallel lane (3 xdist workers on
2 cores, load 4-6; helpers beside it at 15-30) stretched a 0.4 s read to 0.57 s and failed a
landing. Work a test does in its own process (and in the children it waits for) is measured here
in CPU seconds instead (`cpu_seconds`): user + system time of every thread of this process and of
its reaped children (`getrusage`, microseconds; `os.times` counts 10 ms ticks). Waiting for a core
adds nothing to it; a busy SMT sibling or a cold cache still stretches it a little, so a bound on it
is kept >= 10x the idle cost too. Commands that must overlap are counted running at once
(`peak_running`), not timed together.

What CPU time does not see: work in a process the test did not wait for (a server, a daemon, a
sandbox's reaper) -- a test of such work bounds a count, or a wall-clock time >= 10x its idle time
and >= 3 s (round 49's rules), below what the attack it pins cost.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

__all__ = ["cpu_seconds", "peak_running", "running"]

T = TypeVar("T")


def cpu_seconds() -> float:
    """CPU seconds this process and its reaped children have used so far: subtract two readings."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def running(argv: list[str]) -> int:
    """How many processes of this machine run exactly ``argv`` now (their ``/proc/<pid>/cmdline``):
    a count that shows commands overlapped, where a wall-clock total only suggests it."""
    want = b"".join(arg.encode() + b"\0" for arg in argv)
    count = 0
    with os.scandir("/proc") as entries:
        for entry in entries:
            if entry.name.isdigit():
                try:
                    with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                        count += f.read() == want
                except OSError:
                    pass  # gone meanwhile
    return count


async def peak_running(argv: list[str], work: Callable[[], Awaitable[T]]) -> tuple[T, int]:
    """Run ``work()`` and return what it returned with the most processes running ``argv`` at once
    meanwhile (polled every 10 ms: an overlap of a second is seen however loaded the machine).
    ``argv`` must be this test's own (an odd sleep length): another test's processes count too."""
    done: list[T] = []
    peak = 0

    async def run() -> None:
        done.append(await work())

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        while not done:
            peak = max(peak, running(argv))
            await anyio.sleep(0.01)
    return done[0], peak
