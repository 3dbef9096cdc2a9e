"""Red team round 32 (files2): a WebFetch server that never finishes its response's head.

httpcore reads informational responses in a loop with no count: a server on 127.0.0.1 (the
operator's ``allowPrivateHosts``, as the other WebFetch tests) answering an endless stream of
``HTTP/1.1 100 Continue`` heads kept the call parsing them until its deadline (``timeoutSeconds``
6: 3.1 s of CPU of 6 s). Now the bytes read while a head is pending are bounded
(`shellrt.tools._http_head`): the call fails at once with a clear error. A real page still loads.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import anyio
import pytest

from sandbox.base import SandboxBackend
from sandbox.local import LocalBackend
from sandbox.policy import SandboxPolicy
from shellrt.protocol import ToolContext, ToolExecutionError
from shellrt.tools.web_fetch import WebFetchInput, WebFetchTool
from tests._tcp_server import tcp_server

_PAGE = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 9\r\nConnection: close\r\n\r\nreal page"


def _answer(conn: socket.socket) -> None:
    """``/page``: three 100 Continue heads, then a page; anything else: 100 Continue until the
    client hangs up (or 30 s, should the bound ever fail)."""
    try:
        conn.settimeout(5)
        if conn.recv(65536).startswith(b"GET /page "):  # a GET on loopback: one segment
            conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n" * 3 + _PAGE)
            return
        burst = b"HTTP/1.1 100 Continue\r\n\r\n" * 2000
        until = time.monotonic() + 30
        while time.monotonic() < until:
            conn.sendall(burst)
    except OSError:
        pass  # the client hung up: what the test wants


def test_an_endless_stream_of_100_continue_is_cut(tmp_path: Path) -> None:
    with tcp_server(_answer) as port:
        _fetch_both(tmp_path, port)


def _fetch_both(tmp_path: Path, port: int) -> None:
    ctx = ToolContext(
        session_id="s",
        session_dir=tmp_path,
        workspace=tmp_path,
        cwd=str(tmp_path),
        settings={"webFetch": {"allowPrivateHosts": ["127.0.0.0/8"], "timeoutSeconds": 20}},
        services={SandboxBackend: LocalBackend(policy=SandboxPolicy(workspace=tmp_path))},
    )
    tool = WebFetchTool()

    async def fetch(path: str) -> str:
        out = await tool.call(WebFetchInput(url=f"http://127.0.0.1:{port}{path}"), ctx)
        return str(tool.to_model_content(out.data))

    assert "real page" in anyio.run(fetch, "/page")
    started = time.monotonic()
    with pytest.raises(ToolExecutionError, match="100 Continue"):
        anyio.run(fetch, "/endless")
    assert time.monotonic() - started < 10  # before: the whole 20 s deadline
