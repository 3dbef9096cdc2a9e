"""A client of `sandbox._proxy.FilteringProxy` on its Unix socket, as a sandboxed command's bridge is."""

from __future__ import annotations

import socket

from sandbox._proxy import FilteringProxy


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
