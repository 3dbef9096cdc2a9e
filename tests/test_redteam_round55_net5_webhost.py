"""Red team round 55 (net5): WebFetch's Host header for an IPv6 literal.

WebFetch connects to the address it checked and names the site by the Host header it writes
itself. For ``http://[::1]:P/`` it wrote ``Host: ::1:P``: no brackets, so the header names no
valid authority (RFC 9110 7.2: an IPv6 literal is bracketed), and a server that splits it at the
first colon reads another host (its default site) than the one WebFetch checked. A raw server on
``::1`` (listed in ``allowPrivateHosts``) records the head it gets.
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import anyio
import pytest

from shellrt.protocol import ToolContext
from shellrt.tools.web_fetch import WebFetchInput, WebFetchTool


def _serve_once(listener: socket.socket, seen: list[bytes]) -> None:
    conn, _ = listener.accept()
    with conn:
        conn.settimeout(10)
        data = b""
        while b"\r\n\r\n" not in data and len(data) < 65536 and (chunk := conn.recv(4096)):
            data += chunk
        seen.append(data)
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
        )


def test_an_ipv6_literal_is_bracketed_in_the_host_header(tmp_path: Path) -> None:
    try:
        listener = socket.create_server(("::1", 0), family=socket.AF_INET6)
    except OSError as exc:  # no IPv6 loopback here: nothing to check, said plainly
        pytest.fail(f"no IPv6 loopback to serve on: {exc}")
    seen: list[bytes] = []
    with listener:
        port = listener.getsockname()[1]
        thread = threading.Thread(target=_serve_once, args=(listener, seen), daemon=True)
        thread.start()
        ctx = ToolContext(
            session_id="s", session_dir=tmp_path, workspace=tmp_path, cwd=str(tmp_path),
            settings={"webFetch": {"allowPrivateHosts": ["::1"], "timeoutSeconds": 30}},
        )  # fmt: skip

        async def go() -> int:
            out = await WebFetchTool().call(WebFetchInput(url=f"http://[::1]:{port}/p"), ctx)
            return out.data.status

        assert anyio.run(go) == 200
        thread.join(10)
    assert seen, "the server got no request"
    lines = seen[0].split(b"\r\n")
    assert f"Host: [::1]:{port}".encode() in lines, lines[:4]
