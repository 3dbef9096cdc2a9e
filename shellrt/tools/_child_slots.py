"""At most N costly children at once, waiting at most a bound for a slot, else a refusal.

Why one helper: Read's parse children (`_parse_slots`) and TaskOutput's filter children
(`task_output`) each may hold a core for their deadline, and their tools are concurrency safe;
both bound how many run at once and how long a call waits (half its deadline, so a child that
starts has the other half), and refuse saying what to do. The sync face (from worker threads)
counts per process; the async face counts per event loop (a ``serve`` process has one).
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager

import anyio
from anyio.lowlevel import RunVar

from shellrt.protocol import ToolExecutionError

__all__ = ["ChildSlots"]


class ChildSlots:
    """``count`` slots; `held` (blocking, process-wide) and `held_async` (per event loop)."""

    def __init__(self, name: str, count: int) -> None:
        self.count = count
        self._threads = threading.BoundedSemaphore(count)
        self._loops: RunVar[anyio.CapacityLimiter] = RunVar(name)

    @contextmanager
    def held(self, wait_s: float, refusal: Callable[[], str]) -> Iterator[None]:
        """Hold a slot (call it from a worker thread); past ``wait_s`` raise `ToolExecutionError`
        with ``refusal()``."""
        if not self._threads.acquire(timeout=wait_s):
            raise ToolExecutionError(refusal())
        try:
            yield
        finally:
            self._threads.release()

    @asynccontextmanager
    async def held_async(self, wait_s: float, refusal: Callable[[], str]) -> AsyncIterator[None]:
        """`held` for the event loop: the loop's own limiter."""
        try:
            limiter = self._loops.get()
        except LookupError:
            limiter = anyio.CapacityLimiter(self.count)
            self._loops.set(limiter)
        acquired = False
        with anyio.move_on_after(wait_s):
            await limiter.acquire()
            acquired = True
        if not acquired:
            raise ToolExecutionError(refusal())
        try:
            yield
        finally:
            limiter.release()
