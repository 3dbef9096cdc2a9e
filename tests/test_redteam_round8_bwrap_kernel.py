"""Red team round 8 (bwrap): kernel interfaces the seccomp filter left open, per session and per command.

Found (each failed before its fix in ``sandbox/_seccomp.py``):

* ``AF_VSOCK`` sockets are not cut by a network namespace: under ``network: none`` a command
  shared the host's vsock port space (it could bind a port the host holds, listen where the
  hypervisor connects, and connect to the hypervisor's own services at CID 2). Socket families
  other than unix, inet, inet6 and netlink now fail with ``EAFNOSUPPORT``; that also keeps
  commands from loading rarely used protocol modules (``socket()`` autoloads them).
* ``fcntl(F_SETLEASE)``: a lease on a file the command's uid owns makes every other process's
  open of it block for ``lease-break-time`` (45 s) or fail with ``EWOULDBLOCK`` -- also a file
  outside the writable roots, where the sandbox shows the host read-only (a non-root caller's own
  files: the operator's git reading ``~/.gitconfig`` waited 45 s). It now fails with ``EPERM``.

Held (tests that pass, guarding the future): no nested user namespace, no ``setns``, no
``/proc/sysrq-trigger`` or ``core_pattern`` write, no controlling terminal, fds 0-2 only, no
file capability, no reach to the host's abstract unix sockets.

The attacks run for whoever runs pytest; `test_the_attacks_hold_for_an_unprivileged_caller`
(root) runs them again as uid 65534.
"""

from __future__ import annotations

import errno
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.factory import create_backend
from shellrt.supervisor import Supervisor
from tests import _nonroot
from tests.conftest import require

MODES = [pytest.param(True, id="session"), pytest.param(False, id="per-command")]
_AF_VSOCK = 40
_VMADDR_CID_ANY = 0xFFFFFFFF


def _run(ws: Path, session: Path, command: str, *, persistent: bool) -> tuple[int, str]:
    """Run ``command`` in a fresh bwrap backend on ``ws``: (exit code, output)."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")

    async def main() -> tuple[int, str]:
        backend = create_backend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=session) as sup:
                result = await sup.run(command, timeout_s=60)
                assert result.output_path is not None
                return result.exit_code or 0, result.output_path.read_text()
        finally:
            await backend.close()

    return anyio.run(main)


def _python(ws: Path, code: str) -> str:
    """A command running ``code`` with the interpreter every user may run (root's may be under /root)."""
    (ws / "attack.py").write_text(code)
    return "/usr/bin/python3 attack.py"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    ws.chmod(0o755)
    return ws


@pytest.fixture
def host_vsock_port() -> Iterator[int | None]:
    """A vsock port the host holds (bound, not listening), or None where the host has no vsock."""
    try:
        held = socket.socket(_AF_VSOCK, socket.SOCK_STREAM)
    except OSError:
        yield None
        return
    try:
        held.bind((_VMADDR_CID_ANY, 0xFFFFFFFF))  # VMADDR_PORT_ANY: a free port of the host's
        yield held.getsockname()[1]
    finally:
        held.close()


_VSOCK = """
import errno, socket, sys
try:
    s = socket.socket(40, socket.SOCK_STREAM)
except OSError as e:
    print("socket:", errno.errorcode[e.errno]); sys.exit(0)
try:
    s.bind((0xFFFFFFFF, int(sys.argv[1])))
    print("bind: ok")
except OSError as e:
    print("bind:", errno.errorcode[e.errno])
"""


@pytest.mark.parametrize("persistent", MODES)
def test_vsock_does_not_reach_past_the_network_namespace(
    ws: Path, tmp_path: Path, host_vsock_port: int | None, persistent: bool
) -> None:
    """Before: ``bind: EADDRINUSE`` on the host's port (one port space with the host, CID 2 reachable)."""
    port = host_vsock_port if host_vsock_port is not None else 45999
    code, out = _run(ws, tmp_path / "s", f"{_python(ws, _VSOCK)} {port}", persistent=persistent)
    assert code == 0, out
    assert out.strip() == "socket: EAFNOSUPPORT", out


_FAMILIES = """
import errno, socket
refused, made = [], []
for family in range(1, 46):
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_SEQPACKET, socket.SOCK_RAW):
        try:
            socket.socket(family, kind).close()
        except OSError as e:
            err = e.errno
            continue
        made.append(family)
        break
    else:
        if err != errno.EAFNOSUPPORT:
            refused.append((family, errno.errorcode[err]))
print("made", sorted(set(made)))
"""


@pytest.mark.parametrize("persistent", MODES)
def test_only_unix_inet_and_netlink_sockets(ws: Path, tmp_path: Path, persistent: bool) -> None:
    """Families the network namespace does not own (vsock) or that load modules on demand are refused;
    the ones commands use still work (1 unix, 2 inet, 10 inet6, 16 netlink)."""
    code, out = _run(ws, tmp_path / "s", _python(ws, _FAMILIES), persistent=persistent)
    assert code == 0, out
    assert out.strip() == "made [1, 2, 10, 16]", out


_LEASE = """
import errno, fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
for kind, name in ((fcntl.F_RDLCK, "read"), (fcntl.F_WRLCK, "write")):
    try:
        fcntl.fcntl(fd, fcntl.F_SETLEASE, kind)
        print(name, "lease: ok")
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
    except OSError as e:
        print(name, "lease:", errno.errorcode[e.errno])
"""


@pytest.mark.parametrize("persistent", MODES)
def test_no_lease_on_a_workspace_file(ws: Path, tmp_path: Path, persistent: bool) -> None:
    """Before: both leases taken (the sandbox owns the workspace; as root through the idmapped mount):
    the host's Write/Edit of that file failed with EWOULDBLOCK, a host git reading it waited 45 s."""
    (ws / "a.txt").write_text("x")
    code, out = _run(ws, tmp_path / "s", f"{_python(ws, _LEASE)} a.txt", persistent=persistent)
    assert code == 0, out
    assert out.split("\n")[:2] == ["read lease: EPERM", "write lease: EPERM"], out


_HOLD_LEASE = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
try:
    fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
except OSError as e:
    print("refused", e.errno); sys.exit(0)
try:
    os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT, 0o644)
except OSError:
    pass
time.sleep(5)
"""


@pytest.mark.parametrize("persistent", MODES)
def test_no_lease_on_a_host_file_the_caller_owns(ws: Path, tmp_path: Path, persistent: bool) -> None:
    """A file of the caller outside the writable roots, read-only in the sandbox: a write lease on it
    held the caller's own programs' opens (non-root caller; as root the sandbox uid owns nothing
    there). The host's non-blocking open runs while the command holds it."""
    outside = Path(tempfile.mkdtemp(prefix="shellrt-rt8-lease-", dir="/var/tmp"))
    try:
        outside.chmod(0o755)
        victim = outside / "gitconfig"
        victim.write_text("[user]\n")
        victim.chmod(0o644)
        flag = ws / "holding"

        async def main() -> tuple[str, int]:
            backend = create_backend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws))
            await backend.start()
            blocked = 0
            try:
                async with Supervisor(backend, session_dir=tmp_path / "s") as sup:
                    task = await sup.start_background(f"{_python(ws, _HOLD_LEASE)} {victim} {flag}")
                    # The flag, or the command's end (refused: it exits at once; the snapshot
                    # start_background returned never changes status, so that waited the full 4 s).
                    with anyio.move_on_after(4):
                        while not flag.exists() and sup.tasks.get(task.id).status.value == "running":
                            await anyio.sleep(0.05)
                    if flag.exists():
                        try:
                            os.close(os.open(victim, os.O_RDONLY | os.O_NONBLOCK))
                        except OSError as exc:
                            blocked = exc.errno or 0
                    with anyio.move_on_after(8):
                        await sup.tasks.wait(task.id)  # all its output is in the spool
            finally:
                await backend.close()
            return task.output_path.read_text(), blocked

        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
        out, blocked = anyio.run(main)
        assert blocked != errno.EWOULDBLOCK, "the command held a lease on the caller's host file"
        assert "refused" in out, out
    finally:
        shutil.rmtree(outside)


_HELD = """
import ctypes, errno, os, socket, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
def call(nr, *args):
    r = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
    return "ok" if r >= 0 else errno.errorcode[ctypes.get_errno()]
def opened(path):
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY))
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
x86 = os.uname().machine == "x86_64"
print("unshare-user", call(272 if x86 else 97, 0x10000000))
print("setns", call(308 if x86 else 268, 0, 0))
print("sysrq", opened("/proc/sysrq-trigger"))
print("core_pattern", opened("/proc/sys/kernel/core_pattern"))
print("tty", opened("/dev/tty"))
print("fds", sorted(int(f) for f in os.listdir("/proc/self/fd")))
open("f", "w").close()
try:
    # VFS_CAP_REVISION_2 | effective, CAP_SETUID permitted: a valid v2 capability
    os.setxattr("f", "security.capability", struct.pack("<5I", 0x02000001, 1 << 7, 0, 0, 0))
    print("filecap ok")
except OSError as e:
    print("filecap", errno.errorcode[e.errno])
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(b"\\0" + sys.argv[1].encode())
    print("abstract ok")
except OSError as e:
    print("abstract", errno.errorcode[e.errno])
"""


@pytest.fixture
def host_abstract_socket() -> Iterator[str]:
    """A listening abstract unix socket of the host (its name without the leading NUL)."""
    name = f"shellrt-rt8-{os.getpid()}-{os.urandom(4).hex()}"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(b"\0" + name.encode())
    listener.listen(1)
    try:
        yield name
    finally:
        listener.close()


@pytest.mark.parametrize("persistent", MODES)
def test_held_kernel_interfaces(
    ws: Path, tmp_path: Path, host_abstract_socket: str, persistent: bool
) -> None:
    command = f"{_python(ws, _HELD)} {host_abstract_socket}"
    code, out = _run(ws, tmp_path / "s", command, persistent=persistent)
    assert code == 0, out
    seen = dict(line.split(" ", 1) for line in out.strip().splitlines())
    assert seen["unshare-user"] == "EPERM", out
    assert seen["setns"] == "EPERM", out
    assert seen["sysrq"] in ("EACCES", "EROFS", "ENOENT"), out
    assert seen["core_pattern"] in ("EACCES", "EROFS"), out
    assert seen["tty"] == "ENXIO", out
    assert seen["fds"] == "[0, 1, 2, 3]", out  # 3: the listing's own directory fd
    assert seen["filecap"] == "EPERM", out  # a file capability is a set-id program too
    assert seen["abstract"] == "ECONNREFUSED", out  # the host's abstract sockets: another netns


def test_the_attacks_hold_for_an_unprivileged_caller() -> None:
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, run this file directly)"
    )
    require(shutil.which("setpriv") is not None and shutil.which("bwrap") is not None, "setpriv and bwrap")
    tests = [
        "test_vsock_does_not_reach_past_the_network_namespace",
        "test_only_unix_inet_and_netlink_sockets",
        "test_no_lease_on_a_workspace_file",
        "test_no_lease_on_a_host_file_the_caller_owns",
        "test_held_kernel_interfaces",
    ]
    collected, outcome = _nonroot.run_as_nobody(
        [f"tests/{Path(__file__).name}::{name}" for name in tests],
        collect_args=[f"{__file__}::{name}" for name in tests],
    )
    summary = outcome.output[-4000:]
    assert outcome.returncode == 0 and outcome.tests == collected.items and not outcome.skipped, summary
