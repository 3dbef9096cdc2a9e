"""A `sandbox._proxy.FilteringProxy` for a test, and a client of it on its Unix socket, as a
sandboxed command's bridge is."""

from __future__ import annotations

import socket
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
