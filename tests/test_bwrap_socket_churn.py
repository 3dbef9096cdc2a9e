"""Host programs that create and delete unix sockets never make a bwrap command fail to start.

A socket listed for masking can vanish with its directory before bwrap covers it
(test suites, language servers, agents in temp directories). The start must not
fail because of that (``bwrap: Can't mkdir parents for …``), and a socket that
reappears at a masked path after the start is still refused where docs/security.md
promises it (root caller: the sandbox uid has no write permission on the socket).
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.base import ExecRequest
from sandbox.bwrap import BwrapBackend
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.bwrap]

STARTS = 100
CHURN_BASES = ("/tmp", "/var/tmp")


def _require_bwrap_as_root() -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    require(os.geteuid() == 0, "the churn test runs as root (the sandbox uid is the second wall)")


@contextmanager
def socket_churn() -> Iterator[list[int]]:
    """A host thread binding a socket in a fresh directory under each churn base, then removing
    socket and directory a few ms later, over and over; yields a one-item list: sockets made."""
    made = [0]
    stop = threading.Event()

    def churn() -> None:
        while not stop.is_set():
            live: list[tuple[socket.socket, Path]] = []
            for base in CHURN_BASES:
                directory = Path(tempfile.mkdtemp(prefix="shellrt-churn-", dir=base))
                directory.chmod(0o755)  # crossable: a bwrap run as the sandbox uid masks it too
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.bind(str(directory / "agent.sock"))
                sock.listen()
                live.append((sock, directory))
                made[0] += 1
            time.sleep(0.003)
            for sock, directory in live:
                sock.close()
                os.unlink(directory / "agent.sock")
                directory.rmdir()

    thread = threading.Thread(target=churn, daemon=True)
    thread.start()
    try:
        yield made
    finally:
        stop.set()
        thread.join()


async def _run(backend: BwrapBackend, ws: Path, script: str, stdin: bytes | None = None) -> tuple[int, bytes]:
    request = ExecRequest(
        argv=("/bin/sh", "-c", script), cwd=str(ws), merge_stderr=True, stdin=stdin is not None
    )
    proc = await backend.exec(request)
    chunks: list[bytes] = []

    async def feed() -> None:
        assert proc.stdin is not None and stdin is not None
        await proc.stdin.send(stdin)
        await proc.stdin.aclose()

    async with anyio.create_task_group() as tg:
        if stdin is not None:
            tg.start_soon(feed)
        try:
            while True:
                chunks.append(await proc.stdout.receive())
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            pass
    status = await proc.wait()
    return status.exit_code, b"".join(chunks)


@pytest.mark.parametrize(
    ("persistent", "stdin"),
    [(False, None), (False, b"fed\n"), (True, None)],
    ids=["per-command", "per-command-stdin", "session"],
)
async def test_no_start_fails_while_host_sockets_churn(
    tmp_path: Path, persistent: bool, stdin: bytes | None
) -> None:
    """With stdin too: a failed attempt never read it, and the next one is given it again."""
    _require_bwrap_as_root()
    ws = tmp_path / "ws"
    ws.mkdir()
    backend = BwrapBackend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws))
    failures: list[bytes] = []
    with socket_churn() as made:
        await backend.start()
        try:
            for _ in range(STARTS):
                code, out = await _run(backend, ws, "echo ran; cat", stdin)
                if (code, out) != (0, b"ran\n" + (stdin or b"")):
                    failures.append(out)
        finally:
            await backend.close()
    assert made[0] > STARTS  # the churn really ran alongside
    assert failures == [], f"{len(failures)} of {STARTS} starts failed: {failures[:3]}"


_CONNECT = (
    "python3 -c 'import socket,sys\n"
    "s=socket.socket(socket.AF_UNIX)\n"
    'try:\n s.connect(sys.argv[1]); print("connected")\n'
    'except OSError as e: print("refused", e.errno)\' {path}'
)


@pytest.mark.parametrize("persistent", [False, True], ids=["per-command", "session"])
async def test_a_socket_bound_again_at_a_masked_path_after_the_start_is_refused(
    tmp_path: Path, persistent: bool
) -> None:
    """Root caller: a masked host socket removed and bound again (by root, default umask) while a
    command runs is visible to that command once the mask went with the old file -- and refused:
    the sandbox uid may not write to root's socket. The next command masks it again, so even a
    world-writable one is out of its reach."""
    _require_bwrap_as_root()
    require(shutil.which("python3") is not None, "python3 is needed inside the sandbox")
    ws = tmp_path / "ws"
    ws.mkdir()
    directory = Path(tempfile.mkdtemp(prefix="shellrt-rebound-", dir="/var/tmp"))
    directory.chmod(0o755)  # crossable by the sandbox uid: only the socket's own mode refuses it
    path = directory / "daemon.sock"
    old = os.umask(0o022)
    first = socket.socket(socket.AF_UNIX)
    first.bind(str(path))
    first.listen()
    backend = BwrapBackend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws))
    await backend.start()
    second: socket.socket | None = None
    try:
        gate = ws / "gate"
        script = f"while [ ! -e {gate} ]; do sleep 0.01; done; " + _CONNECT.format(path=path)
        async with anyio.create_task_group() as tg:
            result: list[tuple[int, bytes]] = []

            async def run() -> None:
                result.append(await _run(backend, ws, script))

            tg.start_soon(run)
            await anyio.sleep(1.0)  # the command runs, the mask is in place
            first.close()
            path.unlink()
            second = socket.socket(socket.AF_UNIX)
            second.bind(str(path))
            second.listen()
            gate.touch()
        code, out = result[0]
        assert code == 0, out
        assert out.startswith(b"refused"), out
        gate.unlink()
        # Even world-writable, the socket is masked again for the next command (the session
        # sandbox is replaced: its mask went with the old file).
        path.chmod(0o777)
        code, out = await _run(backend, ws, _CONNECT.format(path=path))
        assert code == 0 and out.startswith(b"refused"), out
    finally:
        os.umask(old)
        first.close()
        if second is not None:
            second.close()
        await backend.close()
        shutil.rmtree(directory, ignore_errors=True)
