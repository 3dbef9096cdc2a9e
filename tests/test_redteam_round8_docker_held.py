"""Red team round 8, docker: attempts that held (each a test that would fail if they worked).

A command (the container's leased uid, copy mode, network 'none') tries to leave its cgroup
limits and to reach the host over sockets that do not depend on an address: a host listener
on an abstract unix socket (abstract names are per network namespace) and on 127.0.0.1.
Real containers (FAIL, not skip, under CI=true).
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox import ResourceLimits
from sandbox.docker import DockerBackend
from shellrt.supervisor import Supervisor
from tests._docker_support import DEBIAN, config, policy, require_docker
from tests._nonroot import SYSTEM_PYTHON
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.docker]


@pytest.fixture
async def sup(tmp_path: Path) -> AsyncIterator[Supervisor]:
    require_docker()
    ws = tmp_path / "ws"
    ws.mkdir()
    backend = DockerBackend(config(DEBIAN), policy(ws, limits=ResourceLimits(pids=64)))
    async with backend, Supervisor(backend, session_dir=tmp_path / "session") as supervisor:
        yield supervisor


async def test_a_command_cannot_leave_or_raise_its_cgroup_limits(sup: Supervisor) -> None:
    script = (
        "for d in /sys/fs/cgroup /sys/fs/cgroup/pids /sys/fs/cgroup/memory; do"
        "  [ -d $d ] || continue;"
        "  (echo $$ > $d/cgroup.procs) 2>/dev/null && echo moved-$d;"
        "  mkdir $d/escape 2>/dev/null && echo made-$d;"
        "  for f in pids.max memory.max memory.limit_in_bytes; do"
        "    [ -e $d/$f ] && { (echo max > $d/$f) 2>/dev/null && echo raised-$d/$f; };"
        "  done;"
        "done;"
        " (mount -t cgroup2 none /tmp 2>/dev/null || unshare -C true 2>/dev/null) && echo new-cgroup; "
        "cat /sys/fs/cgroup/pids.max /sys/fs/cgroup/pids/pids.max 2>/dev/null"
    )
    result = await sup.run(script, timeout_s=60)
    assert result.preview.strip() == "64", result.preview


async def test_network_none_reaches_no_host_abstract_socket_nor_loopback(sup: Supervisor) -> None:
    name = f"shellrt-rt8-{secrets.token_hex(6)}"
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        abstract.bind(f"\0{name}")
        abstract.listen(1)
        tcp.bind(("127.0.0.1", 0))
        tcp.listen(1)
        port = tcp.getsockname()[1]
        probe = (
            "perl -MSocket -e 'socket(S, PF_UNIX, SOCK_STREAM, 0) or die;"
            f' connect(S, pack_sockaddr_un("\\0{name}")) and print "abstract-reached\\n"\';'
            f" (echo x > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo loopback-reached; echo done"
        )
        result = await sup.run(probe, timeout_s=60)
        assert result.preview.strip() == "done", result.preview
        for listener in (abstract, tcp):
            listener.setblocking(False)
            with pytest.raises(BlockingIOError):
                listener.accept()
    finally:
        abstract.close()
        tcp.close()


_OTHER_USER_PROBE = """
import os, sys
found = []
for d in sys.argv[1:]:
    # List it, look up a name in it (ENOENT means it could be searched), plant a file in it.
    for probe in (os.listdir, lambda p: os.stat(p + "/priv"), lambda p: os.open(p + "/x", os.O_WRONLY | os.O_CREAT, 0o600)):
        try:
            probe(d)
            found.append(d)
        except FileNotFoundError:
            found.append(d)
        except PermissionError:
            pass
print(" ".join(found) or "refused")
"""


async def test_another_host_user_cannot_reach_the_session_directories(sup: Supervisor) -> None:
    """The host side of the I/O directory (FIFOs, request files) and of the workspace copy, as
    another local user (uid 65534) sees them while a command runs: nothing to list, open or plant."""
    require(os.geteuid() == 0, "the session's host directories are root's on a root host")
    backend = sup.backend
    assert isinstance(backend, DockerBackend)
    io_dir, host_dir = backend._io_dir, backend._host_dir
    assert io_dir is not None and host_dir is not None
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: sup.run("sleep 3", timeout_s=30))
        await anyio.sleep(1)
        dirs = [io_dir, os.path.dirname(io_dir), host_dir, os.path.join(host_dir, "workspace")]
        probe = await anyio.to_thread.run_sync(
            lambda: subprocess.run(
                [SYSTEM_PYTHON, "-I", "-S", "-c", _OTHER_USER_PROBE, *dirs],
                capture_output=True,
                text=True,
                user=65534,
                group=65534,
                extra_groups=[],
                timeout=30,
            )
        )
    assert probe.stdout.strip() == "refused", (probe.stdout, probe.stderr)
