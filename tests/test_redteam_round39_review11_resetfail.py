"""Red team round 39, review11: a reset that fails half-way leaves the container in use.

docker2's reset makes the commands' memory cgroup anew (`_cmdcg.renew_commands_cgroup`): the old
one is removed, then one child process detaches its mount at ``/.shellrt-cmds`` and moves the new
one there. When that move fails after the detach (or anything else in the reset fails after the
executor killed every process), `reset` raises `ResetError` and its docstring says the caller must
close the backend; the batch pool does. But the backend itself went on serving: the next command
ran in a container of no known state, here with no commands' cgroup at all (``priv`` moves a command
only where ``/.shellrt-cmds`` is a cgroup), so in the container's own cgroup next to the executor,
which round 25's OOM defence exists to keep commands out of. Now a failed reset marks the
container: `reuse_blocker` says why, and the next command gets a new container (like a killed one),
which is never recycled.

A real container (FAIL, not skip, under CI=true), as root: recycling needs a root host.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

import sandbox.docker._cmdcg as cmdcg
from sandbox.docker import DockerBackend, ResetError
from sandbox.docker._detach import detach_mount
from sandbox.docker._nsmount import NsMount
from sandbox.docker._pidref import PidRef
from sandbox.errors import BackendUnavailableError
from sandbox.policy import ResourceLimits
from tests._docker_support import config, policy, require_docker, run_sh
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.docker]


def _detach_then_fail(pid: PidRef, mounts: list[NsMount], why: str) -> None:
    """What the `_nsmount` child leaves when its ``move_mount`` fails after the ``umount2``."""
    detach_mount(pid, cmdcg.COMMANDS_CGROUP)
    raise BackendUnavailableError(f"could not {why}: move_mount /.shellrt-cmds: (simulated)")


async def test_no_command_runs_after_a_reset_failed_half_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_docker()
    require(os.geteuid() == 0, "recycling needs a root host")
    async with DockerBackend(config(), policy(tmp_path, limits=ResourceLimits(memory_bytes=512 << 20))) as backend:
        await backend.protect_executor()
        code, said = await run_sh(backend, "grep memory /proc/self/cgroup")
        assert code == 0 and said.rstrip().endswith("/shellrt-cmds"), said
        monkeypatch.setattr(cmdcg, "mount_into", _detach_then_fail)
        with anyio.fail_after(30), pytest.raises(ResetError, match="fresh commands' cgroup"):
            await backend.reset()
        monkeypatch.undo()
        blocker = backend.reuse_blocker()
        assert blocker is not None and "reset failed" in blocker, blocker
        old = backend.container_id
        code, said = await run_sh(backend, "grep memory /proc/self/cgroup")
        # The next command runs in a new container, in its commands' cgroup, never in the old one.
        assert code == 0 and said.rstrip().endswith("/shellrt-cmds"), f"a command ran after a failed reset: {said}"
        assert backend.container_id != old and backend.recoveries, backend.recoveries
        assert "reset failed" in backend.recoveries[-1], backend.recoveries
        with pytest.raises(ResetError, match="replaced"):
            await backend.reset()
