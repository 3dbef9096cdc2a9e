"""Round 27 wave 2, interfaces: DNS rebinding against ``serve --http`` on a loopback address
spelled otherwise than ``127.0.0.1``.

The MCP SDK turns its Host/Origin check on only when the host string is exactly ``127.0.0.1``,
``localhost`` or ``::1``. ``shellrt serve --http 127.0.0.2:PORT`` (any address of 127/8, or
``0:0:0:0:0:0:0:1``) is accepted as loopback without ``--allow-remote``, and served with no
Host/Origin check: a web page of ``evil.example`` that rebinds its name to 127.0.0.2 had its
requests answered (with ``--no-auth``, nothing else stood in the way of a tool call). A real
``shellrt serve --http 127.0.0.2:PORT --no-auth`` process, raw HTTP requests.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from tests._mcp_support import ROOT, isolated_env
from tests._serve_cli import bypass_serve_argv

_HOST = "127.0.0.2"

_INIT = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
).encode()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((_HOST, 0))
        return int(probe.getsockname()[1])


def _status(port: int, host_header: str, origin: str | None = None) -> int:
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {host_header}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Length: {len(_INIT)}\r\nConnection: close\r\n"
    )
    if origin is not None:
        head += f"Origin: {origin}\r\n"
    with socket.create_connection((_HOST, port), timeout=30) as sock:
        sock.sendall(head.encode() + b"\r\n" + _INIT)
        first = sock.makefile("rb").readline()
    return int(first.split()[1])


def _wait_listening(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"serve exited {proc.returncode}"
        try:
            socket.create_connection((_HOST, port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("serve did not listen within 60 s")


def test_a_rebound_name_is_refused_on_every_loopback_spelling(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    port = _free_port()
    argv = bypass_serve_argv(workspace, "--no-auth", transport=("--http", f"{_HOST}:{port}"))
    proc = subprocess.Popen(
        argv, env={**os.environ, **isolated_env(tmp_path)}, cwd=str(ROOT), stderr=subprocess.DEVNULL
    )
    try:
        _wait_listening(port, proc)
        assert _status(port, f"{_HOST}:{port}") == 200  # the address it serves: answered
        assert _status(port, f"evil.example:{port}") == 421, "a rebound name was answered"
        assert _status(port, f"{_HOST}:{port}", origin="http://evil.example") == 403
        assert _status(port, f"{_HOST}:{port}", origin=f"http://{_HOST}:{port}") == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
