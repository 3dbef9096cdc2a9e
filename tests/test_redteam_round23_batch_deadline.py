"""Round 23: a task file chose how long each of its tasks holds a slot (no task deadline).

Each command's ``timeout`` came from the task file with no ceiling (``1e9``; JSON ``Infinity``
passed ``gt=0`` too), and so did their number: under the default floor one task running
``sleep`` held its execution slot, and with ``-j`` of them the whole run, for ever -- no other
task ran and the results never came. The floor now gives every task a deadline for all its
commands together (``--task-deadline``, default six hours; ``TaskFloor.max_deadline_s``); a task
may ask less, not more. Past it the running command is killed and reported ``timed_out``, the
task is ``timeout``. Real bwrap, real CLI.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from shellrt.batch import Task, TaskFloor, TaskRefused
from tests._batch_helpers import run_tasks
from tests._bwrap_session import require_bwrap


def test_the_default_floor_gives_every_task_a_deadline() -> None:
    task = Task(id="slow", commands=["true"], timeout=1e9)
    assert TaskFloor().apply(task).deadline == 6 * 3600
    assert TaskFloor(max_deadline_s=60).apply(task.model_copy(update={"deadline": 30.0})).deadline == 30
    with pytest.raises(TaskRefused, match="--task-deadline"):
        TaskFloor(max_deadline_s=60).apply(task.model_copy(update={"deadline": 61.0}))
    assert TaskFloor.trusting().apply(task).deadline is None  # a task file the operator wrote
    with pytest.raises(ValueError):
        Task.model_validate_json('{"id": "x", "commands": ["true"], "deadline": Infinity}')


def test_a_task_that_never_ends_stops_at_its_deadline(tmp_path: Path) -> None:
    require_bwrap()
    forever = {"id": "forever", "timeout": 1e9, "commands": ["sleep 1000000", "echo never"]}
    t0 = time.monotonic()
    proc, results = run_tasks(tmp_path, [forever, {"id": "next", "commands": ["echo ran"]}], "--task-deadline", "2",
                              timeout=240)
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - t0 < 200  # not 1e9 s
    assert results["forever"]["status"] == "timeout", results["forever"]
    commands = results["forever"]["commands"]
    assert len(commands) == 1 and commands[0]["timed_out"] and "--task-deadline" in commands[0]["output_lost"]
    assert results["next"]["status"] == "ok"  # the slot was given back
