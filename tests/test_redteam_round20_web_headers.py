"""Red team round 20 (web): headers an application routes by, through the vetted request.

The proxy re-frames plain HTTP (forwarded, or inside a CONNECT/SOCKS5 tunnel) with the vetted
``Host``, so the client cannot name another site by ``Host``. But reverse proxies and the
applications behind them also route by ``X-Forwarded-Host`` / ``Forwarded: host=`` (the site:
fronting by header), by ``X-Original-URL`` / ``X-Rewrite-URL`` (the path: past the front's
access rules, as IIS and Symfony read them), and trust ``X-Forwarded-For: 127.0.0.1`` as the
client. Round 19 left them forwarded. A real ``http.server`` on 127.0.0.1 (the listed
``localhost``, an internal host) records every header it was sent.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests._http_server import serving
from tests._proxy_client import proxy_talk, running_proxy

_ROUTING = (
    "X-Forwarded-Host: secret.internal.test",
    "Forwarded: for=127.0.0.1;host=secret.internal.test;proto=https",
    "X-Original-URL: /admin",
    "X-Rewrite-URL: /admin",
    "X-Forwarded-For: 127.0.0.1",
    "X-Real-IP: 127.0.0.1",
    "X-Forwarded-Server: secret.internal.test",
    "X-Forwarded-Prefix: /admin",
    "X-Host: secret.internal.test",
    "X_Forwarded_Host: secret.internal.test",  # CGI/WSGI: the same HTTP_X_FORWARDED_HOST
)


class _Seen(ThreadingHTTPServer):
    daemon_threads = True
    seen: list[list[tuple[str, str]]]


class _Recorder(BaseHTTPRequestHandler):
    server: _Seen

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        self.server.seen.append([(k.lower(), v) for k, v in self.headers.items()])
        body = b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return None


@contextmanager
def _recorder() -> Iterator[_Seen]:
    server = _Seen(("127.0.0.1", 0), _Recorder)
    server.seen = []
    with serving(server):
        yield server


def _request(port: int, target: str) -> bytes:
    lines = [f"GET {target} HTTP/1.1", f"Host: localhost:{port}", "User-Agent: t", *_ROUTING, "", ""]
    return "\r\n".join(lines).encode()


def _via_socks(path: Path, port: int, payload: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(str(path))
        s.sendall(b"\x05\x01\x00")
        assert s.recv(2) == b"\x05\x00"
        s.sendall(b"\x05\x01\x00\x03\x09localhost" + struct.pack(">H", port))
        assert s.recv(10)[:2] == b"\x05\x00"
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out


@pytest.mark.parametrize("way", ["forward", "connect", "socks5"])
def test_headers_an_application_routes_by_do_not_pass(tmp_path: Path, way: str) -> None:
    with _recorder() as server, running_proxy(tmp_path, "localhost") as p:
        port = server.server_port
        if way == "forward":
            answer = proxy_talk(p, _request(port, f"http://localhost:{port}/page"))
        elif way == "connect":
            answer = proxy_talk(p, f"CONNECT localhost:{port} HTTP/1.1\r\n\r\n".encode(), _request(port, "/page"))
        else:
            answer = _via_socks(p.socket_path, port, _request(port, "/page"))
        assert b"200 OK" in answer and answer.endswith(b"ok"), answer[-300:]
        assert len(server.seen) == 1, server.seen
        names = {name for name, _ in server.seen[0]}
        passed = [h for h in _ROUTING if h.split(":", 1)[0].lower() in names]
        assert not passed, f"forwarded to the host: {passed}"
        # What the application may read is still there, and the vetted Host.
        assert ("user-agent", "t") in server.seen[0]
        assert ("host", f"localhost:{port}") in server.seen[0]
