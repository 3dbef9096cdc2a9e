"""A `sandbox._proxy.FilteringProxy` for a test, and a client of it on its Unix socket, as a
sandboxed command's bridge is."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sandbox._proxy import FilteringProxy


@contextmanager
def running_proxy(tmp_path: Path, *allowed: str, **options: Any) -> Iterator[FilteringProxy]:
    """A started proxy for ``allowed`` names, its socket and ``network.log`` in ``tmp_path/proxy``
    (``options``: FilteringProxy's own, e.g. ``head_timeout``); closed on exit."""
    d = tmp_path / "proxy"
    d.mkdir(mode=0o700, exist_ok=True)
    p = FilteringProxy(d / "proxy.sock", allowed=allowed, log_path=d / "network.log", **options)
    p.start()
    try:
        yield p
    finally:
        p.close()


def proxy_talk(p: FilteringProxy, data: bytes, then: bytes = b"") -> bytes:
    """Send ``data`` to the proxy (then, after its first answer, ``then``: a tunnel's payload),
    close the sending side and return everything it answered."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(str(p.socket_path))
        s.sendall(data)
        if then:
            s.recv(4096)
            s.sendall(then)
        s.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out


def open_tunnel(p: FilteringProxy, port: int, *, socks: bool = False) -> socket.socket:
    """A tunnel through the proxy to ``localhost:port`` (HTTP CONNECT, or SOCKS5), the proxy's own
    answer read and checked: what is sent next goes to the server."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    try:
        s.connect(str(p.socket_path))
        if socks:
            s.sendall(b"\x05\x01\x00")
            assert s.recv(2) == b"\x05\x00"
            s.sendall(b"\x05\x01\x00\x03\x09localhost" + struct.pack(">H", port))
            reply = s.recv(10)
            assert reply[:2] == b"\x05\x00", reply
        else:
            s.sendall(f"CONNECT localhost:{port} HTTP/1.1\r\n\r\n".encode())
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = s.recv(1)
                assert chunk, head
                head += chunk
            assert head.startswith(b"HTTP/1.1 200"), head
    except BaseException:
        s.close()
        raise
    return s


def tunnel_talk(p: FilteringProxy, opening: bytes, port: int, *, socks: bool = False) -> bytes:
    """Send ``opening`` through a tunnel to ``localhost:port`` (`open_tunnel`), close the sending
    side and return what came back after the proxy's own answer (until the server closes)."""
    with open_tunnel(p, port, socks=socks) as s:
        s.sendall(opening)
        return drain(s)


def drain(s: socket.socket) -> bytes:
    """Close ``s``'s sending side, read until the other side closes (or fails) and close ``s``."""
    s.shutdown(socket.SHUT_WR)
    out = b""
    try:
        while chunk := s.recv(65536):
            out += chunk
    except OSError:
        pass
    s.close()
    return out
