"""Red team, round 28 (supbatch): a task whose container died read ``failed``, a verdict.

``error`` is the status of a task that could not run; ``failed`` says its command exited non-zero.
When the sandbox itself died under a command (docker: the container was killed, by the OOM killer,
a host's ``docker kill``, a daemon restart), the supervisor says so (``sandbox_failure``), but the
batch worker read only the exit code it was given (255): the task was ``failed``, as if its check
had failed, and ``--resume`` kept that. It is now ``error`` naming the failure (its exit codes
kept), like output shellrt could not capture. Needs docker; FAIL, not skip, under CI=true.
"""

from __future__ import annotations

import os
import subprocess
import uuid

import anyio

from shellrt.batch import Task, run
from tests._batch_helpers import processes_with_marker
from tests._docker_support import BUSYBOX, owned_containers, require_docker


async def _kill_once_running(marker: str) -> None:
    """``docker kill`` this process's containers once the command (its text holds ``marker``) runs:
    a container killed while it starts is replaced, and the task then runs whole."""
    for _ in range(600):
        if processes_with_marker(marker):
            subprocess.run(
                ["docker", "kill", *owned_containers(os.getpid(), running=True)], capture_output=True, timeout=60
            )
            return
        await anyio.sleep(0.1)
    raise AssertionError("the command never started")


def test_a_task_whose_container_died_is_an_error_not_a_verdict() -> None:
    """Failed before (1 of 1): status ``failed``, exit code 255, no error."""
    require_docker()
    marker = f"deadbox-{uuid.uuid4().hex}"
    command = f"echo {marker} >/dev/null; sleep 30"
    task = Task.model_validate(
        {"id": "dies", "sandbox": {"backend": {"type": "docker", "image": BUSYBOX}}, "commands": [command]}
    )

    async def main() -> list[object]:
        got: list[object] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(_kill_once_running, marker)
            async with run([task], concurrency=1, output_budget=None, default_limits=None) as results:
                async for result in results:
                    got.append(result)
        return got

    [result] = anyio.run(main)
    assert result.status == "error", (result.status, result.error)  # type: ignore[attr-defined]
    assert result.error and "container" in result.error, result.error  # type: ignore[attr-defined]
