"""Bounds on the connections of ``shellrt serve --http``: a header deadline and a connection cap.

Why: uvicorn waits for a request's headers without a deadline and accepts every connection. A
client that sends its headers one byte at a time (slowloris), or opens thousands of connections
and sends nothing, held the server's sockets and memory for as long as it liked, before any
token check could run (the bearer check reads the headers). So each connection must finish a
request's headers within `HEADER_TIMEOUT_S` of opening (or of its previous response), else it is
closed; and beyond `MAX_CONNECTIONS` open connections a new one is closed at once. A request
whose headers arrived is not timed here: its body is bounded by the body reader, a long answer
(an event stream) by the session.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["HEADER_TIMEOUT_S", "MAX_CONNECTIONS", "guarded_protocol"]

log = logging.getLogger("shellrt.server")

#: Seconds a connection has to send a request's headers (from opening, or its previous response).
HEADER_TIMEOUT_S = 10.0
#: Open connections at most; one more is closed on arrival.
MAX_CONNECTIONS = 256


def guarded_protocol(
    header_timeout: float = HEADER_TIMEOUT_S, max_connections: int = MAX_CONNECTIONS
) -> type[H11Protocol]:
    """uvicorn's h11 protocol class with these bounds (pass as ``uvicorn.Config(http=...)``)."""
    if header_timeout <= 0 or max_connections < 1:
        raise ValueError("the header timeout must be positive and the connection cap at least 1")

    class GuardedH11Protocol(H11Protocol):
        """Closes a connection over the cap, and one whose request headers are late."""

        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                log.warning("more than %d open HTTP connections: one more was closed", max_connections)
                transport.abort()  # connection_lost takes it out of the set
                return
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()  # the next request's headers are timed again (keep-alive)

        def _arm(self) -> None:
            self._disarm()
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

    return GuardedH11Protocol
