"""Red team, round 38 (review5): how a docker command ended was read from the next command's file.

Round 38 (docker) had the helper (priv.c) write how the command ended (``s``/``x``) into the
runner's fd-9 file, one per TMPDIR slot, truncated and reused by the slot's next holder. The helper
frees the slot (unlinks its lock) before the runner, woken by the helper's exit, reads that file:
a command started meanwhile took the slot (the lowest free one) and truncated the same file, or
its helper wrote its own end there. The runner then read nothing and fell back to ``$? > 128``:
an honest ``exit 137`` came back as SIGKILL again (13 of 450 with 3 such loops beside 3 loops of
``true``, debian), and a death by signal could read another command's ``x``. Now the report goes
to the slot's lock itself, the file this runner made (O_EXCL) and holds open as fd 9: the helper's
unlink leaves it this runner's, and the next holder makes a new one.

A real container (FAIL, not skip, under CI=true).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox import ExecRequest
from sandbox.docker import DockerBackend
from tests._docker_support import BUSYBOX, DEBIAN, config, policy, require_docker

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_ENV = {"PATH": "/bin:/usr/bin"}


@pytest.mark.parametrize("image", [DEBIAN, BUSYBOX])
async def test_concurrent_commands_keep_their_own_end(tmp_path: Path, image: str) -> None:
    """Failed before: debian 13 of 450, busybox 1 of 1 runs (any wrong end fails it)."""
    require_docker()
    wrong: list[tuple[str, int, int | None]] = []
    ran = 0
    expected = {"exit 137": (137, None), "kill -KILL $$": (137, 9), "exit 143": (143, None)}

    async with DockerBackend(config(image), policy(tmp_path)) as backend:

        async def loop(script: str, count: int) -> None:
            nonlocal ran
            for _ in range(count):
                proc = await backend.exec(ExecRequest(argv=("sh", "-c", script), cwd="/workspace", env=_ENV))
                status = await proc.wait()
                if script in expected:
                    ran += 1
                    if (status.exit_code, status.signal) != expected[script]:
                        wrong.append((script, status.exit_code, status.signal))

        async with anyio.create_task_group() as tg:
            for script in expected:
                tg.start_soon(loop, script, 150)
            for _ in range(3):
                tg.start_soon(loop, "true", 150)
    assert ran == 450
    assert wrong == [], f"{len(wrong)} of {ran} ended otherwise: {wrong[:10]}"
