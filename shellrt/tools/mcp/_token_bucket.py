"""A token bucket: how many events may pass now, refilled at a steady rate up to a burst.

Why: an MCP server's stderr is shown on the operator's terminal (`_stderr_tty`); a server that
floods it (a loop printing, a hostile package) buried shellrt's own lines and held the terminal
(red team round 31, mend). Lines past the bucket are counted, not shown.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["TokenBucket"]


class TokenBucket:
    """``burst`` tokens at first, ``rate`` more per second up to ``burst``; `take` spends one."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError(f"a token bucket needs rate > 0 and burst >= 1 (got {rate}, {burst})")
        self._rate = rate
        self._burst = float(burst)
        self._tokens = float(burst)
        self._clock = clock
        self._last = clock()

    def take(self) -> bool:
        """Whether one event may pass now (and spend its token)."""
        now = self._clock()
        self._tokens = min(self._burst, self._tokens + (now - self._last) * self._rate)
        self._last = now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True
