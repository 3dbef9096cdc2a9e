"""Round 53 red team, review52: a connection the server closes with answers still unsent is not
held forever.

Round 52 (iface7) bounded a connection whose client reads nothing of its answers: writes paused
(the transport above its high-water mark) for `WRITE_STALL_FACTOR` header deadlines reset it. But
once uvicorn has *closed* the transport (its keep-alive timeout, ``Connection: close``, a 400, the
round-52 close of a request answered before its body was read), asyncio keeps the socket open until
its buffer is written, without a deadline, and the guard skipped it: the stall timer did nothing
for a closing transport, and a transport below its high-water mark never started one. Such a
connection no longer counts toward the connection caps (`_open` is False once closing), so a client
with no token could park any number of them, each holding a file descriptor and its socket's
megabytes of kernel buffers: pipelining token-less requests so that the last answer is written
below the high-water mark (~8 of 44 tries against a 3 KB 401) left them standing for good.

Real uvicorn with the real guard (`guarded_protocol`) on 127.0.0.1, a raw-socket client that reads
nothing; the ASGI app answers a fixed body (the guard, not the app, is under test). The server
socket's send buffer is fixed small so that where an answer stops is known.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import psutil
import pytest
import uvicorn

from shellrt.server._http_guard import WRITE_STALL_FACTOR, guarded_protocol

#: Above uvicorn's keep-alive timeout (1 s here; 10 s against 5 s by default): uvicorn closes an
#: idle connection before the guard's header deadline would reset it.
HEADER_TIMEOUT_S = 1.5
#: Past the closing deadline (WRITE_STALL_FACTOR header deadlines: 4.5 s) with room for load.
WAIT_S = 20.0
SMALL_ANSWER = 40_000  # more than the fixed buffers hold, less than the transport's high-water mark
LARGE_ANSWER = 2_000_000  # far above it: the writes pause


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            else:
                await send({"type": "lifespan.shutdown.complete"})
                return
    size = LARGE_ANSWER if scope["path"] == "/large" else SMALL_ANSWER
    await send({"type": "http.response.start", "status": 401, "headers": [(b"content-length", str(size).encode())]})
    await send({"type": "http.response.body", "body": b"x" * size})


class _Server:
    def __init__(self, server: uvicorn.Server, port: int) -> None:
        self.server = server
        self.port = port


@pytest.fixture(scope="module")
def server() -> Iterator[_Server]:
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)  # inherited by accepted sockets
    listener.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        _app,
        log_level="warning",
        log_config=None,
        lifespan="on",
        http=guarded_protocol(HEADER_TIMEOUT_S, 64, 64),
        timeout_keep_alive=1,
    )
    served = uvicorn.Server(config)
    thread = threading.Thread(target=served.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not served.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield _Server(served, listener.getsockname()[1])
    finally:
        served.should_exit = True
        thread.join(timeout=20)
        listener.close()


def _held(s: _Server, socks: list[socket.socket]) -> int:
    """How many of ``socks`` the server still holds (seen without reading them)."""
    mine = {sock.getsockname()[1] for sock in socks}
    return sum(
        1
        for c in psutil.Process().net_connections("tcp")
        if c.laddr and c.laddr.port == s.port and c.raddr and c.raddr.port in mine
    )


def _unread(port: int, request: bytes) -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
    sock.connect(("127.0.0.1", port))
    sock.settimeout(10)
    with contextlib.suppress(OSError):
        sock.sendall(request)
    return sock


def _released_within(s: _Server, socks: list[socket.socket], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _held(s, socks):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.mark.parametrize(
    ("path", "close"),
    [("/small", False), ("/small", True), ("/large", True)],
    ids=["keep-alive-timeout", "connection-close", "paused-then-closed"],
)
def test_a_closed_connection_with_unsent_answers_is_reset(server: _Server, path: str, close: bool) -> None:
    """Failed before: 3 of 3 stood past the deadline (uvicorn closed each with its answer unsent;
    the guard's stall deadline skipped a closing transport)."""
    extra = "Connection: close\r\n" if close else ""
    request = f"GET {path} HTTP/1.1\r\nHost: x\r\n{extra}\r\n".encode()
    socks = [_unread(server.port, request) for _ in range(3)]
    try:
        deadline = time.monotonic() + 10
        while _held(server, socks) < len(socks):  # accepted (a reset before this: nothing to test)
            assert time.monotonic() < deadline, "the server never held the connections"
            time.sleep(0.02)
        assert _released_within(server, socks, WAIT_S), (
            f"a closed connection with unsent answers stood > {WAIT_S} s "
            f"(deadline {WRITE_STALL_FACTOR * HEADER_TIMEOUT_S} s)"
        )
    finally:
        for sock in socks:
            sock.close()


def test_a_client_that_reads_its_closing_answer_gets_it_whole(server: _Server) -> None:
    """The guard: a slow reader that keeps reading gets every byte of the last answer, however long
    the whole takes, as long as each deadline sees progress."""
    request = b"GET /large HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    sock = _unread(server.port, request)
    try:
        got = 0
        started = time.monotonic()
        sock.settimeout(WAIT_S)
        while True:
            if got < 400_000:
                time.sleep(0.01)  # slow for the first part: ~ a few seconds of reading, past one deadline
            piece = sock.recv(4096)
            if not piece:
                break
            got += len(piece)
            assert time.monotonic() - started < 60
        assert got >= LARGE_ANSWER, got
    finally:
        sock.close()
