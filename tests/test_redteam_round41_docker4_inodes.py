"""Red team round 41, docker4: a recycled container's tmpfs inode numbers told the next task what
the last one did.

A reset empties ``/tmp``, ``/dev/shm``, the ``TMPDIR`` slots and the executor's private tmpfs, but a
tmpfs numbers its inodes from a counter of its superblock: a task that made 300 files in ``/tmp``
left the next task's first new file inode 303 where a fresh container's is 3, exactly; and the
slot lock of each command (``/.shellrt-priv/slot.<k>``, which its command may ``stat``) counted the
commands of every earlier task. A channel between tasks that must not talk (round 40's standard for
the lasting processes' ``/proc`` counters). Now each is a new tmpfs after the reset (`_freshtmp`).

The second task's first command must see the inode numbers the first task's first command saw.
A real container and a real reset (FAIL, not skip, under CI=true; recycling needs a root host).
"""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import config, policy, require_docker, reset_workspaces, run_argv

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

#: Each place's next inode number, and the command's own slot lock's.
_PROBE = (
    'for d in /tmp /dev/shm "$TMPDIR"; do f=$d/p.$$; : >"$f" && echo "$d $(stat -c %i "$f")"; rm -f "$f"; done;'
    ' k=${TMPDIR#/.shellrt-tmp/}; k=${k%%/*}; echo "lock $(stat -c %i /.shellrt-priv/slot.$k)"'
)

_SPEND = (
    'i=0; while [ $i -lt 300 ]; do for d in /tmp /dev/shm "$TMPDIR"; do : >"$d/f$i"; rm "$d/f$i"; done;'
    " i=$((i+1)); done; echo spent"
)


def _shape(probe: str) -> list[str]:
    """The probe's lines with the TMPDIR's random name dropped."""
    return [re.sub(r"^(/\.shellrt-tmp/\d+)/\S+", r"\1", line) for line in probe.splitlines()]


async def test_the_next_task_sees_fresh_inode_counters(tmp_path: Path) -> None:
    require_docker()
    first, second = reset_workspaces(tmp_path)
    async with DockerBackend(config(), policy(first)) as backend:
        await backend.protect_executor()
        before = _shape(await run_argv(backend, "sh", "-c", _PROBE))
        assert len(before) == 4, before
        assert (await run_argv(backend, "sh", "-c", _SPEND)).strip() == "spent"
        for _ in range(5):
            await run_argv(backend, "true")
        with anyio.fail_after(60):
            await backend.reset()
        await backend.reuse_for(policy(second))
        after = _shape(await run_argv(backend, "sh", "-c", _PROBE))
    assert after == before, f"the last task's counts showed through the reset: {before} then {after}"
