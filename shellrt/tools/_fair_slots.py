"""Slots shared by every session of a process, handed out fairly: a freed slot goes to the waiting
session that holds the fewest, the earliest asker first among equals, never to whoever asks next.

Why: WebFetch's page converter has `MAX_BUSY` workers for the whole process (each may take
512 MiB). A semaphore let two sessions keep all four busy with pages built to convert slowly,
asking again the moment one ended, while another session's page waited its whole deadline and
came back unconverted (round 36's Left; round 37). With this, a session holding none is served
at the next slot freed, whoever else waits; `per_key` caps what one session holds.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter

__all__ = ["FairSlots"]


class FairSlots:
    """``count`` slots, at most ``per_key`` of them held by one key (a session) at once."""

    def __init__(self, count: int, per_key: int) -> None:
        self.count = count
        self.per_key = per_key
        self._held: Counter[str] = Counter()
        self._waiting: dict[int, str] = {}  # arrival number -> key
        self._numbers = itertools.count()
        self._cond = threading.Condition()

    def acquire(self, key: str, timeout: float) -> bool:
        """Take a slot for ``key`` within ``timeout`` seconds (blocking); False when none came."""
        until = time.monotonic() + max(0.0, timeout)
        with self._cond:
            number = next(self._numbers)
            self._waiting[number] = key
            try:
                while not self._next_is(number):
                    left = until - time.monotonic()
                    if left <= 0:
                        return False
                    self._cond.wait(left)
                self._held[key] += 1
                return True
            finally:
                del self._waiting[number]
                self._cond.notify_all()  # the next in line may be another now

    def release(self, key: str) -> None:
        with self._cond:
            self._held[key] -= 1
            if self._held[key] <= 0:
                del self._held[key]
            self._cond.notify_all()

    def held(self, key: str) -> int:
        with self._cond:
            return self._held[key]

    def _next_is(self, number: int) -> bool:  # under the condition's lock
        if sum(self._held.values()) >= self.count:
            return False
        eligible = [(self._held[k], n) for n, k in self._waiting.items() if self._held[k] < self.per_key]
        return bool(eligible) and min(eligible)[1] == number
