"""Red team round 54 (docker12): a root command of a ``root_can_administer`` session wrote the
commands' memory cgroup (docs/security.md, "Red team, round 54: docker12").

The commands' memory cgroup (round 25, `sandbox.docker._cmdcg`) is mounted read-write at
``/.shellrt-cmds``, its files owned by the executor's uid: no command is their owner, and without
a capability none may write them. With the opt-in a uid-0 command holds ``CAP_DAC_OVERRIDE``,
which ignores those modes: it disabled the OOM killer of every later command
(``memory.oom_control``), raised their limit into the executor's reserve, moved the executor into
a cgroup of its choosing (``cgroup.procs``: cgroup v1 lets host uid 0 move any process) and made
child cgroups, each a memory cgroup of the host's (a v1 hierarchy has no ``max.descendants``: one
command could spend the host's 65,535 memory cgroup ids, and every later container and service
start on the host would fail). Now, once the executor's ``priv boot-admin`` holds the directory open, the
host detaches that mount as it does the I/O directory's: commands still join the cgroup (through
the descriptor, which only the executor's identity may follow) and no path in the container
names it.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox import ExecRequest
from sandbox.docker import DockerBackend
from sandbox.docker._cmdcg import CHILD, container_memory_cgroup
from sandbox.policy import ResourceLimits
from tests._docker_support import DEBIAN, config, policy, read_to_end, require_docker
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
#: Small: the OOM probe below fills it in a moment.
_MEMORY = 256 * 1024 * 1024


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def admin(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DockerBackend]:
    require_docker()
    ws = tmp_path_factory.mktemp("rt54admincg")
    limits = ResourceLimits(memory_bytes=_MEMORY)
    async with DockerBackend(config(DEBIAN, root_can_administer=True), policy(ws, limits=limits)) as backend:
        yield backend


async def _run(backend: DockerBackend, script: str, user: str | None) -> tuple[int | None, bool, str]:
    proc = await backend.exec(
        ExecRequest(argv=("sh", "-c", script), cwd="/workspace", env=ENV, merge_stderr=True, user=user)
    )
    with anyio.fail_after(60):
        out = await read_to_end(proc.stdout)
        status = await proc.wait()
    return status.exit_code, status.oom_killed, out.decode(errors="replace")


def _commands_cgroup(backend: DockerBackend) -> str:
    """The host's directory of the session's commands' memory cgroup (a root cgroup-v1 host)."""
    assert backend.container_id is not None
    inspected = subprocess.run(
        ["docker", "inspect", "-f", "{{.State.Pid}}", backend.container_id],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    init = int(inspected.stdout.strip())
    parent = container_memory_cgroup(init)
    require(parent is not None, "a root host with a cgroup v1 memory hierarchy")
    assert parent is not None
    return os.path.join(parent, CHILD)


_WRITES = (
    # Each prints WROTE only when the kernel took the write.
    "mkdir /.shellrt-cmds/rt54 2>/dev/null && echo WROTE-mkdir",
    "echo 1 > /.shellrt-cmds/memory.oom_control 2>/dev/null && echo WROTE-oom",
    # memsw first: the kernel keeps the limit at most memsw (the host set both to the same).
    "echo 17179869184 > /.shellrt-cmds/memory.memsw.limit_in_bytes 2>/dev/null;"
    " echo 17179869184 > /.shellrt-cmds/memory.limit_in_bytes 2>/dev/null && echo WROTE-limit",
    "echo $$ > /.shellrt-cmds/cgroup.procs 2>/dev/null && echo WROTE-procs",
    "ls /.shellrt-cmds/ 2>/dev/null | grep -q cgroup.procs && echo SEES-cgroup",
    # Held: the descriptor the executor, its runners and helpers hold needs ptrace access.
    "for p in /proc/[0-9]*; do echo 1 > $p/fd/23/memory.oom_control 2>/dev/null && echo WROTE-fd; done; true",
)


@pytest.mark.parametrize("probe", _WRITES)
async def test_an_admin_root_command_cannot_write_the_commands_cgroup(
    admin: DockerBackend, probe: str
) -> None:
    cgroup = _commands_cgroup(admin)
    limit_before = Path(cgroup, "memory.limit_in_bytes").read_text()
    rc, _oom, out = await _run(admin, probe, "root")
    assert "WROTE" not in out and "SEES" not in out, (rc, out)
    # The host's view agrees: no child cgroup, the OOM killer on, the limit the host set.
    assert [e.name for e in os.scandir(cgroup) if e.is_dir()] == []
    assert "oom_kill_disable 0" in Path(cgroup, "memory.oom_control").read_text()
    assert Path(cgroup, "memory.limit_in_bytes").read_text() == limit_before


@pytest.mark.parametrize("user", ["root", None])
async def test_commands_still_run_in_the_commands_cgroup(admin: DockerBackend, user: str | None) -> None:
    rc, _oom, out = await _run(admin, "grep memory /proc/self/cgroup", user)
    assert rc == 0 and out.strip().endswith(f"/{CHILD}"), out


async def test_an_oom_kill_in_the_commands_cgroup_is_still_reported(admin: DockerBackend) -> None:
    # The executor reads the commands' cgroup's oom_kill counter through the executor's descriptor now.
    rc, oom, out = await _run(admin, "dd if=/dev/zero of=/dev/null bs=400M count=1", None)
    assert rc == 137 and oom, (rc, oom, out)


async def test_a_root_command_cannot_spare_later_commands_from_the_oom_killer(admin: DockerBackend) -> None:
    # Before: the root command's write took, and the next command's hog hung at the ceiling
    # (under_oom) until its caller's own timeout instead of being killed and reported.
    await _run(admin, "echo 1 > /.shellrt-cmds/memory.oom_control", "root")
    with anyio.fail_after(30):
        rc, oom, out = await _run(admin, "dd if=/dev/zero of=/dev/null bs=400M count=1", None)
    assert rc == 137 and oom, (rc, oom, out)
