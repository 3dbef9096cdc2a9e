"""Red team round 8 (bwrap): a host daemon's socket inside the workspace was the sandbox's to use.

Host sockets were hidden everywhere but in the writable roots, on the reasoning that a socket
there is the command's own. With the sandbox's own network namespace it never is in the
host's table: a socket the host lists there belongs to a host process -- git's fsmonitor daemon
(``.git/fsmonitor--daemon.ipc``), Docker Desktop's ``~/.docker/desktop/docker.sock`` when the
workspace is the home directory, any daemon the operator runs in the repository. A command
connected to it; for a root caller the idmapped workspace shows root's 0600 socket as the
sandbox uid's own, so not even the uid stopped it. Each test failed before the fix (masked
after the roots are bound, `sandbox._hostsockets.ipc_mask_args`' ``inside``), per session and per
command; `test_the_attacks_hold_for_an_unprivileged_caller` (root) runs them as uid 65534.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
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
CONNECT = (
    '/usr/bin/python3 -c "import socket, sys; s = socket.socket(socket.AF_UNIX); '
    "s.settimeout(5); s.connect(sys.argv[1]); s.sendall(b'GET /'); print('reached', s.recv(64))\" "
)


class HostDaemon:
    """A unix socket server of the host's (mode 0600, the caller's), recording who connected."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            self.sock.bind(str(path))
        finally:
            os.umask(old)
        self.sock.listen(4)
        self.sock.settimeout(0.2)
        self.requests: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    self.requests.append(conn.recv(64))
                    conn.sendall(b"host daemon answered")
                except OSError:
                    pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


@pytest.fixture
def ws() -> Iterator[Path]:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = Path(tempfile.mkdtemp(prefix="rt8s-"))  # short: a socket path has at most 107 bytes
    ws.chmod(0o755)
    try:
        yield ws
    finally:
        shutil.rmtree(ws)


def _session(ws: Path, session: Path, persistent: bool, steps: list[str | HostDaemonStep]) -> list[str]:
    """Run ``steps`` in one bwrap session: a string is a command (its output collected), a
    `HostDaemonStep` starts a host daemon at its path before the next command."""

    async def main() -> list[str]:
        backend = create_backend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws))
        await backend.start()
        outputs: list[str] = []
        try:
            async with Supervisor(backend, session_dir=session) as sup:
                for step in steps:
                    if isinstance(step, HostDaemonStep):
                        step.start()
                        continue
                    if step.startswith("&"):
                        await sup.start_background(step[1:])
                        await anyio.sleep(1.5)
                        continue
                    result = await sup.run(step, timeout_s=60)
                    assert result.output_path is not None
                    outputs.append(result.output_path.read_text())
        finally:
            await backend.close()
        return outputs

    return anyio.run(main)


class HostDaemonStep:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.daemon: HostDaemon | None = None

    def start(self) -> None:
        self.daemon = HostDaemon(self.path)

    def close(self) -> None:
        if self.daemon is not None:
            self.daemon.close()


@pytest.mark.parametrize("persistent", MODES)
@pytest.mark.parametrize("where", [".docker/desktop/docker.sock", ".git/fsmonitor--daemon.ipc"])
def test_a_host_daemon_in_the_workspace_is_out_of_reach(
    ws: Path, tmp_path: Path, persistent: bool, where: str
) -> None:
    daemon = HostDaemon(ws / where)
    try:
        (out,) = _session(ws, tmp_path / "s", persistent, [CONNECT + where])
    finally:
        daemon.close()
    assert daemon.requests == [] and "reached" not in out, out


@pytest.mark.parametrize("persistent", MODES)
def test_a_host_daemon_socket_cannot_be_moved_out_of_its_mask(
    ws: Path, tmp_path: Path, persistent: bool
) -> None:
    """The host's table keeps the path the socket was bound at: a directory renamed in the sandbox
    took the socket to a path no later sandbox covered. Its parents are pinned now (``EBUSY``)."""
    daemon = HostDaemon(ws / "tools" / "run" / "lsp.sock")
    try:
        moved, out = _session(
            ws,
            tmp_path / "s",
            persistent,
            [
                "mv tools moved; mv tools/run tools/r2; true",
                CONNECT + "moved/run/lsp.sock; " + CONNECT + "tools/r2/lsp.sock; true",
            ],
        )
    finally:
        daemon.close()
    assert (ws / "tools" / "run" / "lsp.sock").exists(), moved
    assert daemon.requests == [] and "reached" not in out, (moved, out)


@pytest.mark.parametrize("persistent", MODES)
def test_a_host_daemon_started_in_the_workspace_during_the_session(
    ws: Path, tmp_path: Path, persistent: bool
) -> None:
    """Bound after the session sandbox started: the next command runs in one that hides it."""
    step = HostDaemonStep(ws / "tools" / "lsp.sock")
    try:
        first, second = _session(ws, tmp_path / "s", persistent, ["true", step, CONNECT + "tools/lsp.sock"])
    finally:
        step.close()
    assert step.daemon is not None and step.daemon.requests == [], second
    assert "reached" not in second, second


@pytest.mark.parametrize("persistent", MODES)
def test_a_command_still_reaches_its_own_server_in_the_workspace(
    ws: Path, tmp_path: Path, persistent: bool
) -> None:
    """A background server a command started in the workspace stays reachable for later commands."""
    serve = (
        "&/usr/bin/python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.bind('own.sock'); "
        "s.listen(); c, _ = s.accept(); c.recv(64); c.sendall(b'own server answered'); c.close()\""
    )
    (out,) = _session(ws, tmp_path / "s", persistent, [serve, CONNECT + "own.sock"])
    assert "own server answered" in out, out


def test_the_attacks_hold_for_an_unprivileged_caller() -> None:
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, run this file directly)"
    )
    require(shutil.which("setpriv") is not None and shutil.which("bwrap") is not None, "setpriv and bwrap")
    tests = [
        "test_a_host_daemon_in_the_workspace_is_out_of_reach",
        "test_a_host_daemon_socket_cannot_be_moved_out_of_its_mask",
        "test_a_host_daemon_started_in_the_workspace_during_the_session",
        "test_a_command_still_reaches_its_own_server_in_the_workspace",
    ]
    collected, outcome = _nonroot.run_as_nobody(
        [f"tests/{Path(__file__).name}::{name}" for name in tests],
        collect_args=[f"{__file__}::{name}" for name in tests],
    )
    summary = outcome.output[-4000:]
    assert outcome.returncode == 0 and outcome.tests == collected.items and not outcome.skipped, summary
