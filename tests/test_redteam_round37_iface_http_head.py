"""Red team round 37 (iface): a request head that two HTTP readers would split differently is refused.

h11 took a lone LF as a line end and joined a folded line (leading space or tab) to the header above
it. A proxy in front that splits on CRLF only, or keeps a folded line as a header of its own, sees
other headers, so where a body ends (and the next request starts) differs: request smuggling.
Each case below was answered ``200`` with a new MCP session before.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from pathlib import Path

from tests.test_mcp_http_auth import TOKEN, Served, served

_INIT = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"x","version":"1"}}}'
)


@contextlib.contextmanager
def _served(tmp: Path) -> Iterator[Served]:
    with served(tmp, env={"SHELLRT_SERVE_TOKEN": TOKEN}) as srv:
        yield srv


def _head(port: int, *extra: bytes, eol: bytes = b"\r\n") -> bytes:
    lines = [
        b"POST /mcp HTTP/1.1",
        b"Host: 127.0.0.1:%d" % port,
        b"Authorization: Bearer " + TOKEN.encode(),
        b"Content-Type: application/json",
        b"Accept: application/json, text/event-stream",
        *extra,
        b"Content-Length: %d" % len(_INIT),
    ]
    return eol.join(lines) + eol + eol


def _exchange(port: int, raw: bytes) -> bytes:
    """Send ``raw``, read until the server closes (or 3 s pass)."""
    with socket.create_connection(("127.0.0.1", port), timeout=3) as sock:
        sock.sendall(raw)
        out = b""
        with contextlib.suppress(TimeoutError, OSError):
            while chunk := sock.recv(65536):
                out += chunk
        return out


def _statuses(reply: bytes) -> list[bytes]:
    return [line.split(b" ")[1] for line in reply.split(b"\r\n") if line.startswith(b"HTTP/1.1 ")]


def test_a_head_with_lone_lf_or_folded_lines_is_refused(tmp_path: Path) -> None:
    """Failed before: all three were answered 200 with a new session (3 of 3)."""
    with _served(tmp_path) as srv:
        port = srv.port
        cases = {
            "lone LF line ends": _head(port, eol=b"\n") + _INIT,
            "a lone LF inside the head": _head(port, b"X-Note: a\nX-Other: b") + _INIT,
            "a folded header": _head(port, b"X-Note: a", b" Transfer-Encoding: chunked") + _INIT,
        }
        for name, raw in cases.items():
            reply = _exchange(port, raw)
            assert _statuses(reply) == [b"400"], (name, reply[:300])
            assert b"mcp-session-id" not in reply.lower(), name
            assert b"CRLF" in reply or b"one line" in reply, (name, reply[-200:])


def test_a_pipelined_request_with_lone_lf_is_refused(tmp_path: Path) -> None:
    """Failed before: the second, pipelined request was answered too (200, 200)."""
    with _served(tmp_path) as srv:
        good = _head(srv.port) + _INIT
        bad = _head(srv.port, b"X-Note: a\nX-Other: b") + _INIT
        reply = _exchange(srv.port, good + bad)
        assert _statuses(reply) == [b"200", b"400"], reply[:400]
        assert reply.lower().count(b"mcp-session-id") == 1
