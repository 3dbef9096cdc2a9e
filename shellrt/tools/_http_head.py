"""A response's head -- its status line, headers and any ``1xx`` heads before them -- read under a
byte bound.

httpcore loops over informational responses with no count: a server answering an endless stream of
``HTTP/1.1 100 Continue`` heads kept WebFetch parsing them until the call's deadline, about half a
core for the default 30 s, per call (red team round 32). httpx offers no hook into the connection,
so `HeadBudget` counts the bytes its streams read while httpcore says (``trace`` extension) a head is
being received, and fails the read past `MAX_HEAD_BYTES`. Imported only when a fetch runs (httpx
and httpcore are optional).
"""

from __future__ import annotations

from typing import Any

import httpcore

__all__ = ["MAX_HEAD_BYTES", "HeadBudget", "bounded_transport"]

#: Bytes read while one response head is pending: h11 holds an event to 16 KiB already, a real
#: head is a few KiB; a read may also carry the start of the body (up to 64 KiB each).
MAX_HEAD_BYTES = 256 * 1024

_HEAD = "http11.receive_response_headers."


class HeadBudget:
    """Shared by one fetch's streams and its requests' ``trace`` extension."""

    def __init__(self, limit: int = MAX_HEAD_BYTES) -> None:
        self.limit = limit
        self.reading_head = False
        self.used = 0
        #: Every byte the fetch's streams read (heads, bodies, framing): what a body's framing
        #: cost is read from it (`shellrt.tools._http_body.BoundedBody.read_off_the_wire`).
        self.read = 0

    async def trace(self, event_name: str, info: dict[str, Any]) -> None:
        if event_name == _HEAD + "started":
            self.reading_head, self.used = True, 0
        elif event_name.startswith(_HEAD):
            self.reading_head = False  # complete or failed

    def count(self, size: int) -> None:
        self.read += size
        if not self.reading_head:
            return
        self.used += size
        if self.used > self.limit:
            raise httpcore.ReadError(
                f"the server sent more than {self.limit // 1024} KiB before its response's status and headers "
                "were complete (e.g. an endless stream of 100 Continue); the fetch was stopped"
            )


class _Stream(httpcore.AsyncNetworkStream):
    def __init__(self, inner: httpcore.AsyncNetworkStream, budget: HeadBudget) -> None:
        self._inner = inner
        self._budget = budget

    # httpcore's interface names the parameter ``timeout``.
    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        data = await self._inner.read(max_bytes, timeout)
        self._budget.count(len(data))
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self,
        ssl_context: Any,
        server_hostname: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> Any:
        return _Stream(await self._inner.start_tls(ssl_context, server_hostname, timeout), self._budget)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.AsyncNetworkBackend):
    def __init__(self, inner: httpcore.AsyncNetworkBackend, budget: HeadBudget) -> None:
        self._inner = inner
        self._budget = budget

    async def connect_tcp(self, *args: Any, **kwargs: Any) -> httpcore.AsyncNetworkStream:
        return _Stream(await self._inner.connect_tcp(*args, **kwargs), self._budget)

    async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore.AsyncNetworkStream:
        return _Stream(await self._inner.connect_unix_socket(*args, **kwargs), self._budget)

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def bounded_transport(httpx_mod: Any, budget: HeadBudget) -> Any:
    """httpx's transport (as ``AsyncClient(trust_env=False)`` makes it) whose connections count
    for ``budget``. Where httpx's pool is not the one known (another version), the transport is
    returned unbounded: `tests/test_redteam_round32_files2_headbound.py` then fails, not a fetch."""
    transport = httpx_mod.AsyncHTTPTransport(trust_env=False)
    pool = getattr(transport, "_pool", None)
    inner = getattr(pool, "_network_backend", None)
    if isinstance(inner, httpcore.AsyncNetworkBackend):
        pool._network_backend = _Backend(inner, budget)  # type: ignore[union-attr]
    return transport
