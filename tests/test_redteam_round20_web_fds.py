"""Red team round 20 (web): one session's proxy took the host process's file descriptors.

Every ``proxied`` session has its own `FilteringProxy` in the one host process (a `Runtime`
with several sessions, the batch runner, ``shellrt serve``), each capped at 512 connections
of two host fds, none aware of the others. A command opening tunnels to a listed host (here
``localhost``: a server that accepts and holds them) exhausted the process's ``RLIMIT_NOFILE``
(1024 is the usual soft default; 512 here to keep the test small): another session's request
then failed and the host could not open a file. The proxies run in a child process with that
limit; the servers and clients are this process's.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from tests._http_server import serve

_ROOT = Path(__file__).resolve().parents[1]
_SOFT_LIMIT = 512
_CHILD = textwrap.dedent(
    """
    import resource, sys
    from pathlib import Path
    from sandbox._proxy import FilteringProxy
    resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[2]), resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    d = Path(sys.argv[1])
    proxies = [FilteringProxy(d / f"{n}.sock", allowed=("localhost",)) for n in "ab"]
    for p in proxies:
        p.start()
    print("ready", flush=True)
    for line in sys.stdin:
        try:
            with open("/dev/null"):
                print("open ok", flush=True)
        except OSError as exc:
            print(f"open failed {exc.errno}", flush=True)
    for p in proxies:
        p.close()
    """
)


@contextmanager
def _holder() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that accepts connections and holds them."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1024)
    held: list[socket.socket] = []

    def accept() -> None:
        with suppress(OSError):
            while True:
                held.append(listener.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()
        for s in held:
            s.close()


def _tunnel(path: Path, port: int) -> tuple[socket.socket, bytes]:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect(str(path))
    with suppress(OSError):  # a 503 comes at once, before the request is read
        s.sendall(f"CONNECT localhost:{port} HTTP/1.1\r\n\r\n".encode())
    try:
        return s, s.recv(200)
    except OSError:
        return s, b""


def test_one_sessions_tunnels_leave_the_others_and_the_host_their_fds(tmp_path: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(tmp_path), str(_SOFT_LIMIT)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(_ROOT), os.environ.get("PYTHONPATH")]))},
    )
    assert child.stdin is not None and child.stdout is not None
    clients: list[socket.socket] = []
    try:
        assert child.stdout.readline().strip() == "ready"
        with _holder() as port, serve({"/": (200, {"Content-Type": "text/plain"}, b"fine")}) as web:
            answers = []
            for _ in range(_SOFT_LIMIT // 2 + 20):  # more than the child's fds allow
                s, answer = _tunnel(tmp_path / "a.sock", port)
                clients.append(s)
                answers.append(answer[:12])
            opened = sum(a.startswith(b"HTTP/1.1 200") for a in answers)
            assert opened >= 8, answers[:5]
            # Another session's plain request goes through.
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(10)
                s.connect(str(tmp_path / "b.sock"))
                s.sendall(f"GET http://localhost:{web.server_port}/ HTTP/1.1\r\n\r\n".encode())
                reply = b""
                with suppress(OSError):
                    while chunk := s.recv(4096):
                        reply += chunk
            assert reply.startswith(b"HTTP/1.0 200") and reply.endswith(b"fine"), (opened, reply[:200])
            # And the host process can still open a file.
            child.stdin.write("open\n")
            child.stdin.flush()
            assert child.stdout.readline().strip() == "open ok"
            refused = [a for a in answers if a.startswith(b"HTTP/1.1 503")]
            assert refused, "the session was never refused"
    finally:
        for s in clients:
            s.close()
        child.stdin.close()
        try:
            child.wait(timeout=20)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
