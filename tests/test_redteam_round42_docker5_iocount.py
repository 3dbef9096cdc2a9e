"""Red team round 42, docker5: a recycled container's I/O directory counted the last task's commands.

Each command's output FIFO (and request file) is made by the host in the session's I/O directory,
on the host's ``/dev/shm`` tmpfs, whose superblock numbers inodes from one counter. A command sees
its own FIFO's number (``stat -L /proc/self/fd/2``) and the I/O directory's, made at the session's
start (``stat /.shellrt-io``: the mount point, whatever its mode). The difference is every file the
host made there since: two per command, so the next task's first command read 85 after a task of
41 commands where a fresh container's first reads 3, exactly on a quiet host (the standard of
round 41's tmpfs inode counters). Now each reset gives the container a new I/O directory (made
after the task, bound over the last one), so the difference starts again where it starts for a
fresh container, whatever the last task ran.

A real container and a real reset (FAIL, not skip, under CI=true; recycling needs a root host).
The bound leaves room for files other sessions on the host make meanwhile; the last task's 40
commands would add 80.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import config, policy, require_docker, reset_workspaces, run_argv

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

#: Files the host made in the I/O directory's file system since the directory was made.
_PROBE = "echo $(( $(stat -L -c %i /proc/self/fd/2) - $(stat -c %i /.shellrt-io) ))"


async def test_the_next_task_cannot_count_the_last_ones_commands(tmp_path: Path) -> None:
    require_docker()
    first, second = reset_workspaces(tmp_path)
    async with DockerBackend(config(), policy(first)) as backend:
        await backend.protect_executor()
        fresh = int(await run_argv(backend, "sh", "-c", _PROBE))
        for _ in range(40):
            await run_argv(backend, "true")
        with anyio.fail_after(60):
            await backend.reset()
        await backend.reuse_for(policy(second))
        after = int(await run_argv(backend, "sh", "-c", _PROBE))
    assert after < fresh + 40, (
        f"the next task counted the last one's commands: {fresh} fresh, {after} after a reset"
    )
