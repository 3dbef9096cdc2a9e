"""A foreground command's timeout while its output is pumped inline, without a cancel scope.

`Supervisor.run` reads a quick command's output in the caller's task (`Execution.run_inline`),
and most commands end there. Under ``anyio.move_on_after`` that costs a cancel scope per command
(~44k instructions to make, enter and leave on asyncio, more than the loop timer under it). What
the scope does on timeout is stop the wait so the whole tree can be killed; here the timer kills
the tree itself (`Execution.kill`, the same kill), and the wait then ends because the process
did. Nothing is cancelled, so no shielded section of a backend can be cut short by it.

Only on asyncio (the timer is the loop's own) and only where the timeout ends the command: a
command moved to the background on timeout must not be killed, so that path keeps its scope.
"""

from __future__ import annotations

import asyncio

from shellrt.supervisor.execution import Execution

__all__ = ["KillingDeadline"]


class KillingDeadline:
    """Kills ``execution``'s tree when ``seconds`` have passed, unless `disarm` came first."""

    __slots__ = ("_execution", "_handle", "_kill", "_loop", "_until")

    def __init__(self, loop: asyncio.AbstractEventLoop, execution: Execution, seconds: float) -> None:
        self._loop = loop
        self._execution = execution
        self._until = loop.time() + seconds
        self._kill: asyncio.Task[None] | None = None
        self._handle: asyncio.TimerHandle | None = loop.call_at(self._until, self._fire)

    @property
    def fired(self) -> bool:
        """The deadline passed while armed: the tree is being (or has been) killed."""
        return self._kill is not None

    def left(self) -> float:
        """Seconds until the deadline (<= 0 once it passed)."""
        return self._until - self._loop.time()

    def disarm(self) -> None:
        """No kill from now on (idempotent); one already started runs to its end."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    async def killed(self) -> None:
        """Wait until the kill the deadline started is over (the whole tree is gone)."""
        if self._kill is not None:
            await asyncio.shield(self._kill)

    def _fire(self) -> None:
        self._handle = None
        # A plain loop task: this runs in a timer callback, outside any task or task group.
        self._kill = self._loop.create_task(self._execution.kill())
