"""Red team round 14: a request whose body dribbles in cannot hold a connection of ``serve --http``.

Round 11 timed a request's headers and round 13 made a full server close its longest-idle
connection for a newcomer, but never a request in flight; round 13 left open that a body has no
deadline of its own. Measured on the old code (a real ``shellrt serve --http --header-timeout 1``):
a client with the token that sent a POST's headers (``Content-Length: 1000``) and then a byte
every quarter second kept its connection as long as it went on (still open after 6 s); 64 such
requests hold a peer's whole share, 256 the server. The body must now arrive within three header
deadlines of its headers (``408``, ``connection: close``). Here: uvicorn on 127.0.0.1 with the
server's own protocol and middleware (`McpToolServer.serve_http` builds the same stack, with the
body deadline `BODY_TIMEOUT_FACTOR` times ``--header-timeout``), real sockets.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn

from shellrt.server._http_guard import guarded_protocol
from shellrt.server._http_strict import StrictJsonBodyMiddleware

_BODY_TIMEOUT = 1.0


async def _echo(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The app behind the middleware: answers with the body it was given."""
    if scope["type"] != "http":
        return
    message = await receive()
    body = message.get("body", b"")
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = int(probe.getsockname()[1])
    app = StrictJsonBodyMiddleware(_echo, body_timeout=_BODY_TIMEOUT)
    config = uvicorn.Config(
        app, host="127.0.0.1", port=free, log_level="warning", lifespan="off", http=guarded_protocol(5.0, 16)
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    yield free
    server.should_exit = True
    thread.join(10)


def _dribble(port: int, seconds: float, *, whole: bytes | None = None) -> tuple[bytes, float]:
    """Send a POST's headers, then its body a byte every 0.2 s (or ``whole`` at once);
    (what the server answered, when it closed the connection, inf if it did not)."""
    body = whole if whole is not None else b"{" + b" " * 998 + b"}"
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    started = time.monotonic()
    answer = b""
    try:
        sock.sendall(head.encode() + (body if whole is not None else body[:1]))
        sent = 1
        sock.settimeout(0.2)
        while time.monotonic() - started < seconds:
            try:
                data = sock.recv(65536)
            except TimeoutError:
                if whole is None and sent < len(body):
                    sock.sendall(body[sent : sent + 1])
                    sent += 1
                continue
            if not data:
                return answer, time.monotonic() - started
            answer += data
    except OSError:
        return answer, time.monotonic() - started
    finally:
        sock.close()
    return answer, float("inf")


def test_a_dribbled_body_is_cut_at_its_deadline(port: int) -> None:
    answer, closed_after = _dribble(port, 4 * _BODY_TIMEOUT)
    assert closed_after < 4 * _BODY_TIMEOUT, "a request whose body dribbled in kept its connection"
    assert closed_after >= 0.8 * _BODY_TIMEOUT, f"cut after {closed_after:.2f} s, before its deadline"
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"connection: close" in answer.lower()
    assert b"did not arrive within 1 s" in answer, answer


def test_a_body_sent_at_once_is_served(port: int) -> None:
    whole = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    answer, _ = _dribble(port, 0.6, whole=whole)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    assert answer.endswith(whole)
