"""A run given no artifacts directory leaves no empty temp directory behind (each did, one per
run: hundreds under /tmp after a day of tests), and keeps the one that holds a task's outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.batch import Task
from shellrt.batch.local import LocalRunner

pytestmark = pytest.mark.anyio


async def _run(runner: LocalRunner, task: Task) -> None:
    async with runner.open([task]) as stream:
        async for result in stream:
            assert result.status == "ok", result


def _task(command: str, **fields: object) -> Task:
    return Task.model_validate({"id": "t1", "commands": [command], **fields})


async def test_an_empty_own_artifacts_dir_is_removed_and_made_again_for_the_next_run() -> None:
    runner = LocalRunner(concurrency=1)
    first = runner.settings.artifacts_dir
    assert first.is_dir()
    await _run(runner, _task("echo hi"))
    assert not first.exists(), "the run collected nothing, yet left its temp artifacts directory"
    await _run(runner, _task("echo again"))  # a second run on the same runner gets a fresh one
    assert runner.settings.artifacts_dir != first
    assert not runner.settings.artifacts_dir.exists()


async def test_an_own_artifacts_dir_holding_outputs_is_kept() -> None:
    runner = LocalRunner(concurrency=1)
    own = runner.settings.artifacts_dir
    await _run(runner, _task("seq 1 100000", collect={"output": "full"}))
    try:
        assert own.is_dir() and any(own.iterdir()), "the task's full output must stay for the caller"
    finally:
        import shutil

        shutil.rmtree(own, ignore_errors=True)


async def test_a_given_artifacts_dir_is_never_removed(tmp_path: Path) -> None:
    given = tmp_path / "arts"
    given.mkdir(mode=0o700)
    runner = LocalRunner(concurrency=1, artifacts_dir=given)
    await _run(runner, _task("echo hi"))
    assert given.is_dir()
