"""Red team round 14 (bwrap): a host socket bound by a RELATIVE name was never masked.

``/proc/net/unix`` lists a socket's name as its binder passed it to ``bind``: a daemon started in
a directory with ``bind("app.sock")`` is listed as ``app.sock``. The bwrap masks
(`sandbox._hostsockets.ipc_mask_args`) took only absolute names, so such a daemon -- in the
workspace, or anywhere on the host the sandbox shows -- stayed reachable by every command (the
docker backend's round 14 found the same class in its own check). A relative name is now looked
up through the current directory of each process holding the socket, and masked where that is
the very file. Each test failed before the fix.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.factory import create_backend
from shellrt.supervisor import Supervisor
from tests.conftest import require

pytestmark = pytest.mark.bwrap

CONNECT = (
    '/usr/bin/python3 -c "import socket, sys; s = socket.socket(socket.AF_UNIX); '
    "s.settimeout(5); s.connect(sys.argv[1]); s.sendall(b'GET'); print('reached', s.recv(64))\" "
)
#: A host daemon binding a relative name in its cwd (mode 0777: only a mask keeps a command out); prints "up" once listening, "served" per client.
DAEMON = (
    "import os, socket, sys\n"
    "s = socket.socket(socket.AF_UNIX); s.bind('app.sock'); os.chmod('app.sock', 0o777); s.listen(4)\n"
    "print('up', flush=True)\n"
    "while True:\n"
    "    c, _ = s.accept(); c.recv(8); c.sendall(b'host daemon'); c.close(); print('served', flush=True)\n"
)


class RelativeDaemon:
    def __init__(self, where: Path) -> None:
        where.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", DAEMON], cwd=where, stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "up"

    def close(self) -> str:
        self.proc.kill()
        out, _ = self.proc.communicate()
        return out


@pytest.fixture
def places() -> Iterator[tuple[Path, Path]]:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = Path(tempfile.mkdtemp(prefix="rt14rs-"))
    host = Path(tempfile.mkdtemp(prefix="rt14rs-", dir="/var/tmp"))  # shown read-only in the sandbox
    ws.chmod(0o755)
    host.chmod(0o755)
    try:
        yield ws, host
    finally:
        shutil.rmtree(ws)
        shutil.rmtree(host)


@pytest.mark.parametrize("persistent", [pytest.param(True, id="session"), pytest.param(False, id="per-command")])
def test_a_daemon_bound_by_a_relative_name_is_out_of_reach(
    places: tuple[Path, Path], tmp_path: Path, persistent: bool
) -> None:
    ws, host = places
    daemons = [RelativeDaemon(ws / "tools"), RelativeDaemon(host / "srv")]

    async def main() -> str:
        backend = create_backend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=tmp_path / "s") as sup:
                command = f"{CONNECT} tools/app.sock; {CONNECT} {host}/srv/app.sock; true"
                result = await sup.run(command, timeout_s=60)
                assert result.output_path is not None
                return result.output_path.read_text()
        finally:
            await backend.close()

    try:
        out = anyio.run(main)
    finally:
        served = [d.close() for d in daemons]
    assert "reached" not in out and not any("served" in s for s in served), (out, served)
