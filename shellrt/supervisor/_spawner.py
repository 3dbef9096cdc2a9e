"""Running pumps that must outlive the call that started them.

A command's output pump is started detached so that a foreground command can
be handed to the background on timeout without interrupting its stream, and
so background tasks keep streaming after ``start_background`` returns. Under
``async with Supervisor(...)`` the pumps live in the supervisor's task group
(any anyio backend); otherwise, on asyncio, they are plain loop tasks that
`Supervisor.close` waits for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from anyio.abc import TaskGroup

__all__ = ["Spawner"]


class Spawner:
    """Starts detached coroutines in a task group when one is attached, else as asyncio tasks."""

    def __init__(self) -> None:
        self.task_group: TaskGroup | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def spawn(self, func: Callable[[], Coroutine[Any, Any, None]]) -> None:
        if self.task_group is not None:
            self.task_group.start_soon(func)
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(
                "outside asyncio, use the supervisor as `async with Supervisor(...) as sup:`"
            ) from None

        async def _run() -> None:
            await func()

        task = loop.create_task(_run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @property
    def pending(self) -> int:
        """Detached asyncio tasks still running."""
        return len(self._tasks)
