"""Red team round 42 (net2): sessions that filled the fd pool first starved every later session.

Every ``proxied`` session's `FilteringProxy` lives in the one host process and admits connections
against the process's fd pool (`sandbox._fdbudget`, round 20): each proxy up to its share (the pool
over the live proxies), one below its share also into half the reserve. But a share only shrinks
for *new* connections: a session that filled the pool while it was alone kept every connection
when later sessions came. Two hostile sessions (a batch, ``serve``: tasks come and go) holding
tunnels to a host that keeps them open took the pool and the half reserve, and a third session,
started later, got 503 for its first request: its network was gone for as long as they ran.

The proxies run in a child process with a soft ``RLIMIT_NOFILE`` of 512 (pool 128 connections,
half reserve 64); the servers and clients are this process's. Started one after another, as
sessions of a batch are.
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import textwrap
import threading
import time
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
    proxies = []
    print("ready", flush=True)
    for line in sys.stdin:
        word = line.strip()
        if word == "open":
            try:
                with open("/dev/null"):
                    print("open ok", flush=True)
            except OSError as exc:
                print(f"open failed {exc.errno}", flush=True)
            continue
        p = FilteringProxy(d / f"{word}.sock", allowed=("localhost",), log_path=d / f"{word}.log")
        p.start()
        proxies.append(p)
        print("started", flush=True)
    for p in proxies:
        p.close()
    """
)


@contextmanager
def _holder() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that accepts connections and holds them open."""
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
    s.settimeout(10)
    s.connect(str(path))
    with suppress(OSError):  # a 503 comes at once, before the request is read
        s.sendall(f"CONNECT localhost:{port} HTTP/1.1\r\n\r\n".encode())
    try:
        return s, s.recv(200)
    except OSError:
        return s, b""


def _fill(path: Path, port: int, clients: list[socket.socket]) -> int:
    """Open tunnels through ``path`` until the proxy turns one away; how many it opened."""
    for opened in range(400):
        s, answer = _tunnel(path, port)
        clients.append(s)
        if not answer.startswith(b"HTTP/1.1 200"):
            assert answer.startswith(b"HTTP/1.1 503"), answer[:200]
            return opened
    raise AssertionError("the proxy never refused a tunnel")


def _get(path: Path, port: int) -> bytes:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(str(path))
        s.sendall(f"GET http://localhost:{port}/ HTTP/1.1\r\n\r\n".encode())
        reply = b""
        with suppress(OSError):
            while chunk := s.recv(4096):
                reply += chunk
    return reply


def _ended(clients: list[socket.socket], enough: int, wait: float) -> set[socket.socket]:
    """Those of ``clients`` (idle tunnels) the proxy ended (EOF or a reset), waiting up to ``wait``
    seconds for ``enough`` of them."""
    ended: set[socket.socket] = set()
    deadline = time.monotonic() + wait
    while len(ended) < enough and (left := deadline - time.monotonic()) > 0:
        readable, _, _ = select.select([s for s in clients if s not in ended], [], [], left)
        for s in readable:
            s.settimeout(1)
            try:
                data = s.recv(1)
            except OSError:
                data = b""
            assert data == b"", data
            ended.add(s)
    return ended


def test_sessions_that_filled_the_pool_first_leave_a_later_session_its_share(tmp_path: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(tmp_path), str(_SOFT_LIMIT)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(_ROOT), os.environ.get("PYTHONPATH")]))},
    )
    assert child.stdin is not None and child.stdout is not None
    clients: dict[str, list[socket.socket]] = {"a": [], "b": [], "c": []}

    def start(name: str) -> None:
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(name + "\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "started"

    try:
        assert child.stdout.readline().strip() == "ready"
        with _holder() as port, serve({"/": (200, {"Content-Type": "text/plain"}, b"fine")}) as web:
            start("a")
            first = _fill(tmp_path / "a.sock", port, clients["a"])
            start("b")
            second = _fill(tmp_path / "b.sock", port, clients["b"])
            assert first >= 100 and second >= 8, (first, second)
            start("c")  # a later session: its first requests go through
            replies = [_get(tmp_path / "c.sock", web.server_port) for _ in range(3)]
            assert all(r.startswith(b"HTTP/1.0 200") and r.endswith(b"fine") for r in replies), (
                first, second, [r[:200] for r in replies],
            )  # fmt: skip
            # It may hold tunnels up to its share too, the ones it made room for taken from the
            # greediest session (its oldest), never from a session within its share.
            third = _fill(tmp_path / "c.sock", port, clients["c"])
            assert third >= 20, (first, second, third)
            tunnels = clients["a"][:-1]  # the last is its refused one
            shed = _ended(tunnels, third, 10)
            assert len(shed) >= third and tunnels[0] in shed, (third, len(shed))
            assert set(tunnels[: len(shed)]) == shed, "not its oldest tunnels"
            assert not _ended(clients["b"][:-1], 1, 0.5), "a session nearer its share lost a tunnel"
            # The operator sees why (the session log), and where the ended tunnels went.
            ended = [json.loads(line) for line in (tmp_path / "a.log").read_text().splitlines()]
            ended = [r for r in ended if "ended" in r]
            assert len(ended) >= len(shed) and all(
                r["host"] == "localhost" and r["port"] == port and r["allowed"] for r in ended
            ), ended[:3]
            child.stdin.write("open\n")
            child.stdin.flush()
            assert child.stdout.readline().strip() == "open ok"
    finally:
        for group in clients.values():
            for s in group:
                s.close()
        child.stdin.close()
        try:
            child.wait(timeout=20)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
