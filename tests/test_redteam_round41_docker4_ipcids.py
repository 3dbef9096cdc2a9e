"""Red team round 41, docker4: a recycled container's SysV id cursor told the next task what the
last one did.

A recycled container keeps its IPC namespace. The reset removes every SysV object left, but the
kernel hands out ids from a cursor (``idr_alloc_cyclic``) no removal rewinds: a task that made and
removed 50 shared memory segments left the next task's first ``shmget`` id at 51, one queue or
semaphore set moved theirs by one. A channel between tasks that must not talk, with no object
left for the reset to see.

The property: the next task's first ids do not depend on what the last task allocated. Container A's
first task allocates nothing; container B's makes and removes objects. B either gets no next task
(its reset refuses: `ResetError`) or that task sees the ids A's second task sees. A real container
and a real reset (FAIL, not skip, under CI=true; recycling needs a root host).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from sandbox.docker._reset import ResetError
from tests._docker_support import config, policy, require_docker, run_argv

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_PROBE = "ipcmk -M 4096; ipcmk -Q; ipcmk -S 1; ipcrm -a"
_SPEND = (
    "i=0; while [ $i -lt 50 ]; do ipcrm -m $(ipcmk -M 4096 | awk '{print $NF}'); i=$((i+1)); done;"
    " ipcrm -q $(ipcmk -Q | awk '{print $NF}'); ipcrm -s $(ipcmk -S 1 | awk '{print $NF}'); echo spent"
)


async def _second_task(tmp_path: Path, name: str, first: str) -> str | None:
    """The probe's output in the second task of a container whose first task ran ``first``; None
    when the reset refused the container."""
    (tmp_path / f"{name}1").mkdir()
    (tmp_path / f"{name}2").mkdir()
    async with DockerBackend(config(), policy(tmp_path / f"{name}1")) as backend:
        await backend.protect_executor()
        await run_argv(backend, "sh", "-c", first)
        try:
            with anyio.fail_after(60):
                await backend.reset()
        except ResetError:
            return None
        await backend.reuse_for(policy(tmp_path / f"{name}2"))
        return await run_argv(backend, "sh", "-c", _PROBE)


async def test_the_next_task_sees_ids_no_earlier_task_chose(tmp_path: Path) -> None:
    require_docker()
    quiet = await _second_task(tmp_path, "a", "true")
    assert quiet is not None, "a task that allocated nothing must leave a reusable container"
    busy = await _second_task(tmp_path, "b", _SPEND)
    assert busy is None or busy == quiet, f"the last task's SysV ids showed through: {quiet!r} then {busy!r}"
