"""Red team round 9, docker: a host daemon's unix socket inside a bind-mounted workspace.

A pathname socket is reached by its path whatever the network namespace. In bind mode a
daemon the operator runs with its socket in the workspace (git's fsmonitor,
``.git/fsmonitor--daemon.ipc``; Docker Desktop's ``~/.docker/desktop/docker.sock`` with the home
as the workspace; any server in the repository) answered every command, and the idmapped
workspace shows a root-owned 0600 socket as the leased uid's own. bwrap closed this in round 8;
the docker backend had not. Now such sockets are covered at the container's start (parents
pinned: no rename carries one out), and a socket bound there later moves the session to a new
container that covers it. A command's own socket in the workspace still works (the container
never shares the host's network namespace, so its sockets are never in the host's table).

Real containers and a real host server (FAIL, not skip, under CI=true).
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox import ExecRequest
from sandbox.docker import DockerBackend
from tests._docker_support import config, policy, require_docker, run_argv

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

ANSWER = b"HOST-DAEMON-ANSWER"
_CLIENT = r"""use IO::Socket::UNIX;
my $s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or do { print "refused: $!\n"; exit 0 };
my $line = <$s>; print "answered: ", ($line // "(nothing)"), "\n";"""


class _Daemon:
    """A host server on a unix socket (root's, mode 0600), answering every connection."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(str(path))
        os.chmod(path, 0o600)
        self.sock.listen(16)
        self.sock.settimeout(0.2)
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
                conn.sendall(ANSWER + b"\n")

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


@pytest.fixture
def daemons() -> Iterator[list[_Daemon]]:
    started: list[_Daemon] = []
    yield started
    for daemon in started:
        daemon.close()


async def _probe(backend: DockerBackend, path: str) -> str:
    return await run_argv(backend, "perl", "-e", _CLIENT, path)


async def test_host_sockets_in_the_workspace_are_out_of_reach(tmp_path: Path, daemons: list[_Daemon]) -> None:
    require_docker()
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    daemons.append(_Daemon(ws / ".git" / "fsmonitor--daemon.ipc"))
    daemons.append(_Daemon(ws / "daemon.sock"))
    async with DockerBackend(config(workspace_mode="bind"), policy(ws)) as backend:
        for path in ("/workspace/.git/fsmonitor--daemon.ipc", "/workspace/daemon.sock"):
            seen = await _probe(backend, path)
            assert ANSWER.decode() not in seen, f"a command reached the host daemon at {path}: {seen!r}"
        moved = await run_argv(backend, "sh", "-c", "mv .git moved 2>&1; mv daemon.sock d2 2>&1; ls -a")
        assert "moved" not in moved.split() and "d2" not in moved.split(), moved
        # A later command, and a fresh session, still cannot reach them wherever they are.
        for path in ("/workspace/.git/fsmonitor--daemon.ipc", "/workspace/daemon.sock"):
            assert ANSWER.decode() not in await _probe(backend, path)
    async with DockerBackend(config(workspace_mode="bind"), policy(ws)) as second:
        assert ANSWER.decode() not in await _probe(second, "/workspace/.git/fsmonitor--daemon.ipc")


async def test_a_socket_bound_during_the_session_is_covered_before_the_next_command(
    tmp_path: Path, daemons: list[_Daemon]
) -> None:
    require_docker()
    ws = tmp_path / "ws"
    (ws / "run").mkdir(parents=True)
    async with DockerBackend(config(workspace_mode="bind"), policy(ws)) as backend:
        assert "refused" in await _probe(backend, "/workspace/run/late.sock")  # nothing there yet
        daemons.append(_Daemon(ws / "run" / "late.sock"))
        seen = await _probe(backend, "/workspace/run/late.sock")
        assert ANSWER.decode() not in seen, f"a socket bound after the start was reachable: {seen!r}"
        assert any("host socket" in reason for reason in backend.recoveries), backend.recoveries


async def test_a_commands_own_socket_in_the_workspace_still_works(tmp_path: Path) -> None:
    require_docker()
    ws = tmp_path / "ws"
    ws.mkdir()
    server = (
        "use IO::Socket::UNIX; my $l = IO::Socket::UNIX->new(Local => 'own.sock', Listen => 5) or die $!;"
        ' print "listening\\n"; $| = 1; while (my $c = $l->accept) { print $c "OWN-ANSWER\\n"; close $c }'
    )
    async with DockerBackend(config(workspace_mode="bind"), policy(ws)) as backend:
        proc = await backend.exec(
            ExecRequest(argv=("perl", "-e", server), cwd="/workspace", env={"PATH": "/usr/bin:/bin"})
        )
        assert (await proc.stdout.receive()).startswith(b"listening")
        seen = await _probe(backend, "/workspace/own.sock")
        assert "OWN-ANSWER" in seen, seen
        assert backend.recoveries == []
        await proc.kill()
