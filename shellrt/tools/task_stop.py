"""The TaskStop tool: kill a background task's whole process tree."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from shellrt.protocol import PermissionResult, Tool, ToolContext, ToolExecutionError, ToolOutput
from shellrt.supervisor import BackgroundTask, Supervisor, TaskNotFoundError, TaskStatus

__all__ = ["TaskStop", "TaskStopInput"]


class TaskStopInput(BaseModel):
    """Input of TaskStop."""

    model_config = ConfigDict(extra="forbid")

    task_id: str = Field(min_length=1, description="Id of the background task to stop.")


class TaskStop(Tool[TaskStopInput, BackgroundTask]):
    """Stop a background task and every process it started."""

    name = "TaskStop"
    aliases = ("KillShell",)
    input_model = TaskStopInput
    search_hint = "kill stop background task process"

    def prompt(self) -> str:
        return (
            "Stop a background task started with Bash run_in_background: the task and every process it "
            "started are killed. Stopping a task that already ended is harmless and reports how it ended."
        )

    async def check_permissions(self, tool_input: TaskStopInput, ctx: ToolContext) -> PermissionResult:
        return PermissionResult.allow("stops a task this session started")

    async def call(self, tool_input: TaskStopInput, ctx: ToolContext) -> ToolOutput[BackgroundTask]:
        tasks = ctx.service(Supervisor).tasks
        try:
            before = tasks.get(tool_input.task_id)
            task = await tasks.stop(tool_input.task_id)
        except TaskNotFoundError as exc:
            raise ToolExecutionError(str(exc)) from exc
        if task.status is TaskStatus.RUNNING:  # a task of another live process that has this session open
            raise ToolExecutionError(
                f"Task {task.id} cannot be stopped from this session: it is {task.note}."
            )
        if before.status is not TaskStatus.RUNNING:
            how = f"; {before.note}" if before.note else ""
            task = task.model_copy(update={"note": f"{_ALREADY} {before.status.value} before TaskStop{how}"})
        return ToolOutput(task)

    def to_model_content(self, output: BackgroundTask) -> str:
        if output.note and output.note.startswith(_ALREADY):
            code = f" (exit code {output.exit_code})" if output.exit_code is not None else ""
            how = output.note.partition("before TaskStop")[2].lstrip("; ")
            why = f": {how}" if how else ""
            return (
                f"Task {output.id} had already ended, {output.status.value}{code}{why}. Nothing to stop. "
                f"Its output so far: {output.output_path}"
            )
        return f"Task {output.id} stopped; its processes were killed. Output file: {output.output_path}"


_ALREADY = "already"
