"""Red team, round 28 (supbatch): ``--resume`` never re-ran a task that ended in ``error``.

``error`` is the status of a task that could not run (its workspace missing, a sandbox that did not
start, another task's use of the run's output budget: round 23): never a verdict about the task.
Yet `read_finished_ids` counted its line as finished, so a resumed run skipped it for good and the
results file kept the error; round 27 left it ("re-run them without --resume"). A resumed run now
runs such a task again and its new line replaces the old one: the file still holds every id
exactly once, and lines of other statuses are kept byte for byte. Real bwrap tasks; FAIL, not skip,
under CI=true.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from shellrt.batch import Task, read_finished_ids, run_sync
from tests.conftest import require


def test_resume_runs_again_a_task_that_ended_in_error(tmp_path: Path) -> None:
    """Failed before (1 of 1): the resumed run skipped ``late`` and its line stayed ``error``."""
    require(shutil.which("bwrap") is not None, "bubblewrap is needed for batch tasks")
    source = tmp_path / "late-workspace"  # not there yet: the task cannot run
    out = tmp_path / "results.jsonl"
    tasks = [
        Task.model_validate({"id": "good", "commands": ["echo good"]}),
        Task.model_validate({"id": "late", "workspace": str(source), "commands": ["cat ready"]}),
    ]
    options = {"out": out, "concurrency": 2, "output_budget": None, "default_limits": None}
    first = {r.id: r.status for r in run_sync(tasks, **options)}
    assert first == {"good": "ok", "late": "error"}, first
    good_line = next(line for line in out.read_text().splitlines() if '"good"' in line)
    assert read_finished_ids(out) == {"good"}  # an error is not finished

    source.mkdir()
    (source / "ready").write_text("ready\n")
    second = {r.id: r.status for r in run_sync(tasks, resume=True, **options)}
    assert second == {"late": "ok"}, second
    lines = out.read_text().splitlines()
    by_id = {json.loads(line)["id"]: json.loads(line) for line in lines}
    assert len(lines) == 2 and set(by_id) == {"good", "late"}, lines  # every id exactly once
    assert by_id["late"]["status"] == "ok" and by_id["late"]["commands"][0]["preview"] == "ready\n"
    assert good_line in lines  # kept as it was
