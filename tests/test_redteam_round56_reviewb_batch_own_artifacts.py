"""Red team, round 56 (review b): a runner's own artifacts directory and runs that overlap.

Round 56 (batch3) made `LocalRunner` remove its own temp artifacts directory when a run leaves it
empty. Two runs of one runner share that directory (`settings`), and the first to end removed it
while the other's tasks still ran: their sandboxes hide it by a mount over it, and removing a
mount point's directory takes the mount away in every other namespace; the next task made the
directory again, unhidden to those sandboxes. Now only the last run to end removes it.
"""

from __future__ import annotations

import anyio
import pytest

from shellrt.batch.local import LocalRunner
from shellrt.batch.results import TaskResult


async def _drain(stream: anyio.abc.ObjectReceiveStream[TaskResult]) -> None:
    async for _ in stream:
        pass


@pytest.mark.anyio
async def test_an_overlapping_run_keeps_the_shared_directory() -> None:
    """Failed before (1 of 1): the directory was gone while the outer run was open."""
    runner = LocalRunner(concurrency=1, prestart=0)
    directory = runner.settings.artifacts_dir
    with anyio.fail_after(30):
        async with runner.open([]) as outer:
            async with runner.open([]) as inner:
                await _drain(inner)
            assert directory.is_dir(), "removed under a run still open"
            assert runner.settings.artifacts_dir == directory
            await _drain(outer)
    assert not directory.exists(), "the last run out removes an empty directory of its own"


@pytest.mark.anyio
async def test_runs_one_after_another_still_leave_nothing() -> None:
    runner = LocalRunner(concurrency=1, prestart=0)
    seen = []
    with anyio.fail_after(30):
        for _ in range(2):
            async with runner.open([]) as results:
                seen.append(runner.settings.artifacts_dir)
                assert seen[-1].is_dir()
                await _drain(results)
            assert not seen[-1].exists()
