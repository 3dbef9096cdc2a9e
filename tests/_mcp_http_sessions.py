"""A real ``shellrt serve --http`` child and MCP client sessions on it (tests of several sessions)."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests._serve_cli import start_http_serve
from tests.test_mcp_server import _free_port, _wait_for_port

__all__ = ["http_session", "served", "text_of"]


@contextlib.contextmanager
def served(tmp_path: Path, token: str) -> Iterator[int]:
    """`start_http_serve` on a free port (yielded), stopped on the way out."""
    port = _free_port()
    server = start_http_serve(tmp_path, port, token)
    try:
        yield port
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()


@contextlib.asynccontextmanager
async def http_session(port: int, token: str) -> AsyncIterator[ClientSession]:
    """An initialised MCP session of its own (its own HTTP client) on the server at ``port``;
    leaving it ends the session (DELETE)."""
    await _wait_for_port(port)
    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
        streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def text_of(result: object) -> str:
    """The text blocks of a ``CallToolResult``, joined."""
    return "\n".join(getattr(c, "text", "") for c in getattr(result, "content", ()))
