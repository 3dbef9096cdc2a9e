"""Red team round 45, docker6: ``/dev/mqueue``'s times told the next task when the last one acted.

A reset renews every tmpfs a command reaches and the I/O directory, and the host empties the
workspace, but the mqueue file system (one per IPC namespace) is only emptied. A task that made
and removed a queue itself left nothing to remove, so the root's modification time stayed the
second the task chose: the next task read it (``stat /dev/mqueue``) against the reset's own time
(the renewed ``/tmp``). Now the host sets the root's times to the reset's moment (`_roottimes`).

A real container (FAIL, not skip, under CI=true), as root: recycling needs a root host. The queue
is made by a small static program compiled here (the test image has no ``mq_open`` tool).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import config, policy, require_docker, reset_workspaces, run_sh
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_MQ = r"""
#include <fcntl.h>
#include <mqueue.h>
#include <stdio.h>
int main(void) {
    mqd_t q = mq_open("/shellrt-r45", O_CREAT | O_RDWR, 0600, NULL);
    if (q == (mqd_t)-1 || mq_close(q) != 0 || mq_unlink("/shellrt-r45") != 0) { perror("mq"); return 1; }
    puts("made and removed");
    return 0;
}
"""
_TIMES = "stat -c %Y /dev/mqueue /tmp"


async def test_the_next_task_cannot_read_when_the_last_one_used_a_queue(tmp_path: Path) -> None:
    require_docker()
    require(os.geteuid() == 0, "recycling needs a root host")
    cc = shutil.which("cc") or shutil.which("gcc")
    require(cc is not None, "a C compiler for the queue program")
    assert cc is not None
    first, second = reset_workspaces(tmp_path)
    (tmp_path / "mq.c").write_text(_MQ)
    built = subprocess.run(
        [cc, "-static", "-O1", "-o", str(first / "mq"), str(tmp_path / "mq.c"), "-lrt"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    require(built.returncode == 0, f"could not build a static program: {built.stderr[-300:]}")
    async with DockerBackend(config(), policy(first)) as backend:
        await backend.protect_executor()
        code, said = await run_sh(backend, "./mq && stat -c %Y /dev/mqueue")
        assert code == 0 and "made and removed" in said, said
        acted = int(said.split()[-1])
        # The reset comes two whole seconds later: its time and the task's cannot share a second.
        await run_sh(backend, "sleep 2.2")
        with anyio.fail_after(60):
            await backend.reset()
        await backend.reuse_for(policy(second))
        code, said = await run_sh(backend, _TIMES)
    assert code == 0, said
    mq_time, renewed = (int(v) for v in said.split())
    assert mq_time != acted and mq_time >= renewed - 1, (
        f"the next task read the second the last one used a queue ({acted}): /dev/mqueue {mq_time}, "
        f"the reset's /tmp {renewed}"
    )


async def test_the_next_task_cannot_read_when_the_last_one_listed_its_ptys(tmp_path: Path) -> None:
    """``/dev/pts`` (a devpts the host mounts at the start, never renewed): the first listing after
    its times were set moves its access time (``relatime``) to a moment the task chose."""
    require_docker()
    require(os.geteuid() == 0, "recycling needs a root host")
    first, second = reset_workspaces(tmp_path)
    async with DockerBackend(config(), policy(first)) as backend:
        await backend.protect_executor()
        await run_sh(backend, "sleep 1.2")  # the listing's second is not the mount's
        code, said = await run_sh(backend, "ls /dev/pts >/dev/null && stat -c %X /dev/pts")
        assert code == 0, said
        acted = int(said.split()[-1])
        await run_sh(backend, "sleep 2.2")
        with anyio.fail_after(60):
            await backend.reset()
        await backend.reuse_for(policy(second))
        code, said = await run_sh(backend, "stat -c %X /dev/pts; stat -c %Y /tmp")
    assert code == 0, said
    pts_time, renewed = (int(v) for v in said.split())
    assert pts_time != acted and pts_time >= renewed - 1, (
        f"the next task read the second the last one listed /dev/pts ({acted}): /dev/pts {pts_time}, "
        f"the reset's /tmp {renewed}"
    )
