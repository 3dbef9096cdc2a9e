"""A remote MCP server's answers, bounded as a stdio server's lines are.

The SDK reads an ``application/json`` answer with ``response.aread()``: the whole body into
memory, however long, before parsing it (round 39: 160 MiB read whole, and an endless body grew
the process without end). A stdio server's line stops at `MAX_LINE_BYTES` and an SSE event at
the SDK's 1 MiB; an answer that is not an event stream now stops at the same 64 MiB. Compressed
answers are not asked for (``Accept-Encoding: identity``) and refused when sent anyway: a bound on
the bytes received says nothing of what a gzip or brotli body decodes to.

Each refusal of an answer to a POSTed message is also noted in ``refused`` (the connection's
list, as the stdio transport's): inside an event stream the SDK takes any error as "the stream
ended", so without the note the call failed as "closed the connection (it may have crashed)"
(round 40). The standalone stream's (GET) are not: they answer no call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx2

from shellrt.tools.mcp._stdio import MAX_LINE_BYTES

__all__ = ["AnswerTooLong", "bound_answers"]


class AnswerTooLong(httpx2.StreamError):
    """Raised while an MCP server's answer is read, once it passes the bound or arrives
    compressed; the SDK turns it into the request's error (its parse error)."""


class _Bounded(httpx2.AsyncByteStream):
    """``inner``'s bytes, raising `AnswerTooLong` once more than ``limit`` arrived."""

    def __init__(self, inner: Any, limit: int, url: str, refused: list[Exception]) -> None:
        self._inner, self._limit, self._url, self._refused = inner, limit, url, refused

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._limit:
                error = AnswerTooLong(
                    f"the MCP server at {self._url} sent an answer longer than shellrt takes ({self._limit:,} "
                    "bytes); it was not read further. Ask its owner to send large results as a resource "
                    "or in pages"
                )
                self._refused.append(error)
                raise error
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Refused(httpx2.AsyncByteStream):
    """No bytes: a compressed answer (its size once decoded is unknown) is refused."""

    def __init__(self, inner: Any, encoding: str, url: str, refused: list[Exception]) -> None:
        self._inner, self._encoding, self._url, self._refused = inner, encoding, url, refused

    async def __aiter__(self) -> AsyncIterator[bytes]:
        error = AnswerTooLong(
            f"the MCP server at {self._url} sent a {self._encoding!r}-compressed answer though shellrt asks "
            "for none (what it decodes to is unbounded); configure it to send uncompressed answers"
        )
        self._refused.append(error)
        raise error
        yield b""  # pragma: no cover  (an async generator)

    async def aclose(self) -> None:
        await self._inner.aclose()


def bound_answers(
    client: httpx2.AsyncClient, limit: int = MAX_LINE_BYTES, refused: list[Exception] | None = None
) -> None:
    """Make ``client`` ask for uncompressed answers and read at most ``limit`` bytes of each one
    that is not an event stream (the SDK bounds each event of those); each refusal is appended
    to ``refused`` too (at most a few are kept)."""
    client.headers["Accept-Encoding"] = "identity"
    noted: list[Exception] = refused if refused is not None else []

    async def bound(response: httpx2.Response) -> None:
        url = str(response.request.url)
        # Only an answer to a POSTed message is a call's: the standalone stream (GET) is no call's,
        # and its refusal was reported on the next call the server rejected (round 40, review17).
        kept: list[Exception] = noted if response.request.method == "POST" else []
        del noted[:-3]  # the latest refusals only: a server refused for every answer grows nothing
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            del response.headers["content-encoding"]  # httpx must not decode what is never read
            response.stream = _Refused(response.stream, encoding, url, kept)
            return
        if not response.headers.get("content-type", "").lower().startswith("text/event-stream"):
            response.stream = _Bounded(response.stream, limit, url, kept)

    hooks = dict(client.event_hooks)
    hooks["response"] = [*hooks.get("response", []), bound]
    client.event_hooks = hooks
