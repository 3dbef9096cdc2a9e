"""Bytes a ``shellrt serve --http`` connection holds unread are bounded (pipelined requests).

uvicorn reads a pipelined request only once the one before it is answered, but keeps the bytes it
received meanwhile in h11's buffer; and it resumes reading whenever the app asks for the next
message (every disconnect check does: the SDK's event stream and shellrt's running calls, twice a
second). A client that pipelined requests without reading the answers had its bytes buffered
without bound: 476,000 `tools/list` requests in 45 s grew the server from 79 to ~390 MB (red team,
round 37). So a connection holding more than `PIPELINE_LIMIT` unprocessed bytes stops being read
until it is under it again: the client's writes block instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from uvicorn.protocols.http.flow_control import FlowControl

__all__ = ["PIPELINE_LIMIT", "HeldFlow", "buffered"]

#: Unprocessed bytes a connection may hold before it is no longer read (one read is up to 256 KiB).
PIPELINE_LIMIT = 1024 * 1024


def buffered(conn: Any) -> int:
    """Bytes h11 holds that no event was made of yet."""
    buffer = getattr(conn, "_receive_buffer", None)
    if buffer is not None:
        return len(buffer)
    return len(conn.trailing_data[0])


class HeldFlow(FlowControl):
    """uvicorn's flow control, except that reading is not resumed while ``over()`` holds."""

    def __init__(self, transport: Any, over: Callable[[], bool]) -> None:
        super().__init__(transport)
        self._over = over

    def resume_reading(self) -> None:
        if not self._over():
            super().resume_reading()
