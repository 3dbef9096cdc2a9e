"""The host process's file descriptors, shared fairly by the network proxies of its sessions.

Why: every session with network mode ``proxied`` has its own `FilteringProxy`, in the one host
process (a `Runtime` with several sessions, the batch runner, ``shellrt serve``). Each capped
itself at 512 connections, two host fds each (client and upstream), and none knew of the
others: one session's command opening tunnels to a listed host took the whole process's
``RLIMIT_NOFILE`` (1024 by default on many systems), and then every other session's traffic,
the host's own files, pipes and spawns failed with ``EMFILE`` (red team, round 20).

Now connections are admitted against a pool of the soft limit, less a reserve the host keeps
for everything else (a quarter, at least 256 fds). Each live proxy may hold its share of the
pool (the pool over the number of live proxies); a proxy below its share may also dip into
half of the reserve, so a session that started after a greedy one is not starved by
connections the greedy one took while it was alone. The rest of the reserve stays the host's.
"""

from __future__ import annotations

import resource
import threading

__all__ = ["BUDGET", "FdBudget"]

#: Fds one admitted connection holds in the host (the client's and the upstream's).
FDS_PER_CONNECTION = 2
#: The fewest connections a proxy may always hold, however many sessions share the pool.
MIN_SHARE = 8


class FdBudget:
    """Connections admitted across every proxy of the process (thread-safe: one loop per proxy)."""

    def __init__(self, soft_limit: int | None = None) -> None:
        self._lock = threading.Lock()
        self._soft = soft_limit
        self._held: dict[int, int] = {}  # proxy id -> connections held
        self.total = 0

    def _limits(self) -> tuple[int, int]:
        """(pool, reserve) in connections, from the soft ``RLIMIT_NOFILE`` now."""
        soft = self._soft if self._soft is not None else resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft == resource.RLIM_INFINITY or soft > 1 << 20:
            soft = 1 << 20
        reserve = max(256, soft // 4)
        return max(MIN_SHARE, (soft - reserve) // FDS_PER_CONNECTION), reserve // FDS_PER_CONNECTION

    def register(self, proxy: int) -> None:
        with self._lock:
            self._held.setdefault(proxy, 0)

    def unregister(self, proxy: int) -> None:
        with self._lock:
            self.total -= self._held.pop(proxy, 0)

    def share(self) -> int:
        """What one proxy may hold now."""
        pool, _ = self._limits()
        with self._lock:
            return max(MIN_SHARE, pool // max(1, len(self._held)))

    def admit(self, proxy: int) -> str | None:
        """Take one connection for ``proxy``; None when admitted, else why not (for the 503)."""
        pool, reserve = self._limits()
        with self._lock:
            held = self._held.get(proxy, 0)
            share = max(MIN_SHARE, pool // max(1, len(self._held)))
            if held >= share:
                return (
                    f"this session has {held} connections open, its share of the host's file "
                    f"descriptors ({len(self._held)} proxied sessions share them)"
                )
            if self.total >= pool + reserve // 2:
                return "the host process is short of file descriptors"
            self._held[proxy] = held + 1
            self.total += 1
            return None

    def release(self, proxy: int) -> None:
        with self._lock:
            if self._held.get(proxy, 0) > 0:
                self._held[proxy] -= 1
                self.total -= 1


#: The process's one budget.
BUDGET = FdBudget()
