"""Red team round 11: ``shellrt serve --http`` must not be tied up by slow or idle connections.

uvicorn waited for request headers without a deadline and accepted every connection: a client
that sent its headers one byte at a time (slowloris), or opened hundreds of connections and sent
nothing, held them for as long as it liked (before the bearer check could even run). Measured on
the old code: a connection dripping one byte every 0.5 s was still open after 15 s, and 300 idle
connections were all still open. Each connection must now send a request's headers within a
deadline (``--header-timeout``, default 10 s), and at most ``--max-connections`` (default 256)
are open at once. Real server process, real sockets; the deadline is made short here.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from shellrt.server._http_guard import guarded_protocol
from tests._http_raw import closed_within, initialize_works, mcp_post_head, serve_refuses
from tests.test_mcp_http_auth import _INITIALIZE, TOKEN, Served, served

DEADLINE = 1.0
CAP = 8
_FLAGS = ("--header-timeout", str(DEADLINE), "--max-connections", str(CAP))


def _drip(sock: socket.socket, data: bytes) -> bool:
    """Send ``data`` a byte at a time, waiting up to 0.1 s for a close after each; True when the
    server cut the connection before the end."""
    for byte in data:
        try:
            sock.send(bytes([byte]))
        except OSError:
            return True
        if closed_within(sock, 0.1):
            return True
    return False


def test_a_client_dripping_its_headers_is_cut_off(tmp_path: Path) -> None:
    """Failed on the old code (still open after 15 s of one byte every 0.5 s)."""
    with served(tmp_path, *_FLAGS, env={"SHELLRT_SERVE_TOKEN": TOKEN}) as s:
        drip = socket.create_connection(("127.0.0.1", s.port))
        start = time.monotonic()
        cut = _drip(drip, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 200)
        elapsed = time.monotonic() - start
        drip.close()
        assert cut, "a connection dripping its headers was never closed"
        assert DEADLINE * 0.8 <= elapsed <= DEADLINE + 2.0, elapsed
        initialize_works(s.url)  # the server itself is fine


@pytest.mark.slow  # 22 s in CI56: its file is handed out first (tests/conftest.py)
def test_idle_connections_are_capped_and_timed_out(tmp_path: Path) -> None:
    """Failed on the old code (300 idle connections all held open)."""
    deadline = 4.0  # those under the cap must still stand while the others are counted
    flags = ("--header-timeout", str(deadline), "--max-connections", str(CAP))
    with served(tmp_path, *flags, env={"SHELLRT_SERVE_TOKEN": TOKEN}) as s:
        start = time.monotonic()
        conns = [socket.create_connection(("127.0.0.1", s.port)) for _ in range(CAP + 20)]
        # Which CAP the server keeps depends on the order it took them in (a busy machine).
        closed = [c for c in conns if closed_within(c, 0.2)]
        if len(closed) < 20:  # a slow server may take its time: look once more
            closed += [c for c in conns if c not in closed and closed_within(c, 1.0)]
        idle = [c for c in conns if c not in closed]
        # At most CAP stand; a connection the server has not yet seen close (the port probe's)
        # may still count for a moment, so one or two fewer may.
        assert CAP - 2 <= len(idle) <= CAP, f"{len(idle)} of {CAP + 20} connections kept, cap {CAP}"
        assert time.monotonic() - start < deadline - 1, "closed by the deadline, not the cap"
        assert all(closed_within(c, deadline + 2.0) for c in idle), "idle connections were kept"
        for c in conns:
            c.close()
        initialize_works(s.url)  # room again for a real client


def _initialize_request(port: int) -> tuple[str, bytes]:
    """The head and body of an MCP ``initialize`` POST to ``127.0.0.1:port``."""
    body = json.dumps(_INITIALIZE).encode()
    return mcp_post_head(port, len(body)), body


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server without auth for the two tests below (each on its own connection): a server
    start is most of such a test's time (12-14 s at load 25)."""
    with served(tmp_path_factory.mktemp("open"), *_FLAGS, "--no-auth") as s:
        yield s


def test_a_kept_alive_connection_is_timed_again(open_server: Served) -> None:
    """After a complete request and answer, the next request's headers have the same deadline."""
    s = open_server
    sock = socket.create_connection(("127.0.0.1", s.port))
    head, body = _initialize_request(s.port)
    sock.sendall(head.encode() + body)
    sock.settimeout(20)
    answer = b""
    while b"protocolVersion" not in answer:
        chunk = sock.recv(65536)
        assert chunk, answer
        answer += chunk
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    start = time.monotonic()
    cut = _drip(sock, b"POST /mcp HTTP/1.1\r\nX-Slow: " + b"a" * 200)
    sock.close()
    assert cut and time.monotonic() - start <= DEADLINE + 2.0


def test_a_request_within_the_deadline_is_served(open_server: Served) -> None:
    """A client slower than the network but within the deadline is not cut."""
    s = open_server
    sock = socket.create_connection(("127.0.0.1", s.port))
    head, body = _initialize_request(s.port)
    for part in (head[:20], head[20:60], head[60:]):
        sock.sendall(part.encode())
        time.sleep(DEADLINE / 5)
    sock.sendall(body)
    sock.settimeout(20)
    answer = sock.recv(65536)
    sock.close()
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (("--header-timeout", "0"), "--header-timeout 0: give a number of seconds above 0"),
        (("--header-timeout", "nan"), "--header-timeout nan"),
        (("--max-connections", "0"), "--max-connections 0: give at least 1"),
    ],
)
def test_bad_bounds_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: tuple[str, str], said: str
) -> None:
    serve_refuses(tmp_path, capsys, flags, said)


def test_guard_refuses_nonsense_bounds() -> None:
    with pytest.raises(ValueError, match="positive"):
        guarded_protocol(0, 1)
    with pytest.raises(ValueError, match="at least 1"):
        guarded_protocol(1, 0)
