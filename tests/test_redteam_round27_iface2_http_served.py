"""Round 27 wave 2, interfaces: a real ``serve --http`` attacked by rebinding and smuggling.

DNS rebinding against ``serve --http`` on a loopback address spelled otherwise than
``127.0.0.1``:
The MCP SDK turns its Host/Origin check on only when the host string is exactly ``127.0.0.1``,
``localhost`` or ``::1``. ``shellrt serve --http 127.0.0.2:PORT`` (any address of 127/8, or
``0:0:0:0:0:0:0:1``) is accepted as loopback without ``--allow-remote``, and served with no
Host/Origin check: a web page of ``evil.example`` that rebinds its name to 127.0.0.2 had its
requests answered (with ``--no-auth``, nothing else stood in the way of a tool call).

Request smuggling: a request with both ``Transfer-Encoding: chunked`` and ``Content-Length`` was
read by its chunks and its connection kept, so a request pipelined after it was answered too
(a proxy reading by ``Content-Length`` sees other boundaries). It now gets 400 and the
connection closes (`shellrt.server._http_framing`). One real ``shellrt serve --http
127.0.0.2:PORT --no-auth`` process for both, raw HTTP requests.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest

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


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    tmp = tmp_path_factory.mktemp("served")
    workspace = tmp / "ws"
    workspace.mkdir()
    free = _free_port()
    argv = bypass_serve_argv(workspace, "--no-auth", transport=("--http", f"{_HOST}:{free}"))
    proc = subprocess.Popen(argv, env={**os.environ, **isolated_env(tmp)}, cwd=str(ROOT), stderr=subprocess.DEVNULL)
    try:
        _wait_listening(free, proc)
        yield free
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_a_rebound_name_is_refused_on_every_loopback_spelling(port: int) -> None:
    assert _status(port, f"{_HOST}:{port}") == 200  # the address it serves: answered
    assert _status(port, f"evil.example:{port}") == 421, "a rebound name was answered"
    assert _status(port, f"{_HOST}:{port}", origin="http://evil.example") == 403
    assert _status(port, f"{_HOST}:{port}", origin=f"http://{_HOST}:{port}") == 200


def test_a_request_framed_two_ways_is_refused_and_its_connection_closed(port: int) -> None:
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {_HOST}:{port}\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\n"
    )
    smuggled = (head + f"Content-Length: {len(_INIT)}\r\n\r\n").encode() + _INIT
    first = (head + "Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n").encode()
    first += b"%x\r\n" % len(_INIT) + _INIT + b"\r\n0\r\n\r\n"
    with socket.create_connection((_HOST, port), timeout=30) as sock:
        sock.sendall(first + smuggled)
        answer = b""
        while chunk := sock.recv(65536):  # the server closes: EOF ends the loop
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
    assert answer.count(b"HTTP/1.1 ") == 1, f"the pipelined request was answered too: {answer[:600]!r}"
