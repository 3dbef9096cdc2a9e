"""Red team, round 40 (iface3): ``serve --http`` took a 64 MiB body to be refused by the runtime.

The HTTP MCP server's strict-JSON middleware read a POST body up to 64 MiB and handed it on to be
parsed (twice) and refused by the runtime as past 4 Mi characters: the stdio line's cost, for
every peer of a shared server. The body cap is now one tool input at its longest (25,231,360
bytes), and a shorter body whose bytes prove it past the input bound is refused unparsed, under
its id. Uvicorn on 127.0.0.1 with the server's own protocol and middleware (as round 14's test),
an echo app behind it, real sockets.
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

MiB = 1024 * 1024


async def _echo(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The app behind the middleware: answers 200 with the size of the body it was given."""
    if scope["type"] != "http":
        return
    size = 0
    while True:
        message = await receive()
        size += len(message.get("body", b""))
        if not message.get("more_body", False):
            break
    body = str(size).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = int(probe.getsockname()[1])
    app = StrictJsonBodyMiddleware(_echo, body_timeout=60.0)
    config = uvicorn.Config(
        app, host="127.0.0.1", port=free, log_level="warning", lifespan="off", http=guarded_protocol(20.0, 16)
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


def _post(port: int, body: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        try:
            sock.sendall(head.encode() + body)
        except OSError:
            pass  # the server may answer and close before the whole body is sent
        answer = b""
        while True:
            try:
                data = sock.recv(65536)
            except OSError:
                break
            if not data:
                break
            answer += data
            if b"\r\n\r\n" in answer and answer.lower().find(b"content-length") >= 0:
                head_end = answer.index(b"\r\n\r\n") + 4
                length = int(answer.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                if len(answer) >= head_end + length:
                    break
    return answer


def _call(chars: int) -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"Bash","arguments":{"command":"'
        + b"x" * chars + b'"}}}'
    )


def test_a_body_longer_than_any_message_is_refused(port: int) -> None:
    """Failed before: a 40 MiB body was read and handed on (200 from the app)."""
    answer = _post(port, _call(40 * MiB))
    assert answer.startswith(b"HTTP/1.1 413"), answer[:300]
    assert b"25,231,360" in answer and b"Write, then Edit" in answer, answer[:400]


def test_a_body_whose_bytes_prove_it_past_the_input_bound_is_refused_unparsed(port: int) -> None:
    """Failed before: a 20 MiB call was handed on to be parsed (200 from the app)."""
    answer = _post(port, _call(20 * MiB))
    assert answer.startswith(b"HTTP/1.1 413"), answer[:300]
    text = answer.decode("utf-8", "replace")
    assert "4,194,304" in text and "it was not read" in text, text[:400]
    body = json.loads(answer.split(b"\r\n\r\n", 1)[1])
    assert body.get("id") == 7, body


def test_a_body_of_the_largest_input_is_handed_on(port: int) -> None:
    """The control: an input just under the bound, every character escaped, reaches the app."""
    whole = json.dumps({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {
        "name": "Write", "arguments": {"file_path": "x", "content": "\u00e9" * (4 * MiB - 4096)}}}).encode()
    answer = _post(port, whole)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:300]
