"""A real HTTP server on 127.0.0.1 for WebFetch tests, counting hits per path."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socketserver import BaseServer
from typing import TypeVar

_S = TypeVar("_S", bound=BaseServer)

Route = tuple[int, dict[str, str], bytes]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        path = self.path.split("?", 1)[0]
        self.server.hits[path] += 1
        self.server.hosts.append(self.headers.get("Host", ""))
        status, headers, body = self.server.routes.get(
            path, (404, {"Content-Type": "text/plain"}, b"not found")
        )
        body = body.replace(b"{port}", str(self.server.server_port).encode())
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value.replace("{port}", str(self.server.server_port)))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    routes: dict[str, Route]
    hits: Counter[str]
    hosts: list[str]


@contextmanager
def serve(routes: dict[str, Route], host: str = "127.0.0.1") -> Iterator[_Server]:
    """Serve ``routes`` ("{port}" in bodies/headers becomes the real port) on ``host`` until the block ends."""
    server = _Server((host, 0), _Handler)
    server.routes = routes
    server.hits = Counter()
    server.hosts = []
    with serving(server):
        yield server


@contextmanager
def serving(server: _S) -> Iterator[_S]:
    """``server`` answering from a thread until the block ends; then shut down and closed."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
