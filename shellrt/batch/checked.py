"""A task as its validators would have made it, whatever built the object.

``Task.model_construct(...)`` and ``task.model_copy(update=...)`` skip every validator, and a
harness may build tasks that way from a dataset (for speed, or to vary one field of a checked
task). Such a task ran as given: an id ``../x`` named the task's artifacts and scratch
directories outside the run's own (red team round 35). A run therefore validates each task again
where it takes it (`TaskRun.prepare`, on every node); one that fails is an ``error`` result.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from shellrt.batch.tasks import Task

__all__ = ["checked_task"]


def checked_task(task: Any) -> Task:
    """``task`` validated afresh from its fields (its task-file directory kept); `ValueError`
    saying what is wrong and how to build a task when it is not a valid one."""
    try:
        fields = task.model_dump(round_trip=True, warnings=False) if isinstance(task, Task) else task
        fresh = Task.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": str(exc)}
        where = ".".join(str(part) for part in first.get("loc", ())) or "task"
        raise ValueError(
            f"invalid task ({where}: {first.get('msg')}); build tasks with Task.model_validate or "
            "Task(...), not model_construct or model_copy(update=...), which skip the checks"
        ) from None
    except Exception as exc:  # a field model_construct left out, a value no dump can read
        raise ValueError(
            f"invalid task ({type(exc).__name__}: {exc}); build tasks with Task.model_validate or Task(...)"
        ) from None
    if isinstance(task, Task):
        fresh._task_dir = task._task_dir
    return fresh
