"""Red team round 52 (iface7): a client without the token must not hold ``serve --http``'s
connection slots forever.

Loopback is not a boundary (any local user, a command with the host's network), and every loopback
client is one peer: it shares one slice of `--max-connections-per-peer` (default 64) connections. A
connection with a request "in flight" is never closed for a newcomer and its header deadline only
times a connection waiting for headers. Two ways a client with no token kept connections in flight
for as long as it liked, and the operator's own client (with the token) was closed on arrival:

1. A request answered before its body was read: ``POST /mcp`` announcing a large body
   (``Content-Length`` or chunked), no ``Authorization``. The token check answers 401 without
   reading the body; uvicorn keeps the connection to discard the rest of it, and every byte the
   client sends cancels its keep-alive timer (set again only after a next response). Measured on
   the unfixed tree: 4 such connections (one byte each every 2 s) stood 46 s, and the operator's
   ``initialize`` was reset.
2. Answers the client does not read: tiny requests pipelined without reading their 401s, more
   than the socket's buffers hold (~13,000 each). The answer being written waited for the client
   to read, without end. Measured: 2 connections stood 20 s and more (the probe's end), the
   operator's ``initialize`` reset.

Real ``shellrt serve --http`` process (one for the file), real sockets.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests._http_raw import initialize_works, mcp_post_head, standing_after
from tests.test_mcp_http_auth import TOKEN, Served, served

#: Header deadline of the server under test: its writes may stall WRITE_STALL_FACTOR times this.
_HEADER_TIMEOUT_S = 1.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("stalls")
    # The 401 names where the token is: a long path makes each answer ~3 KB, so that a client that
    # reads none fills the server's buffers with ~1,400 of them instead of ~13,000.
    deep = tmp.joinpath(*["d" * 200] * 14)
    deep.mkdir(parents=True)
    token_file = deep / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    flags = ("--max-connections-per-peer", "2", "--header-timeout", str(_HEADER_TIMEOUT_S))
    with served(tmp, *flags, "--token-file", str(token_file)) as s:
        yield s


def _read_response_head(sock: socket.socket) -> bytes:
    """Bytes of the server's answer up to the end of its head (or all it sent before closing)."""
    sock.settimeout(20)
    data = b""
    while b"\r\n\r\n" not in data:
        piece = sock.recv(4096)
        if not piece:
            break
        data += piece
    return data


def _chunked_head(port: int) -> str:
    return (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )


def test_refused_requests_whose_body_trickles_do_not_hold_the_connection_slots(server: Served) -> None:
    """Failed on the unfixed tree: 2 of 2 connections stood, the operator's initialize was reset."""
    heads = [mcp_post_head(server.port, 10**12), _chunked_head(server.port)]  # no token on either
    hogs = [socket.create_connection(("127.0.0.1", server.port), timeout=10) for _ in heads]
    try:
        for sock, head in zip(hogs, heads, strict=True):
            sock.sendall(head.encode())
            assert _read_response_head(sock).startswith(b"HTTP/1.1 401 "), "the token check did not refuse"
        for sock, more in zip(hogs, (b"{", b"1\r\n{\r\n"), strict=True):
            with contextlib.suppress(OSError):  # already closed by the server: what should happen
                sock.sendall(more)  # a byte of the body after the answer (cancelled uvicorn's keep-alive)
        # Fixed, each is closed with its 401 (under 0.1 s here); unfixed, they stood for as long as
        # bytes came (46 s measured). 10 s: >= 10x the time taken and >= 3 s.
        assert standing_after(hogs, 10.0) == [], "a refused request's connection stayed open"
        initialize_works(server.url)  # the operator's client (loopback, the same peer share) is served
    finally:
        for sock in hogs:
            sock.close()


def _answer_size(port: int, request: bytes) -> int:
    """Bytes of the server's whole answer to ``request`` (a token-less one: a 401)."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(request)
        data = _read_response_head(sock)
        head, _, body = data.partition(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        return len(head) + 4 + length


def _flood_unread(port: int, request: bytes, count: int) -> socket.socket:
    """A connection that pipelined ``count`` token-less ``request``s without reading a byte."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
    sock.connect(("127.0.0.1", port))
    sock.settimeout(30)
    with contextlib.suppress(OSError):  # closed by the server meanwhile: what should happen anyway
        sock.sendall(request * count)  # ~60 KB here: the server's receive buffers take it unread
    return sock


def _held(s: Served, socks: list[socket.socket]) -> int:
    """How many of ``socks`` the server process holds open (seen without reading them: a read
    would let the server write again)."""
    mine = {sock.getsockname()[1] for sock in socks}
    return sum(
        1
        for c in psutil.Process(s.proc.pid).net_connections("tcp")
        if c.laddr and c.laddr.port == s.port and c.raddr and c.raddr.port in mine
    )


def test_answers_a_client_never_reads_do_not_hold_the_connection_slots(server: Served) -> None:
    """Failed on the unfixed tree: both connections stood (no deadline), the operator was reset."""
    request = f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode()  # no token
    size = _answer_size(server.port, request)
    assert size > 2_000, size
    most = int(Path("/proc/sys/net/ipv4/tcp_wmem").read_text().split()[2])  # a send buffer's largest
    count = 2 * most // size + 1  # answers to fill it twice over: the server's writes must wait
    hogs = [_flood_unread(server.port, request, count) for _ in range(2)]
    try:
        deadline = time.monotonic() + 30
        while _held(server, hogs) < 2:  # accepted (or already closed: then this waits its 30 s)
            assert time.monotonic() < deadline, "the server never held the two connections"
            time.sleep(0.05)
        # Closed once the writes stalled WRITE_STALL_FACTOR header deadlines (3 s here) after the
        # server answered what fills the buffers (~1-3 s at load 20); the unfixed server held them
        # with no deadline. 60 s: >= 10x that and >= 3 s.
        deadline = time.monotonic() + 60
        while _held(server, hogs):
            assert time.monotonic() < deadline, "a client that reads nothing still holds its connection"
            time.sleep(0.1)
        initialize_works(server.url)
    finally:
        for sock in hogs:
            sock.close()
