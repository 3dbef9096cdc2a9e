"""Red team round 36, docker2: what a task leaves in a recycled container's network namespace.

A reset refused a container with a listening TCP socket, a UDP or a unix socket left, but ignored
TCP connections in their closing states ("they outlive their processes"). A TIME_WAIT entry
outlives them by 60 s, and a recycled container starts its next task ~1 s after the reset: the
entries are still in the namespace's ``/proc/net/tcp``, which every command reads. The task chose
both ports of each connection on the loopback (a ``bind`` before its ``connect``), so each entry
carried 32 bits of its choosing to the next task: a storage channel, as round 9's xattrs were
(answers, a dataset's labels), in a namespace a fresh container would not share.

And the namespace's counters (the loopback's packets and bytes, the protocol statistics) carried
an exact number to the next task: 1,234 datagrams sent, 1,234 read. No reset can zero them. Now a
reset refuses a container whose network counters moved during the task (`_netcounters`; a fresh
one starts them again) and any TCP socket left in any state.

A real container (FAIL, not skip, under CI=true), as root: recycling needs a root host.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend, ResetError
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
        try:
            with anyio.fail_after(30):
                await backend.reset()
        except ResetError as exc:  # refused: the next task gets a fresh container
            assert "counters moved" in str(exc) or ":7A69" in str(exc), exc
            return
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
    found = open_sockets(f"/proc/{os.getpid()}")
    with open("/proc/net/tcp", encoding="ascii") as fh:
        left = [line for line in fh.read().splitlines()[1:] if f":{port:04X} " in line]
    if left:  # the host keeps TIME_WAIT entries: the reset must see this one
        assert any(f":{port:04X}" in f for f in found), (left, found)


#: 1,234 datagrams to the loopback (port 9: no listener; the counters move all the same).
_COUNT = (
    "perl -MIO::Socket::INET -e '"
    '$s = IO::Socket::INET->new(Proto => "udp", PeerAddr => "127.0.0.1:9") or die "socket: $!";'
    ' $s->send("x") for 1 .. 1234; print "sent\\n";\''
)
_COUNTED = "cat /sys/class/net/lo/statistics/rx_packets"


async def test_a_task_that_used_the_network_leaves_its_counters_to_no_other(tmp_path: Path) -> None:
    """The loopback's counters carried an exact number (here 1,234) to the next task: such a
    container is refused by the reset (a fresh one starts its counters at 0); one whose task
    used no socket is still recycled."""
    require_docker()
    require(os.geteuid() == 0, "recycling needs a root host")
    first, second, third = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for path in (first, second, third):
        path.mkdir()
    async with DockerBackend(config(), policy(first)) as backend:
        await backend.protect_executor()
        assert await run_sh(backend, "echo quiet") == (0, "quiet\n")
        with anyio.fail_after(30):
            await backend.reset()  # no socket used: recycled
        await backend.reuse_for(policy(second))
        assert await run_sh(backend, _COUNT) == (0, "sent\n")
        refused: ResetError | None = None
        try:
            with anyio.fail_after(30):
                await backend.reset()
        except ResetError as exc:
            refused = exc
        else:
            await backend.reuse_for(policy(third))
            _, seen = await run_sh(backend, _COUNTED)
            assert "1234" not in seen, f"the next task read the previous task's count: {seen!r}"
        assert refused is not None and "counters moved" in str(refused), refused


async def test_the_next_tasks_pids_tell_nothing_of_the_last_ones_forks(tmp_path: Path) -> None:
    """Pids are handed out in order in the container's pid namespace: after a task that forked
    500 processes the next task's first pid was 500 higher than after a quiet one."""
    require_docker()
    require(os.geteuid() == 0, "recycling needs a root host")
    spaces = [tmp_path / name for name in ("a", "b", "c")]
    for path in spaces:
        path.mkdir()
    async with DockerBackend(config(), policy(spaces[0])) as backend:
        await backend.protect_executor()
        assert (await run_sh(backend, "echo quiet"))[0] == 0
        with anyio.fail_after(30):
            await backend.reset()
        await backend.reuse_for(policy(spaces[1]))
        code, after_quiet = await run_sh(
            backend, 'echo $$; i=0; while [ "$i" -lt 500 ]; do /bin/true; i=$((i + 1)); done'
        )
        assert code == 0, after_quiet
        with anyio.fail_after(30):
            await backend.reset()
        await backend.reuse_for(policy(spaces[2]))
        _, after_forks = await run_sh(backend, "echo $$")
        assert after_forks == after_quiet, (
            f"first pid {after_quiet.strip()} after a quiet task, {after_forks.strip()} after 500 forks"
        )
