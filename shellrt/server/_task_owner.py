"""Which MCP call registered a background task: the task belongs to that call's session.

The server used to credit a call with every task that appeared while it ran (the task list
before and after). Calls of different HTTP sessions overlap (read-only calls run alongside,
approvals wait outside the slots), so a slow call of session A was credited with the task
session B started meanwhile: A could read and stop B's task, and A's session ending killed it
(red team round 35). Now the task manager's ``add`` notes each new id in the collector of the
call whose context runs it (a context variable: anyio copies it into the tasks a call spawns),
so a task is credited to the one call that started it and to no other.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["collecting_started_tasks", "watch_task_manager"]

#: The sets that receive the ids of the tasks the current call registers (none outside an MCP call).
_started: contextvars.ContextVar[tuple[set[str], ...]] = contextvars.ContextVar("shellrt_mcp_started_tasks", default=())
#: Marks a task manager whose ``add`` already notes ids (installed once per manager).
_WATCHED = "_shellrt_mcp_task_owner"


def watch_task_manager(manager: Any) -> None:
    """Make ``manager.add`` note each id it returns in the current call's collector (idempotent)."""
    if manager is None or getattr(manager, _WATCHED, False):
        return
    add: Callable[..., str] = manager.add

    def add_noted(*args: Any, **kwargs: Any) -> str:
        task_id = add(*args, **kwargs)
        for started in _started.get():
            started.add(task_id)
        return task_id

    manager.add = add_noted
    setattr(manager, _WATCHED, True)


@contextlib.contextmanager
def collecting_started_tasks(*targets: set[str]) -> Iterator[set[str]]:
    """A new set, given (with each of ``targets``) the ids of the tasks registered inside this block
    and its tasks as they are registered: a session's own set owns a task before its call returns."""
    started: set[str] = set()
    token = _started.set((started, *targets))
    try:
        yield started
    finally:
        _started.reset(token)
