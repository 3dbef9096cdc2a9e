"""Red team round 36, docker2: what a task leaves in a recycled container's network namespace.

A reset refused a container with a listening TCP socket, a UDP or a unix socket left, but ignored
TCP connections in their closing states ("they outlive their processes"). A TIME_WAIT entry
outlives them by 60 s, and a recycled container starts its next task ~1 s after the reset: the
entries are still in the namespace's ``/proc/net/tcp``, which every command reads. The task chose
both ports of each connection on the loopback (a ``bind`` before its ``connect``), so each entry
carried 32 bits of its choosing to the next task: a storage channel, as round 9's xattrs were
(answers, a dataset's labels), in a namespace a fresh container would not share.

Now the container's network namespace keeps no TIME_WAIT entry (``net.ipv4.tcp_max_tw_buckets``
0: a closed connection is gone at once) and a reset refuses any TCP socket left in any state.

A real container (FAIL, not skip, under CI=true), as root: recycling needs a root host.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from sandbox.docker._reset import open_sockets
from tests._docker_support import config, policy, require_docker, run_sh
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

#: The client binds port 31337 (0x7A69) and closes first: its end of the connection is the one
#: left in TIME_WAIT.
_LEAVE = (
    "perl -MIO::Socket::INET -e '"
    '$s = IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1", LocalPort => 4242, ReuseAddr => 1)'
    ' or die "listen: $!";'
    ' $c = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => 4242, LocalPort => 31337)'
    ' or die "connect: $!";'
    " $a = $s->accept; close $c; select(undef, undef, undef, 0.2); close $a; close $s;"
    ' print "sent\\n";\''
)
_SEEN = "cat /proc/net/tcp /proc/net/tcp6"


async def test_a_task_leaves_no_tcp_entry_for_the_next_one(tmp_path: Path) -> None:
    require_docker()
    require(os.geteuid() == 0, "recycling needs a root host")
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    async with DockerBackend(config(), policy(first)) as backend:
        await backend.protect_executor()
        code, said = await run_sh(backend, _LEAVE)
        assert (code, said) == (0, "sent\n"), said
        with anyio.fail_after(30):
            await backend.reset()
        await backend.reuse_for(policy(second))
        _, seen = await run_sh(backend, _SEEN)
        assert ":7A69" not in seen, f"the next task read the previous task's connection: {seen!r}"


def test_any_tcp_socket_left_fails_the_reset(tmp_path: Path) -> None:
    """`open_sockets` reads the host's view of a namespace: here the test's own, with a
    connection closed by this side (its end in TIME_WAIT, or gone where none are kept)."""
    import socket

    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    client = socket.create_connection(server.getsockname())
    accepted, _ = server.accept()
    port = client.getsockname()[1]
    client.close()
    accepted.close()
    server.close()
    found = open_sockets(os.getpid())
    with open("/proc/net/tcp", encoding="ascii") as fh:
        left = [line for line in fh.read().splitlines()[1:] if f":{port:04X} " in line]
    if left:  # the host keeps TIME_WAIT entries: the reset must see this one
        assert any(f":{port:04X}" in f for f in found), (left, found)
