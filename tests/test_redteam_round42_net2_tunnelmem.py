"""Red team round 42 (net2): stalled tunnels took the host process's memory, and every session with it.

A tunnel whose client does not read while its server sends holds ~550 KB of buffers in the proxy's
process (the host process of every session: a `Runtime`, a batch, ``shellrt serve``). The fd share
(`sandbox._fdbudget`, round 20) bounds connections by fds only: at a high fd limit each session may
hold 512 tunnels, ~280 MB, and two hostile sessions took more than a 384 MiB host (here: a memory
cgroup around the process, as a container's limit is): the OOM killer ended the process, and every
session's network and commands with it. Now connections are also bounded by a part of the memory the
process may use (its cgroup's limit read by `sandbox._hostmem.usable_memory`).

The proxies run in a child process in a memory cgroup of the test's own (root: made and removed
here), with a soft ``RLIMIT_NOFILE`` of 4096 (the fd share alone: 512 tunnels a session); the
servers and clients are this process's.
"""

from __future__ import annotations

import os
import selectors
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[1]
_MEMORY = 384 << 20
#: Bytes each upstream connection sends (more than a tunnel's buffers in the proxy hold).
_PUSH = 1 << 20
_CHILD = textwrap.dedent(
    """
    import resource, sys
    from pathlib import Path
    from sandbox._proxy import FilteringProxy
    resource.setrlimit(resource.RLIMIT_NOFILE, (4096, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    d = Path(sys.argv[1])
    proxies = []
    print("ready", flush=True)
    for line in sys.stdin:
        p = FilteringProxy(d / f"{line.strip()}.sock", allowed=("localhost",))
        p.start()
        proxies.append(p)
        print("started", flush=True)
    for p in proxies:
        p.close()
    """
)


@contextmanager
def _memory_cgroup(limit: int) -> Iterator[Path]:
    """A memory cgroup (v1 or v2) of ``limit`` bytes; removed after (its processes ended first)."""
    name = f"shellrt-r42-net2-{os.getpid()}"
    v1 = Path("/sys/fs/cgroup/memory")
    if v1.is_dir():
        where, knob = v1 / name, "memory.limit_in_bytes"
    else:
        where, knob = Path("/sys/fs/cgroup") / name, "memory.max"
    try:
        where.mkdir()
        (where / knob).write_text(str(limit))
    except OSError as exc:
        with suppress(OSError):
            where.rmdir()
        message = f"cannot make a memory cgroup at {where} ({exc}): run as root on a host with one"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    try:
        yield where
    finally:
        with suppress(OSError):
            where.rmdir()


@contextmanager
def _pusher() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that sends `_PUSH` bytes down each connection it accepts and
    holds it open: one thread, non-blocking."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1024)
    listener.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ)
    left: dict[socket.socket, int] = {}
    stop = threading.Event()
    chunk = b"x" * 65536

    def run() -> None:
        while not stop.is_set():
            for key, _ in sel.select(0.1):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if sock is listener:
                    with suppress(OSError):
                        conn, _ = listener.accept()
                        conn.setblocking(False)
                        left[conn] = _PUSH
                        sel.register(conn, selectors.EVENT_WRITE)
                    continue
                try:
                    left[sock] -= sock.send(chunk[: left[sock]])
                except BlockingIOError:
                    continue
                except OSError:
                    left[sock] = 0
                if left[sock] <= 0:
                    sel.unregister(sock)  # held open, silent

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        sel.close()
        listener.close()
        for s in left:
            s.close()


def _fill(path: Path, port: int, clients: list[socket.socket]) -> int:
    """Open stalled tunnels (never read) through ``path`` until the proxy turns one away."""
    for opened in range(600):
        s = socket.socket(socket.AF_UNIX)
        clients.append(s)
        s.settimeout(10)
        try:
            s.connect(str(path))
            s.sendall(f"CONNECT localhost:{port} HTTP/1.1\r\n\r\n".encode())
            answer = s.recv(39)  # exactly "HTTP/1.1 200 Connection established\r\n\r\n"
        except OSError as exc:
            raise AssertionError(f"the proxy process is gone after {opened} tunnels of {path.stem} ({exc})") from None
        if not answer.startswith(b"HTTP/1.1 200"):
            assert answer.startswith(b"HTTP/1.1 503"), f"after {opened} tunnels of {path.stem} the proxy answered {answer!r}"
            return opened
        s.sendall(b"\x00stall")  # another protocol to a listed non-public host: piped as is
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


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) << 10
    raise AssertionError("no VmRSS")


def test_stalled_tunnels_of_two_sessions_leave_the_host_process_alive(tmp_path: Path) -> None:
    from tests._http_server import serve

    clients: list[socket.socket] = []
    with _memory_cgroup(_MEMORY) as cgroup:
        child = subprocess.Popen(
            ["sh", "-c", f'echo $$ > {cgroup}/cgroup.procs && exec "$0" -c "$1" "$2"', sys.executable, _CHILD,
             str(tmp_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(_ROOT), os.environ.get("PYTHONPATH")]))},
        )  # fmt: skip
        assert child.stdin is not None and child.stdout is not None

        def start(name: str) -> None:
            assert child.stdin is not None and child.stdout is not None
            child.stdin.write(name + "\n")
            child.stdin.flush()
            assert child.stdout.readline().strip() == "started"

        try:
            assert child.stdout.readline().strip() == "ready"
            with _pusher() as port, serve({"/": (200, {"Content-Type": "text/plain"}, b"fine")}) as web:
                start("a")
                first = _fill(tmp_path / "a.sock", port, clients)
                start("b")
                second = _fill(tmp_path / "b.sock", port, clients)
                print(f"tunnels: a {first}, b {second}; proxy process RSS {_rss(child.pid) >> 20} MiB")
                start("c")
                reply = _get(tmp_path / "c.sock", web.server_port)
                assert reply.startswith(b"HTTP/1.0 200") and reply.endswith(b"fine"), (first, second, reply[:300])
                assert child.poll() is None, (first, second)
                # What the proxies hold stays well inside the process's memory.
                assert _rss(child.pid) < _MEMORY // 2, (first, second, _rss(child.pid) >> 20)
        finally:
            for s in clients:
                s.close()
            child.stdin.close()
            try:
                child.wait(timeout=20)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
