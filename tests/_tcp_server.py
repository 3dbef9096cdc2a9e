"""A raw TCP server on 127.0.0.1 for tests that need bytes a real HTTP server would not send."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def tcp_server(handle: Callable[[socket.socket], None]) -> Iterator[int]:
    """Yields the port of a listener whose one thread accepts each connection and runs
    ``handle(conn)`` on it, closing it after; stopped and closed on exit."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                handle(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stop.set()
        thread.join(5)
        listener.close()


@contextmanager
def recording_server(answer: bytes = b"") -> Iterator[tuple[int, list[bytes]]]:
    """Yields the port of a listener standing for a service (a Ray node's GCS or dashboard) and the
    list of what each connection sent first (``b""`` when it sent nothing); ``answer``, if any, is
    written back."""
    seen: list[bytes] = []

    def record(conn: socket.socket) -> None:
        conn.settimeout(2)
        try:
            seen.append(conn.recv(4096))
            if answer:
                conn.sendall(answer)
        except OSError:
            seen.append(b"")

    with tcp_server(record) as port:
        yield port, seen
