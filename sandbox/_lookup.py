"""Host-name lookups of every host-side fetch (the filtering proxy, WebFetch): each in a thread of
its own, bounded per session and per process.

Why: a lookup cannot be cancelled. WebFetch ran it in the event loop's default executor
(``anyio.getaddrinfo``), ``min(32, cpus + 4)`` threads shared by the whole process (6 on 2
cores), the proxy in its own loop's; a deadline ended the wait, not the thread. Fetches of names
whose name server never answers filled that pool for the resolver's whole timeout: every later
fetch of the process (another session's, an IP literal's) queued behind them, and a proxy's
close waited for them (red team, round 36). Here an IP literal needs no lookup, a name is
resolved in a thread no other lookup waits for, and the lookups still running -- abandoned ones
included, until the resolver gives up -- are counted: past `PER_SESSION` for one key (a
session, a proxy), or `PER_PROCESS` in all, a fetch is refused at once (a clear error) instead
of starting one more thread.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections import Counter
from typing import Any

import anyio

__all__ = ["PER_PROCESS", "PER_SESSION", "LookupsBusy", "lookup"]

#: Lookups one session may have running (a session runs at most 10 calls at once).
PER_SESSION = 8
#: Lookups the process may have running, every session and proxy together: threads name servers
#: that never answer can hold (a batch process runs many sessions: 32 of them at their bound).
PER_PROCESS = 256

_lock = threading.Lock()
_running: Counter[str] = Counter()


class LookupsBusy(OSError):
    """Too many lookups of this session (or of the process) are still waiting on DNS."""


class _Ticket:
    """One counted lookup: released once, by the thread that ran it or by a caller that left first."""

    __slots__ = ("released", "session", "started")

    def __init__(self, session: str) -> None:
        self.session = session
        self.started = False
        self.released = False

    def release(self) -> None:  # under _lock
        if not self.released:
            self.released = True
            _running[self.session] -= 1
            if _running[self.session] <= 0:
                del _running[self.session]


def _admit(session: str) -> _Ticket:
    with _lock:
        if _running[session] >= PER_SESSION:
            raise LookupsBusy(
                f"{PER_SESSION} host-name lookups of this session are still waiting for a name server "
                "that does not answer; wait for them to time out, then retry (or fetch another host)"
            )
        if sum(_running.values()) >= PER_PROCESS:
            raise LookupsBusy(
                f"{PER_PROCESS} host-name lookups are still waiting for name servers that do not answer; "
                "wait for them to time out, then retry"
            )
        _running[session] += 1
        return _Ticket(session)


async def lookup(host: str, port: int, session: str) -> list[Any]:
    """``socket.getaddrinfo(host, port, type=SOCK_STREAM)``, as the fetch needs it; raises
    `LookupsBusy` at the bounds above and ``OSError`` as ``getaddrinfo`` does."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:  # a literal: no resolver, no thread
        return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    ticket = _admit(session)

    def resolve() -> list[Any]:
        with _lock:
            if ticket.released:  # the caller left before this thread began
                return []
            ticket.started = True
        try:
            return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except UnicodeError as exc:  # a label the IDNA codec refuses: a resolver error like any other
            raise OSError(f"not a host name a resolver takes ({exc})") from None
        finally:
            with _lock:
                ticket.release()

    try:
        # A limiter of its own: no lookup waits for another's thread (anyio starts one when none is idle).
        return await anyio.to_thread.run_sync(
            resolve, abandon_on_cancel=True, limiter=anyio.CapacityLimiter(1)
        )
    finally:
        with _lock:
            if not ticket.started:
                ticket.release()
