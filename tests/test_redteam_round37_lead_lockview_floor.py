"""Round 37 (lead): `BwrapConfig.lock_view` off is the operator's choice, never a task file's.

With the view off a task's commands share the host's inodes, so their advisory locks hold up host
programs (red team round 37, locks). A batch task file is untrusted: setting it false is refused
like every other key that widens the boundary; true (the default) widens nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from shellrt.batch import Task, TaskFloor
from shellrt.batch.floor import TaskRefused


def _task(**bwrap: Any) -> Task:
    return Task.model_validate({"id": "t", "sandbox": {"type": "bwrap", **bwrap}, "commands": ["true"]})


def test_a_task_turning_the_lock_view_off_is_refused(tmp_path: Path) -> None:
    """Failed before: accepted without ``--allow-task-backend-keys``."""
    with pytest.raises(TaskRefused, match=r"lock_view: false.*--allow-task-backend-keys"):
        TaskFloor(sandbox="bwrap").apply(_task(lock_view=False))


def test_the_default_and_the_opt_in_pass() -> None:
    TaskFloor(sandbox="bwrap").apply(_task(lock_view=True))
    TaskFloor(sandbox="bwrap", allow_backend_keys=True).apply(_task(lock_view=False))
