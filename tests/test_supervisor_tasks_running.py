"""`TaskManager.any_running` (asked twice per command by the protected-files check) agrees with
the task snapshots, and records a finished task's end as a snapshot would."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox import SandboxPolicy
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor, TaskStatus

pytestmark = pytest.mark.anyio


def _running_by_snapshot(sup: Supervisor) -> bool:
    return any(t.status is TaskStatus.RUNNING for t in sup.tasks.list())


async def test_any_running_follows_tasks_through_their_lives(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    async with (
        LocalBackend(None, SandboxPolicy(workspace=ws)) as backend,
        Supervisor(backend, session_dir=tmp_path / "s") as sup,
    ):
        assert not sup.tasks.any_running()
        quick = await sup.start_background("true")
        await sup.tasks.wait(quick.id)
        record = sup.tasks._tasks[quick.id]
        record.ended_at = None  # as if nobody had looked since it ended
        assert not sup.tasks.any_running() and not _running_by_snapshot(sup)
        assert record.ended_at is not None  # recorded when first noticed, as a snapshot does
        slow = await sup.start_background("sleep 30")
        assert sup.tasks.any_running() and _running_by_snapshot(sup)
        await sup.tasks.stop(slow.id)
        assert not sup.tasks.any_running() and not _running_by_snapshot(sup)
