"""Red team round 35 (iface): a batch task built without validation is judged as a validated one.

``Task.model_construct(...)`` and ``task.model_copy(update=...)`` skip every validator: a harness
that built tasks that way from a dataset (for speed, or to vary one field of a checked task) ran
them as given. A task id ``x/../../escaped`` put the task's artifacts (its commands' full outputs)
and its scratch directory (its workspace copy) beside the run's directories instead of in them.
Each task is now validated again where a run takes it (`shellrt.batch.checked`, from
`TaskRun.prepare`): an invalid one is an ``error`` result saying what is wrong.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from shellrt.batch import Task, run

pytestmark = pytest.mark.anyio


async def test_a_task_that_skipped_validation_writes_nothing_outside_its_artifacts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before: 2 of 2 (both ran, ``ok``; their scratch and full outputs under ``tmp_path``)."""
    scratch = tmp_path / "scratch"
    (scratch / "shellrt-batch-x").mkdir(parents=True)  # any user may make this in a shared /tmp
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    block = {"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "echo r35-unvalidated"}}
    checked = Task.model_validate({"id": "fine", "commands": [block], "collect": {"output": "full"}})
    constructed = Task.model_construct(**{**dict(checked), "id": "x/../../escaped-construct"})
    copied = checked.model_copy(update={"id": "x/../../escaped-copy"})
    results = [r async for r in run([constructed, copied], artifacts_dir=tmp_path / "art")]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "art") == ["scratch"], list(tmp_path.iterdir())
    assert len(results) == 2, results
    for result in results:
        assert result.status == "error" and "id must be" in (result.error or ""), result
