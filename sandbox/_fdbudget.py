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
half of the reserve. The rest of the reserve stays the host's.

A share shrinks as sessions arrive, but connections a session opened while its share was larger
stay open: two sessions that filled the pool and the half reserve first left a later session not
one connection for as long as they ran (red team, round 42). So a proxy below its share that
finds the pool full takes the room from the proxy furthest over its share: that proxy's oldest
connection is ended (`Slot.shed`), never one of a proxy within its share.

Fds are not all a connection holds: its buffers hold host memory, ~550 KB for a tunnel whose
client does not read while its server sends. At a high fd limit (20,000 here; a container's
default is 1,048,576) each session could hold 512 such tunnels, ~280 MB, and a few hostile
sessions the process's whole memory (red team, round 42: the host process, every session's,
killed by the OOM killer). So the connections of all proxies are also bounded by a part of the
memory this process may use (`MEMORY_PART` of `usable_memory`, at `BYTES_PER_CONNECTION` each),
shared and taken back the same way.
"""

from __future__ import annotations

import resource
import threading
import time
from collections.abc import Callable

from sandbox._hostmem import usable_memory

__all__ = ["BUDGET", "FdBudget", "Slot"]

#: Fds one admitted connection holds in the host (the client's and the upstream's).
FDS_PER_CONNECTION = 2
#: The fewest connections a proxy may always hold, however many sessions share the pool.
MIN_SHARE = 8
#: Host memory one connection may hold in its buffers at worst, rounded up (measured, round 42:
#: 551 KB in the proxy's process for a tunnel whose client does not read while its server sends).
BYTES_PER_CONNECTION = 640 * 1024
#: The proxies of one process hold at most 1 / this of the memory it may use (the host's, or its
#: cgroup's limit when lower) in connection buffers.
MEMORY_PART = 4
#: Seconds the memory this process may use is taken as known (a cgroup's limit may change).
_MEMORY_SECONDS = 10.0


class Slot:
    """One admitted connection's place in the pool; ``shed`` ends that connection (called from
    another proxy's thread: it must only hand the work to the connection's own loop)."""

    __slots__ = ("live", "proxy", "shed")

    def __init__(self, proxy: int, shed: Callable[[], None]) -> None:
        self.proxy = proxy
        self.shed = shed
        self.live = True


class FdBudget:
    """Connections admitted across every proxy of the process (thread-safe: one loop per proxy)."""

    def __init__(self, soft_limit: int | None = None, memory_bytes: int | None = None) -> None:
        self._lock = threading.Lock()
        self._soft = soft_limit
        self._memory = memory_bytes
        self._memory_read = (0.0, 0)  # (when, bytes) of the last `usable_memory`
        #: proxy id -> its live slots, oldest first (a dict keeps insertion order).
        self._held: dict[int, dict[Slot, None]] = {}
        self.total = 0

    def _limits(self) -> tuple[int, int]:
        """(pool, ceiling) in connections: the pool shares are cut from, and the most admitted at
        once (the pool and half the fd reserve, and no more than the memory part holds)."""
        soft = self._soft if self._soft is not None else resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft == resource.RLIM_INFINITY or soft > 1 << 20:
            soft = 1 << 20
        reserve = max(256, soft // 4)
        pool = max(MIN_SHARE, (soft - reserve) // FDS_PER_CONNECTION)
        ceiling = pool + reserve // FDS_PER_CONNECTION // 2
        by_memory = max(MIN_SHARE, self._usable_memory() // MEMORY_PART // BYTES_PER_CONNECTION)
        if by_memory < ceiling:
            ceiling = by_memory
            pool = min(pool, max(MIN_SHARE, by_memory * 3 // 4))
        return pool, ceiling

    def _usable_memory(self) -> int:
        if self._memory is not None:
            return self._memory
        when, known = self._memory_read
        now = time.monotonic()
        if not known or now - when > _MEMORY_SECONDS:
            known = usable_memory()
            self._memory_read = (now, known)
        return known

    def register(self, proxy: int) -> None:
        with self._lock:
            self._held.setdefault(proxy, {})

    def unregister(self, proxy: int) -> None:
        with self._lock:
            for slot in self._held.pop(proxy, {}):
                slot.live = False
                self.total -= 1

    def held(self, proxy: int) -> int:
        """How many connections ``proxy`` holds now."""
        with self._lock:
            return len(self._held.get(proxy, {}))

    def share(self) -> int:
        """What one proxy may hold now."""
        pool, _ = self._limits()
        with self._lock:
            return max(MIN_SHARE, pool // max(1, len(self._held)))

    def admit(self, proxy: int, shed: Callable[[], None]) -> Slot | str:
        """Take one connection for ``proxy`` (``shed`` ends it, should another proxy need the room):
        its `Slot`, or why not (for the 503)."""
        pool, ceiling = self._limits()
        with self._lock:
            mine = self._held.setdefault(proxy, {})
            share = max(MIN_SHARE, pool // max(1, len(self._held)))
            if len(mine) >= share:
                return (
                    f"this session has {len(mine)} connections open, its share of the host's file "
                    f"descriptors ({len(self._held)} proxied sessions share them)"
                )
            taken = None
            if self.total >= ceiling:
                taken = self._greediest(share)
                if taken is None:
                    return "the host process is short of file descriptors"
                self._drop(taken)
            slot = Slot(proxy, shed)
            mine[slot] = None
            self.total += 1
        if taken is not None:
            taken.shed()
        return slot

    def _greediest(self, share: int) -> Slot | None:
        """The oldest connection of the proxy furthest over ``share``; None when none is over it."""
        over, held = max(((len(s) - share, s) for s in self._held.values()), key=lambda o: o[0], default=(0, {}))
        return next(iter(held)) if over > 0 else None

    def _drop(self, slot: Slot) -> None:
        if slot.live:
            slot.live = False
            del self._held[slot.proxy][slot]
            self.total -= 1

    def release(self, slot: Slot) -> None:
        """Give ``slot`` back (its connection ended); nothing when it was shed or its proxy unregistered."""
        with self._lock:
            self._drop(slot)


#: The process's one budget.
BUDGET = FdBudget()
