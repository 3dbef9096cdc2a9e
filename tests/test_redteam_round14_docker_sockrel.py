"""Red team round 14, docker bind mode: a host socket bound by a *relative* name in the workspace.

Round 9 covers every host socket the host's ``/proc/net/unix`` lists under the workspace. But
that table holds the name as the binder passed it to ``bind``: a daemon the operator starts in
the repository with a relative socket path (``./app.sock``; git binds the basename after a
``chdir`` when the full path is too long for ``sun_path``) is listed as ``app.sock``, which
names no place for shellrt, and the socket was left uncovered: every command of a bind-mode
session connected to it and was answered. Worse, such a name raised ``ValueError`` in the
check: any local user binding a relative name *anywhere* (``cd /tmp && bind("x")``) made every
bind-mode session on the host fail to start, and every command of a running one fail.

A real host server in a subprocess whose cwd is the workspace (FAIL, not skip, under CI=true).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import config, policy, require_docker
from tests.test_redteam_round9_docker_sockets import ANSWER, _probe

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_SERVER = """
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o600)
s.listen(16)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    c.sendall(b"HOST-DAEMON-ANSWER\\n")
    c.close()
"""


def _serve(cwd: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVER, "app.sock"], cwd=cwd, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "listening"
    return proc


@pytest.fixture
def servers() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        proc.kill()
        proc.wait()


async def test_a_socket_bound_by_a_relative_name_is_covered(
    tmp_path: Path, servers: list[subprocess.Popen[str]]
) -> None:
    require_docker()
    ws, elsewhere, later = tmp_path / "ws", tmp_path / "elsewhere", tmp_path / "later"
    for directory in (ws / "run", elsewhere, later):
        directory.mkdir(parents=True)
    servers.append(_serve(ws / "run"))  # the operator's daemon, started in the repository
    servers.append(_serve(elsewhere))  # any local user's, anywhere: must not stop the session
    async with DockerBackend(config(workspace_mode="bind"), policy(ws)) as backend:
        seen = await _probe(backend, "/workspace/run/app.sock")
        assert ANSWER.decode() not in seen, f"a command reached the host daemon's relative socket: {seen!r}"
        servers.append(_serve(later))  # bound while the session runs: the next command still runs
        again = await _probe(backend, "/workspace/run/app.sock")
        assert "refused" in again and ANSWER.decode() not in again, again
