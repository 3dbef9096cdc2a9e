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
session, a proxy), or `PER_PROCESS` in all for a key already holding its `FLOOR`, a fetch is
refused at once (a clear error) instead of starting one more thread. Lookups of one name by one key at once share one thread (and one
count): 24 parallel requests of a build for one host were 24 lookups, and past the 8th refused
while each was healthy (a loaded machine, CI).
"""

from __future__ import annotations

import concurrent.futures
import ipaddress
import socket
import threading
from collections import Counter
from typing import Any

import anyio

from sandbox._bwrap_sched import calm_this_thread

__all__ = ["FLOOR", "PER_PROCESS", "PER_SESSION", "LookupsBusy", "lookup"]

#: Lookups one session may have running (a session runs at most 10 calls at once).
PER_SESSION = 8
#: Lookups the process may have running, every session and proxy together: threads name servers
#: that never answer can hold (a batch process runs many sessions: 32 of them at their bound).
PER_PROCESS = 256
#: Lookups every session keeps whatever the others hold: one below it is admitted past
#: `PER_PROCESS`, so hostile sessions filling the process refuse no other's (round 37). Threads:
#: at most ``PER_PROCESS + FLOOR`` x the sessions (each one a sandbox or a WebFetch session).
FLOOR = 2

_lock = threading.Lock()
_running: Counter[str] = Counter()
#: Lookups running, by (key, host, port): a second asker of the same name waits for the first's.
_flights: dict[tuple[str, str, int], concurrent.futures.Future[list[Any]]] = {}
#: How often an asker that shares a lookup looks whether it ended (no thread of its own to wake it).
_SHARED_POLL_S = 0.005


class LookupsBusy(OSError):
    """Too many lookups of this session (or of the process) are still waiting on DNS."""


class _Abandoned(OSError):
    """A shared lookup's first asker left before its thread began: a sharer asks again itself."""


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


def _admit_locked(session: str) -> _Ticket:
    """A count for one more lookup of ``session`` (under _lock), or `LookupsBusy` at the bounds."""
    if _running[session] >= PER_SESSION:
        raise LookupsBusy(
            f"{PER_SESSION} host-name lookups of this session are still waiting for a name server "
            "that does not answer; wait for them to time out, then retry (or fetch another host)"
        )
    if _running[session] >= FLOOR and sum(_running.values()) >= PER_PROCESS:
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
    flight_key = (session, host, port)
    while True:
        with _lock:
            shared = _flights.get(flight_key)
            if shared is None:
                ticket = _admit_locked(session)
                flight: concurrent.futures.Future[list[Any]] = concurrent.futures.Future()
                _flights[flight_key] = flight
                break
        # The same name asked by this key already: no second thread, no second count. Polled: the
        # lookup's thread ends it, and its first asker may be gone (a deadline), so no event of this
        # loop is sure to be set; a sharer holds no thread and no count meanwhile.
        while not shared.done():  # noqa: ASYNC110
            await anyio.sleep(_SHARED_POLL_S)
        if not isinstance(shared.exception(), _Abandoned):
            return list(shared.result())

    def resolve() -> list[Any]:
        with _lock:
            if ticket.released:  # the caller left before this thread began
                _end_locked(flight_key, flight, None, _Abandoned("the lookup was abandoned before it began"))
                return []
            ticket.started = True
        try:
            calm_this_thread()  # a command's names drive it: never at its caller's raised priority
            found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except UnicodeError as exc:  # a label the IDNA codec refuses: a resolver error like any other
            error = OSError(f"not a host name a resolver takes ({exc})")
            _end(flight_key, flight, None, error)
            raise error from None
        except BaseException as exc:
            _end(flight_key, flight, None, exc)
            raise
        else:
            _end(flight_key, flight, found, None)
            return found
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
                _end_locked(flight_key, flight, None, _Abandoned("the lookup was abandoned before it began"))


def _end(
    key: tuple[str, str, int],
    flight: concurrent.futures.Future[list[Any]],
    found: list[Any] | None,
    error: BaseException | None,
) -> None:
    with _lock:
        _end_locked(key, flight, found, error)


def _end_locked(
    key: tuple[str, str, int],
    flight: concurrent.futures.Future[list[Any]],
    found: list[Any] | None,
    error: BaseException | None,
) -> None:
    """The lookup ``flight`` ended (under _lock): its sharers get what it found or its error."""
    if _flights.get(key) is flight:
        del _flights[key]
    if not flight.done():
        if error is not None:
            flight.set_exception(error)
        else:
            flight.set_result(list(found or []))
