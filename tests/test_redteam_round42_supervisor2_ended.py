"""Red team, round 42 (supervisor2): ended background tasks held a descriptor each.

A session keeps every task it ran (a model reads an ended task's output later); the running ones
are capped (`SHELLRT_MAX_BACKGROUND_TASKS`), the ended ones are not. Each ended task kept its
root's pidfd open (the process tree's pin on the group id, closed only at a check that never
came once the group was killed before the reap), so a session that ran a few thousand short
tasks ran out of descriptors: then every start is refused (the peers' registry cannot be read).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests._local_session import local_supervisor

pytestmark = pytest.mark.anyio

_TASKS = 200


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_ended_tasks_hold_no_descriptor(tmp_path: Path) -> None:
    """Failed before: 200 ended tasks held 200 pidfds."""
    ws = tmp_path / "ws"
    ws.mkdir()
    async with local_supervisor(ws, tmp_path / "s") as sup:
        await sup.tasks.wait((await sup.start_background("true")).id)
        before = _fds()
        for _ in range(_TASKS):
            await sup.tasks.wait((await sup.start_background("echo x")).id)
        grown = _fds() - before
        assert len(sup.tasks.list()) == _TASKS + 1
    assert grown < 10, f"{_TASKS} ended background tasks held {grown} descriptors"
