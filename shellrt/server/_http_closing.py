"""A ``shellrt serve --http`` connection closed with answers still unsent is not held forever.

Once uvicorn closes a connection (its keep-alive timeout, ``Connection: close``, a 400, the guard's
end of a request answered before its body was read), asyncio keeps the socket open until its buffer
is written, with no deadline: a client that reads nothing kept it open for good, with its file
descriptor and its socket's megabytes of kernel buffers, and, no longer "open" to the guard's caps,
any number of them (red team round 53: pipelined token-less requests whose last answer stayed
unsent). `ClosingTransport` tells the guard when the transport is closed, so that it can time the
rest of the writes (`_http_guard`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["ClosingTransport", "unsent"]


class ClosingTransport:
    """``transport``, whose ``close()`` also calls ``on_close`` (every close of uvicorn's goes through
    the protocol's ``transport``: eight places in its h11 protocol; hooking this one catches them all)."""

    def __init__(self, transport: Any, on_close: Callable[[], None]) -> None:
        self._transport = transport
        self._on_close = on_close

    def close(self) -> None:
        self._transport.close()
        self._on_close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def unsent(transport: Any) -> int:
    """Bytes ``transport`` still has to write (0 when unknown)."""
    try:
        return int(transport.get_write_buffer_size())
    except (AttributeError, RuntimeError, TypeError, ValueError):
        return 0
