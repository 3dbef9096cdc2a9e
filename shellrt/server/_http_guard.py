"""Bounds on the connections of ``shellrt serve --http``: a header deadline, a connection cap,
a per-peer share of it, and eviction of the longest-idle connection when the server is full.

Why: uvicorn waits for a request's headers without a deadline and accepts every connection. A
client that sends its headers one byte at a time (slowloris), or opens thousands of connections
and sends nothing, held the server's sockets and memory for as long as it liked, before any
token check could run (the bearer check reads the headers). So each connection must finish a
request's headers within `HEADER_TIMEOUT_S` of opening (or of its previous response), else it is
closed. A first-come cap alone let one client deny all others (round 13): it filled the
`MAX_CONNECTIONS` slots, idle or with requests whose body never came, and every newcomer was
closed on arrival. So one peer address holds at most `MAX_PER_PEER` connections, and when the
server (or a peer's share) is full the connection idle the longest (waiting for a request's
headers: nothing in flight) is closed to make room, the full peer's own first. A request in
flight is never cut for a newcomer: with no idle connection to close, the newcomer is closed.
A request whose headers arrived is not timed here: its body is bounded by the body reader, a
long answer (an event stream) by the session. Two ways a connection stayed "in flight" forever
without a token (red team round 52): a request answered before its body was read whole (the
token check's 401 reads none of it) now ends its connection with the answer (the rest of a body
no one reads held it for as long as its bytes trickled in); and an answer the client does not
read (requests pipelined without reading their 401s until the socket's buffers fill) may stall
the connection's writes at most `WRITE_STALL_FACTOR` header deadlines, then the connection is
reset (uvicorn waited for the client to read without end). A connection uvicorn closed with
answers still unsent (asyncio keeps it until they are written) is reset once a stall deadline sees
no progress, counts toward the caps until then, and is the first to go for a newcomer (red team
round 53: such connections stood forever, uncounted, any number of them; `_http_closing`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import struct
import time
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from shellrt.server._http_closing import ClosingTransport, unsent
from shellrt.server._http_head import ambiguous_head
from shellrt.server._http_pipeline import PIPELINE_LIMIT, HeldFlow, buffered
from shellrt.server._http_sessions import peer_key

__all__ = ["HEADER_TIMEOUT_S", "MAX_CONNECTIONS", "MAX_PER_PEER", "WRITE_STALL_FACTOR", "guarded_protocol"]

log = logging.getLogger("shellrt.server")

#: Seconds a connection has to send a request's headers (from opening, or its previous response).
HEADER_TIMEOUT_S = 10.0
#: Open connections at most; beyond, the longest-idle one is closed (or the newcomer, if none is idle).
MAX_CONNECTIONS = 256
#: Bytes of a request head looked at for ambiguous line ends (h11 refuses a longer head: 16 KiB).
_HEAD_SCAN = 64 * 1024
#: Open connections of one peer address at most (behind a reverse proxy all clients are one peer).
MAX_PER_PEER = 64
#: How long, in header deadlines, a connection's writes may wait for the client to read (30 s by
#: default: the socket's megabytes of buffers are already full then, the client reads nothing).
WRITE_STALL_FACTOR = 3


def guarded_protocol(
    header_timeout: float = HEADER_TIMEOUT_S,
    max_connections: int = MAX_CONNECTIONS,
    max_per_peer: int | None = None,
) -> type[H11Protocol]:
    """uvicorn's h11 protocol class with these bounds (pass as ``uvicorn.Config(http=...)``).

    ``max_per_peer`` None: `MAX_PER_PEER`, or ``max_connections`` if that is lower.
    """
    if header_timeout <= 0 or max_connections < 1:
        raise ValueError("the header timeout must be positive and the connection cap at least 1")
    per_peer = min(MAX_PER_PEER, max_connections) if max_per_peer is None else max_per_peer
    if not 1 <= per_peer <= max_connections:
        raise ValueError("the per-peer cap must be at least 1 and at most the connection cap")

    class GuardedH11Protocol(H11Protocol):
        """Makes room for a newcomer by closing the longest-idle connection; times request headers."""

        _header_timer: asyncio.TimerHandle | None = None
        _write_timer: asyncio.TimerHandle | None = None
        _closing_timer: asyncio.TimerHandle | None = None
        _closing_unsent: int = 0  # bytes unsent when the closing deadline was last armed
        _peer: str = ""
        _idle_since: float = 0.0

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self.transport = ClosingTransport(transport, self._closed)  # type: ignore[assignment]
            self.flow = HeldFlow(transport, self._holding_too_much)
            peername = transport.get_extra_info("peername")
            host = str(peername[0]) if isinstance(peername, tuple) and peername else str(peername)
            self._peer = peer_key(host)  # an IPv6 client's /64 is one peer (round 37, review3)
            self._arm()
            if not self._make_room():
                log.warning(
                    "HTTP connections full (%d, %d per peer): a newcomer was closed",
                    max_connections,
                    per_peer,
                )
                self._disarm()
                transport.abort()  # connection_lost takes it out of the set

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            self._writes_drained()
            if self._closing_timer is not None:
                self._closing_timer.cancel()
                self._closing_timer = None
            super().connection_lost(exc)

        def _closed(self) -> None:
            """uvicorn closed the transport: what is still unsent is timed from here (round 53)."""
            self._disarm()
            self._writes_drained()  # the closing deadline below replaces the paused one
            self._idle_since = time.monotonic()  # done: evicted first (`_evict`)
            self._arm_closing()

        def _arm_closing(self) -> None:
            self._closing_unsent = unsent(self.transport)
            if self._closing_unsent and self._closing_timer is None:
                self._closing_timer = self.loop.call_later(WRITE_STALL_FACTOR * header_timeout, self._closing_late)

        def _closing_late(self) -> None:
            self._closing_timer = None
            left = unsent(self.transport)
            if 0 < left < self._closing_unsent:
                self._arm_closing()  # the client reads: another deadline for the rest
            elif left:
                log.warning(
                    "HTTP connection reset: closed with %d bytes unsent, its client read none for %g s",
                    left,
                    WRITE_STALL_FACTOR * header_timeout,
                )
                self._reset()

        def pause_writing(self) -> None:
            super().pause_writing()
            if self._write_timer is None:
                self._write_timer = self.loop.call_later(
                    WRITE_STALL_FACTOR * header_timeout, self._writes_stalled
                )

        def resume_writing(self) -> None:
            self._writes_drained()
            super().resume_writing()

        def _writes_drained(self) -> None:
            if self._write_timer is not None:
                self._write_timer.cancel()
                self._write_timer = None

        def _writes_stalled(self) -> None:
            self._write_timer = None
            if not self.transport.is_closing():  # closing: timed by `_closing_late`
                log.warning(
                    "HTTP connection closed: its client read nothing of its answers for %g s",
                    WRITE_STALL_FACTOR * header_timeout,
                )
                self._reset()

        def _reset(self) -> None:
            self._disarm()
            sock = self.transport.get_extra_info("socket")
            if sock is not None:  # reset, not closed: a closed socket kept its unsent answers
                with contextlib.suppress(OSError):  # in the kernel while the client read nothing
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.transport.abort()  # connection_lost wakes the answer waiting to be written

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self._holding_too_much():
                self.flow.pause_reading()  # resumed once events drained it (`handle_events`)

        def handle_events(self) -> None:
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                refused = ambiguous_head(self.conn.trailing_data[0][:_HEAD_SCAN])
                if refused is not None:
                    log.warning("HTTP request refused: %s", refused)
                    self._disarm()
                    self.send_400_response(f"Invalid HTTP request: {refused}.")
                    return
            held = self.flow.read_paused and self._holding_too_much()
            super().handle_events()
            if held and not self._holding_too_much() and not self.transport.is_closing():
                self.flow.resume_reading()  # our hold only: uvicorn's own pauses it resumes itself

        def _holding_too_much(self) -> bool:
            return buffered(self.conn) > PIPELINE_LIMIT

        def on_response_complete(self) -> None:
            # Judged before uvicorn starts the next cycle (a pipelined request's body is its own).
            unread = self.conn.their_state is h11.SEND_BODY
            super().on_response_complete()
            if self.transport.is_closing():
                return
            if unread:
                # Answered before its body was read whole (401, 413, …): uvicorn would keep the
                # connection to discard the rest, each byte cancelling its keep-alive timer, never
                # idle and never timed (red team round 52). The answer is sent; the connection ends.
                self._disarm()
                self.transport.close()
                return
            self._arm()  # the next request's headers are timed again (keep-alive)

        def _make_room(self) -> bool:
            """Close idle connections until this one fits both caps; False when only requests in flight stand."""
            live = [p for p in self.connections if _open(p)]
            mine = [p for p in live if getattr(p, "_peer", None) == self._peer]
            if len(mine) > per_peer and not _evict(mine, self):
                return False
            if len(live) - (len(mine) > per_peer) > max_connections:
                counts: dict[str, int] = {}
                for p in live:
                    counts[getattr(p, "_peer", "")] = counts.get(getattr(p, "_peer", ""), 0) + 1
                # The busiest peer's longest-idle connection first; any idle one else.
                busiest = sorted(counts, key=lambda peer: -counts[peer])
                for peer in busiest:
                    if _evict([p for p in live if getattr(p, "_peer", "") == peer and _open(p)], self):
                        return True
                return False
            return True

        def _idle(self) -> bool:
            return self.conn.their_state is h11.IDLE and self.conn.our_state is h11.IDLE

        def _done(self) -> bool:
            """Closed with answers unsent: nothing left to do but wait for a client that may never read."""
            return self.transport.is_closing() and unsent(self.transport) > 0

        def _arm(self) -> None:
            self._disarm()
            self._idle_since = time.monotonic()
            self._header_timer = self.loop.call_later(header_timeout, self._headers_late)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_late(self) -> None:
            self._header_timer = None
            # IDLE: no complete request line and headers since the timer started.
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.abort()

    def _open(protocol: Any) -> bool:
        """Whether ``protocol`` holds a slot: not closing, or closed with answers unsent (round 53:
        those stood uncounted, any number of them)."""
        transport = getattr(protocol, "transport", None)
        return transport is not None and (not transport.is_closing() or unsent(transport) > 0)

    def _evict(candidates: list[Any], newcomer: Any) -> bool:
        """Close one of ``candidates`` (not ``newcomer``): one closed with answers unsent first (reset),
        else the longest-idle; False when none is either."""
        mine = [p for p in candidates if p is not newcomer and isinstance(p, GuardedH11Protocol)]
        done = [p for p in mine if p._done()]
        if done:
            victim = min(done, key=lambda p: p._idle_since)
            log.info("HTTP connections full: reset one closed with answers its client did not read")
            victim._reset()
            return True
        idle = [p for p in mine if p._idle()]
        if not idle:
            return False
        victim = min(idle, key=lambda p: p._idle_since)
        log.info("HTTP connections full: closed one idle for %.1f s", time.monotonic() - victim._idle_since)
        victim._disarm()
        victim.transport.abort()
        return True

    return GuardedH11Protocol
