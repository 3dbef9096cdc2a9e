"""How many background tasks one session runs at once.

Each running background task holds about three of the server's file descriptors (its spool and
pipes) and at least one process. Nothing capped them: one message of 400 ``run_in_background``
calls used every descriptor of a server under the common limit of 1,024 open files, and from then
on every call of the session failed with ``Too many open files`` (round 12). One more than the cap
is refused before it starts, with what to do; tasks that ended free their slot.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from shellrt.protocol import ToolContext
from shellrt.supervisor import Supervisor, TaskStatus
from shellrt.supervisor.tasks import DEFAULT_MAX_BACKGROUND_TASKS, TASK_CAP_ENV, max_background_tasks

__all__ = ["DEFAULT_MAX_BACKGROUND_TASKS", "background_refusal", "max_background_tasks"]


def background_refusal(tool_input: BaseModel, ctx: ToolContext) -> str | None:
    """Why this call may not start one more background task now, or None (it may, or it starts none)."""
    if getattr(tool_input, "run_in_background", False) is not True or not ctx.has_service(Supervisor):
        return None
    try:
        cap = max_background_tasks()
    except ValueError as exc:
        return f"Not started: {exc}. The operator must fix this setting before background tasks can start."
    tasks: Any = ctx.service(Supervisor).tasks
    running = sum(1 for t in tasks.list() if t.status is TaskStatus.RUNNING)
    if running < cap:
        return None
    # No task ids: a served runtime holds every MCP session's tasks, and the refusal listed all of
    # them, another client's too (red team round 35); the caller's own calls returned its ids.
    return (
        f"Not started: {running} background tasks are already running in this session, the most at once "
        f"({TASK_CAP_ENV}={cap}). Stop one you no longer need with TaskStop (the task ids your Bash calls "
        "returned), or wait for one to end (TaskOutput with wait_ms), then call again; or run this command in "
        "the foreground."
    )
