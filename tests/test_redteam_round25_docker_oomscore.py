"""Red team round 25, docker: a command that lowers its OOM score back to the executor's.

Round 24 raised every command to ``oom_score_adj`` 1000, but a command may write any score down
to the container's own (0, the executor's; below needs ``CAP_SYS_RESOURCE``, which nothing in the
container holds). At 0, a thousand ``sleep`` processes (each smaller than the executor's dash)
filled the 96 MiB ceiling and the OOM killer chose the executor: the container was replaced and
``/tmp`` lost within 2 s. Now (a root host with a cgroup v1 memory hierarchy, as here) every
command runs in ``shellrt-cmds``, a memory cgroup below the container's, limited to the ceiling
minus the executor's reserve (`sandbox.docker._cmdcg`): an OOM there chooses among commands
only, whatever their scores. FAIL, not skip, under CI=true.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from sandbox.docker import DockerBackend
from sandbox.docker._memsplit import reserve_bytes
from sandbox.policy import ResourceLimits
from tests._docker_support import read_to_end, run_sh, shared_backend, start_sh

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_MEMORY = 96 << 20
#: The command's own score back to the container's, then small processes until memory runs out.
_ATTACK = (
    "echo 0 > /proc/self/oom_score_adj && i=0; while [ $i -lt 1900 ]; do sleep 1000 & i=$((i+1)); done; wait"
)
_WHERE = "grep -E '^[0-9]+:([^:]*,)?memory(,[^:]*)?:' /proc/self/cgroup"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def backend(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DockerBackend]:
    async for b in shared_backend(tmp_path_factory, "rt25oom", limits=ResourceLimits(memory_bytes=_MEMORY)):
        yield b


@pytest.mark.parametrize("user", [None, "root"])
async def test_commands_run_in_a_memory_cgroup_they_cannot_leave_or_widen(
    backend: DockerBackend, user: str | None
) -> None:
    with anyio.fail_after(60):
        rc, out = await run_sh(
            backend,
            f"{_WHERE}; cat /.shellrt-cmds/memory.limit_in_bytes; "
            "echo 999999999999 > /.shellrt-cmds/memory.limit_in_bytes && echo WIDENED; "
            "echo 1 > /.shellrt-cmds/cgroup.procs && echo MOVED; "
            "echo $$ > /sys/fs/cgroup/memory/cgroup.procs && echo LEFT; "
            "mkdir /.shellrt-cmds/x && echo NESTED; cat /.shellrt-cmds/memory.limit_in_bytes",
            user=user,
        )
    lines = out.splitlines()
    # Before: the container's own cgroup. Needs a root host with a cgroup v1 memory hierarchy.
    assert lines[0].endswith("/shellrt-cmds"), f"commands are not in their own memory cgroup: {out}"
    limit = _MEMORY - reserve_bytes(_MEMORY)
    assert lines[1] == lines[-1] == str(limit), out
    assert not {"WIDENED", "MOVED", "LEFT", "NESTED"} & set(lines), out


async def test_a_command_at_the_executors_score_does_not_make_it_the_oom_victim(
    backend: DockerBackend,
) -> None:
    with anyio.fail_after(60):
        assert await run_sh(backend, "echo kept > /tmp/mark") == (0, "")
        proc = await start_sh(backend, _ATTACK)
        await read_to_end(proc.stdout)
        status = await proc.wait()
        after = await run_sh(backend, "cat /tmp/mark; [ -d /proc/1 ] && echo alive")
    # Before: 255, "the container's executor is gone", the container replaced, /tmp/mark lost.
    assert backend.recoveries == [], (status, backend.recoveries)
    assert status.exit_code == 137 and status.oom_killed, status
    assert after == (0, "kept\nalive\n"), after
