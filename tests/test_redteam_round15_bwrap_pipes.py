"""Red team, round 15: pipe buffer pages, a per-uid kernel quota a command shares with the host.

The kernel charges every pipe's buffer to its creator's *real* uid (``fs.pipe-user-pages-soft``,
16384 pages here). Past it, an unprivileged user's new pipes get two pages (8 KiB) instead of
sixteen, and ``F_SETPIPE_SZ`` fails. A non-root caller's commands run under the caller's own uid,
so a command holding 64 pipes of 1 MiB shrinks every pipe the host's shellrt makes next. The host
wrote the ~50 KiB zygote program into such a pipe with one blocking ``write`` in the event loop,
holding the read end itself until the write returned: when the new zygote's bwrap exited before
reading it (a host socket that vanished, a mount race, a bad flag), the write never returned and
the whole process hung -- every session, every timeout. As root the host is exempt (it holds
``CAP_SYS_RESOURCE``) and commands run as the leased uid; the thread that starts the zygote here
drops that capability, so the root run of this file exercises the same write.

Run as uid 65534 too (`tests/_nonroot.py`): there the pipe hog is a sandboxed command.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import shutil
import sys
import threading
from collections.abc import AsyncIterator

import anyio
import pytest

from sandbox import BackendUnavailableError, BwrapConfig, SandboxPolicy
from sandbox._bwrap_zygote import Zygote, ZygoteGoneError
from sandbox._hostproc import HostRunner
from sandbox.base import ExecRequest
from sandbox.bwrap import BwrapBackend
from tests.conftest import require

pytestmark = pytest.mark.anyio

_F_SETPIPE_SZ = 1031
_F_GETPIPE_SZ = 1032
#: Pipes of 1 MiB until the kernel refuses another, then default ones until a fresh pipe is small
#: (the soft limit reached): then the size of a fresh one.
_HOG = (
    "import fcntl,os,sys\n"
    "held=[]\n"
    "for _ in range(200):\n"
    "    r,w=os.pipe();held.append((r,w))\n"
    "    try: fcntl.fcntl(w,1031,1<<20)\n"
    "    except OSError: break\n"
    "for _ in range(300):\n"
    "    r,w=os.pipe();held.append((r,w))\n"
    "    if fcntl.fcntl(w,1032)<65536: break\n"
    "r,w=os.pipe();print('held',len(held),fcntl.fcntl(w,1032),flush=True)\n"
    "sys.stdin.read()\n"
)


def _fresh_pipe_size() -> int:
    r, w = os.pipe()
    try:
        return int(fcntl.fcntl(w, _F_GETPIPE_SZ))
    finally:
        os.close(r)
        os.close(w)


def _hog_here() -> list[int]:
    """This thread's uid over its pipe-page soft limit (what the command does as non-root)."""
    fds: list[int] = []
    for _ in range(400):
        r, w = os.pipe()
        fds += (r, w)
        try:
            fcntl.fcntl(w, _F_SETPIPE_SZ, 1 << 20)
        except OSError:
            break
    for _ in range(300):  # the last few pages: default pipes until a fresh one is small
        r, w = os.pipe()
        fds += (r, w)
        if fcntl.fcntl(w, _F_GETPIPE_SZ) < 65536:
            break
    return fds


_CAP_SYS_ADMIN = 21
_CAP_SYS_RESOURCE = 24


def _drop_pipe_privilege() -> None:
    """Drop CAP_SYS_ADMIN and CAP_SYS_RESOURCE from this *thread*'s effective set (capset acts on
    the calling thread only): the kernel then counts its pipes as an unprivileged user's."""

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [
            ("effective", ctypes.c_uint32),
            ("permitted", ctypes.c_uint32),
            ("inheritable", ctypes.c_uint32),
        ]

    libc = ctypes.CDLL(None, use_errno=True)
    header = Header(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (Data * 2)()
    assert libc.syscall(125, ctypes.byref(header), data) == 0  # capget
    data[0].effective &= ~((1 << _CAP_SYS_ADMIN) | (1 << _CAP_SYS_RESOURCE))
    assert libc.syscall(126, ctypes.byref(header), data) == 0, os.strerror(ctypes.get_errno())  # capset


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def backend(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[BwrapBackend]:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = tmp_path_factory.mktemp("rt15pipes")
    be = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=ws))
    try:
        await be.start()
    except BackendUnavailableError as exc:
        require(False, f"bwrap unusable here: {exc}")
    try:
        yield be
    finally:
        await be.close()


def _start_failing_zygote(hog: bool) -> tuple[int, BaseException | None]:
    """In this thread: (the fresh pipe size it sees, what starting a zygote whose sandbox exits
    before reading its program raised)."""
    fds: list[int] = []
    runner = HostRunner("rt15")
    runner.start()
    try:
        if os.geteuid() == 0:
            _drop_pipe_privilege()
            if hog:
                fds = _hog_here()
        size = _fresh_pipe_size()
        raised: BaseException | None = None

        async def main() -> None:
            await Zygote(runner).start(["/bin/false"], sys.executable, {})

        try:
            anyio.run(main)
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            raised = exc
        return size, raised
    finally:
        for fd in fds:
            os.close(fd)
        anyio.run(runner.close)


async def _run_in_thread(hog: bool, timeout: float) -> tuple[int, BaseException | None]:
    """`_start_failing_zygote` in a daemon thread: a hung one is left behind, and reported."""
    out: list[tuple[int, BaseException | None]] = []
    thread = threading.Thread(target=lambda: out.append(_start_failing_zygote(hog)), daemon=True)
    thread.start()
    with anyio.move_on_after(timeout):
        while thread.is_alive():
            await anyio.sleep(0.05)
    assert out, (
        f"the host hung for {timeout:.0f} s starting a zygote whose sandbox exited early while its "
        "uid was over the pipe-page soft limit (a blocking write of the zygote program into a "
        "shrunken pipe)"
    )
    return out[0]


async def test_a_commands_pipe_pages_cannot_hang_the_host(backend: BwrapBackend) -> None:
    proc = await backend.exec(
        ExecRequest(argv=("/usr/bin/python3", "-c", _HOG), cwd=str(backend.policy.workspace), stdin=True)
    )
    try:
        line = b""
        with anyio.fail_after(30):
            while not line.endswith(b"\n"):
                chunk = await proc.stdout.receive()
                assert chunk, "the pipe hog ended early"
                line += chunk
        _, held, inside = line.split()
        assert int(inside) < 65536, f"the hog did not reach the soft limit: {line!r}"
        # A root caller's command charges the session's leased uid: the host's pipes keep their size.
        if os.geteuid() == 0:
            assert _fresh_pipe_size() == 65536
        # Whatever the uid holds, a zygote start that fails before reading its program returns.
        size, raised = await _run_in_thread(hog=os.geteuid() == 0, timeout=20)
        assert size < 65536, f"the zygote start did not meet a shrunken pipe ({size} bytes)"
        assert isinstance(raised, ZygoteGoneError), raised
    finally:
        await proc.kill()
        await proc.wait()
