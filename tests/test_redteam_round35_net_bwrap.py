"""Red team round 35 (net): the proxy's request vetting, as a command in a bwrap ``proxied``
sandbox meets it: raw bytes written to the bridge (127.0.0.1:3128) with bash's ``/dev/tcp``.

A NUL in a header value is refused (400) and never reaches the server; a clean request goes,
with the vetted name as its Host whatever the client spelt (`test_redteam_round35_net_smuggle`
has the cases; the proxy runs on the host, the same code for root and non-root callers).
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend, _reachable
from tests._bwrap_session import require_bwrap, supervised
from tests._tcp_server import tcp_server
from tests.conftest import require


@pytest.mark.anyio
async def test_a_command_behind_the_bridge_cannot_send_control_bytes_or_its_own_host(tmp_path: Path) -> None:
    require_bwrap()
    require(_reachable("/bin/bash"), "bash is not installed where the sandbox uid may run it")
    received: list[bytes] = []

    def answer(conn: socket.socket) -> None:
        conn.settimeout(2)
        data = b""
        try:
            while b"\r\n\r\n" not in data and (chunk := conn.recv(4096)):
                data += chunk
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        except OSError:
            pass
        received.append(data)

    ws, session = tmp_path / "ws", tmp_path / "session"
    ws.mkdir()
    session.mkdir()
    policy = SandboxPolicy(workspace=ws, network="proxied", allowed_domains=("localhost",))
    with tcp_server(answer) as port:
        ask = (
            "exec 3<>/dev/tcp/127.0.0.1/3128; printf '%s' >&3; head -c 12 <&3; echo; exec 3<&-"
        )  # fmt: skip
        command = " ; ".join(
            ask % request
            for request in (
                f"GET http://localhost:{port}/x HTTP/1.1\\r\\nX-A: a\\0smuggle\\r\\n\\r\\n",
                f"GET http://LOCALHOST.:{port}/ok HTTP/1.1\\r\\nHost: evil.test\\r\\n\\r\\n",
            )
        )
        async with supervised(BwrapBackend(BwrapConfig(), policy), session) as sup:
            out = await sup.run(command, timeout_s=60)
        deadline = time.monotonic() + 3
        while not received and time.monotonic() < deadline:
            time.sleep(0.01)
    assert out.preview.split() == ["HTTP/1.1", "400", "HTTP/1.1", "200"], out.preview
    assert len(received) == 1 and b"smuggle" not in received[0], received
    assert received[0].startswith(b"GET /ok HTTP/1.1\r\nHost: localhost:%d\r\n" % port), received
