"""The TaskOutput tool: new output of a background task since the last read, plus its status."""

from __future__ import annotations

import re

import anyio
from pydantic import BaseModel, ConfigDict, Field

from shellrt.protocol import (
    PermissionResult,
    Tool,
    ToolContext,
    ToolExecutionError,
    ToolOutput,
    ValidationResult,
)
from shellrt.supervisor import Supervisor, TaskNotFoundError, TaskOutputChunk, TaskStatus

__all__ = ["TaskOutput", "TaskOutputInput", "format_task_output"]

MAX_WAIT_MS = 600_000


class TaskOutputInput(BaseModel):
    """Input of TaskOutput."""

    model_config = ConfigDict(extra="forbid")

    task_id: str = Field(min_length=1, description="Id of the background task (from Bash run_in_background).")
    filter: str | None = Field(
        default=None,
        description="Optional regular expression; only new output lines matching it are returned.",
    )
    wait_ms: int = Field(
        default=0,
        ge=0,
        le=MAX_WAIT_MS,
        description="Wait up to this many milliseconds for the task to finish before reading (0: read now).",
    )


class TaskOutput(Tool[TaskOutputInput, TaskOutputChunk]):
    """Read a background task's new output (only what was not returned before)."""

    name = "TaskOutput"
    aliases = ("BashOutput",)
    input_model = TaskOutputInput
    interrupt_behavior = "cancel"
    search_hint = "background task output logs tail"

    def prompt(self) -> str:
        return (
            "Read new output of a background task started with Bash run_in_background. Returns only the "
            "output written since the previous TaskOutput call for that task, and the task's status "
            "(running, completed, failed, stopped, killed) with its exit code. `filter` keeps only lines "
            "matching a regular expression (the other lines are consumed too). `wait_ms` waits for the "
            "task to finish first, up to that long."
        )

    def is_read_only(self, tool_input: TaskOutputInput) -> bool:
        return True

    def is_concurrency_safe(self, tool_input: TaskOutputInput) -> bool:
        return True

    async def validate(self, tool_input: TaskOutputInput, ctx: ToolContext) -> ValidationResult:
        if tool_input.filter:
            try:
                re.compile(tool_input.filter)
            except re.error as exc:
                return ValidationResult.failure(
                    f"filter is not a valid regular expression ({exc}); fix it or omit filter."
                )
        return ValidationResult.success()

    async def check_permissions(self, tool_input: TaskOutputInput, ctx: ToolContext) -> PermissionResult:
        return PermissionResult.allow("reads the output of a task this session started")

    async def call(self, tool_input: TaskOutputInput, ctx: ToolContext) -> ToolOutput[TaskOutputChunk]:
        tasks = ctx.service(Supervisor).tasks
        try:
            if tool_input.wait_ms:
                with anyio.move_on_after(tool_input.wait_ms / 1000):
                    await tasks.wait(tool_input.task_id)
            chunk = await tasks.read_new(tool_input.task_id, tool_input.filter)
        except TaskNotFoundError as exc:
            raise ToolExecutionError(str(exc)) from exc
        return ToolOutput(chunk)

    def to_model_content(self, output: TaskOutputChunk) -> str:
        return format_task_output(output)


def format_task_output(chunk: TaskOutputChunk) -> str:
    """Status line, then the new output (or a note that there is none)."""
    task = chunk.task
    status = f"Task {task.id}: {task.status.value}"
    if task.exit_code is not None and task.status is not TaskStatus.RUNNING:
        status += f" (exit code {task.exit_code})"
    lines = [status]
    if task.note:
        lines.append(task.note)
    if chunk.matched_lines is not None:
        lines.append(f"{chunk.matched_lines} of {chunk.scanned_lines} new lines matched the filter.")
    text = chunk.text.rstrip("\n")
    lines.append(text if text else "(no new output)")
    if chunk.more_available:
        lines.append("More output is available: call TaskOutput again.")
    lines.append(f"Full output: {task.output_path}")
    return "\n".join(lines)
