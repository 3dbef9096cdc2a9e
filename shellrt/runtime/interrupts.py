"""One watcher of a session's abort event, for every message in flight.

An interrupt (``ctx.abort`` set) must reach the calls that are running: calls
of cancel-type tools are cancelled, calls not started yet are answered "not
run". A watcher task per message did that at the price of a task start and a
cancellation (anyio formats the cancelling task's repr) per message — a tenth
of a whole call. The session keeps one watcher instead; each message registers
a listener for as long as it runs.

The session replaces a set abort event with a fresh one when the next message
starts (`Runtime.stream`) and calls `rearm`, so the watcher follows it.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio

from shellrt.protocol import ToolContext

__all__ = ["InterruptWatch"]


class InterruptWatch:
    """Calls every registered listener when ``ctx.abort`` is set; run `run` in a task of the session."""

    def __init__(self, ctx: ToolContext) -> None:
        self._ctx = ctx
        self._listeners: dict[int, Callable[[], None]] = {}
        self._next = 0
        self._rearmed = anyio.Event()

    async def run(self) -> None:
        """Watch until cancelled (the session's close)."""
        while True:
            event = self._ctx.abort
            await event.wait()
            for listener in list(self._listeners.values()):
                listener()
            while self._ctx.abort is event:  # handled: wait for the next message's fresh event
                await self._rearmed.wait()
                self._rearmed = anyio.Event()

    def rearm(self) -> None:
        """A message starts: once the handled event was replaced by a fresh one, watch that one.

        Harmless at any time (the watcher checks which event is current), so the
        session calls it at the start of every message.
        """
        self._rearmed.set()

    def listening(self, listener: Callable[[], None]) -> _Listening:
        """Call ``listener`` on an interrupt while the ``with`` block runs."""
        self._next += 1
        return _Listening(self._listeners, self._next, listener)


class _Listening:
    """A listener registered for the duration of a ``with`` block (a class: no generator per call)."""

    __slots__ = ("_key", "_listener", "_listeners")

    def __init__(
        self, listeners: dict[int, Callable[[], None]], key: int, listener: Callable[[], None]
    ) -> None:
        self._listeners = listeners
        self._key = key
        self._listener = listener

    def __enter__(self) -> None:
        self._listeners[self._key] = self._listener

    def __exit__(self, *exc_info: object) -> None:
        self._listeners.pop(self._key, None)
