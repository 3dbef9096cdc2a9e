"""The TaskOutput tool: new output of a background task since the last read, plus its status."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

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
from shellrt.protocol.notes import neutralize_output, neutralized_note, note
from shellrt.supervisor import Supervisor, TaskNotFoundError, TaskOutputChunk, TaskStatus
from shellrt.supervisor.text import settled_lines
from shellrt.tools._child_slots import ChildSlots
from shellrt.tools._hostchild import calm_argv
from shellrt.tools._search import drain_after_send

__all__ = ["TaskOutput", "TaskOutputInput", "format_task_output"]

MAX_WAIT_MS = 600_000
#: Longest filter: it is compiled in the event loop to check it (`TaskOutput.validate`), and
#: compiling is not cheap: an alternation of 3 MB took 9 s there, and a wire line may carry 32 MB
#: (round 28). A line filter needs a few dozen characters.
MAX_FILTER_CHARS = 4_096
#: How long a filter may run over one read (Python's ``re`` backtracks: ``^(a+)+$`` over a line of
#: 40 ``a`` runs for days). It runs in a child process, killed at this deadline.
FILTER_TIMEOUT_S = 10.0
#: The filter's child: lines and pattern as JSON on stdin, the indices of the kept lines on stdout.
_FILTER_CHILD = (
    "import json, re, sys\n"
    "req = json.loads(sys.stdin.buffer.read())\n"
    "rx = re.compile(req['pattern'])\n"
    "json.dump([i for i, line in enumerate(req['lines']) if rx.search(line)], sys.stdout)\n"
)


class TaskOutputInput(BaseModel):
    """Input of TaskOutput."""

    model_config = ConfigDict(extra="forbid")

    task_id: str = Field(min_length=1, description="Id of the background task (from Bash run_in_background).")
    filter: str | None = Field(
        default=None,
        max_length=MAX_FILTER_CHARS,
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

    results_seen_by_commands = True  # what commands see anyway (`Tool.results_seen_by_commands`)

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
            "task to finish first, up to that long. Lines starting with `[shellrt]` are shellrt's notes "
            "(status, where the full output is); a line of the task's output that starts like one is "
            "shown prefixed with `(output)`."
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
            if not tool_input.filter:
                return ToolOutput(await tasks.read_new(tool_input.task_id))
            async with _filter_slot(tool_input.filter):  # before the read: a refusal consumes nothing
                chunk = await tasks.read_new(tool_input.task_id)
                return ToolOutput(await _filtered(chunk, tool_input.filter))
        except TaskNotFoundError as exc:
            raise ToolExecutionError(str(exc)) from exc

    def to_model_content(self, output: TaskOutputChunk) -> str:
        return format_task_output(output)


#: Filter children running at once per event loop (a ``serve`` process has one): each may take a
#: core for `FILTER_TIMEOUT_S`, and TaskOutput is concurrency safe (red team, round 35: four calls
#: with ``^(a+)+$`` ran four children at once). Read's parse children have the same kind of bound (`_parse_slots`).
MAX_FILTERING = 2
_FILTERS = ChildSlots("shellrt_task_output_filters", MAX_FILTERING)


@asynccontextmanager
async def _filter_slot(pattern: str) -> AsyncIterator[None]:
    """Hold one of the loop's `MAX_FILTERING` filter slots; wait at most half `FILTER_TIMEOUT_S`."""

    def refusal() -> str:
        return (
            f"{MAX_FILTERING} other TaskOutput filters kept running for {FILTER_TIMEOUT_S / 2:g} s, so the "
            f"filter {pattern!r} was not run and nothing was read. Call TaskOutput again when they are done, "
            "or without filter (and search the lines yourself)."
        )

    async with _FILTERS.held_async(FILTER_TIMEOUT_S / 2, refusal):
        yield


async def _filtered(chunk: TaskOutputChunk, pattern: str) -> TaskOutputChunk:
    """``chunk`` with only its lines matching ``pattern``: matched in a child process, never in the
    event loop (the command writes the lines, the agent the pattern), killed at `FILTER_TIMEOUT_S`."""
    lines = chunk.text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    kept: list[int] = []
    if lines:
        request = json.dumps({"pattern": pattern, "lines": lines}).encode()
        process = await anyio.open_process(
            calm_argv([sys.executable, "-I", "-S", "-c", _FILTER_CHILD]),
            cwd="/",  # never shellrt's cwd (often the workspace): `LD_PRELOAD=./x.so` resolves there (round 49)
            env={},  # and none of the operator's start-up variables: the filter needs none
        )
        try:
            out = b""
            with anyio.move_on_after(FILTER_TIMEOUT_S):
                out, _ = await drain_after_send(process, request)
                await process.wait()
            if process.returncode != 0:
                raise ToolExecutionError(
                    f"The filter {pattern!r} took too long over this output (more than {FILTER_TIMEOUT_S:g} s: "
                    "Python's regex engine backtracks on nested or adjacent repeats such as (a+)+); simplify it. "
                    "The lines it was reading are consumed: call TaskOutput again for newer output."
                )
            kept = json.loads(out)
        finally:
            if process.returncode is None:
                process.kill()
                with anyio.CancelScope(shield=True):
                    await process.wait()
    # each kept line settled on its own: a sequence one line opens and a skipped one closes would
    # otherwise stay open over every later line and shellrt's own notes (round 35 supervisor)
    text = settled_lines("".join(lines[i] + "\n" for i in kept))
    return chunk.model_copy(update={"text": text, "matched_lines": len(kept), "scanned_lines": len(lines)})


def format_task_output(chunk: TaskOutputChunk) -> str:
    """Status line, then the new output (or a note that there is none)."""
    task = chunk.task
    status = f"Task {task.id}: {task.status.value}"
    if task.exit_code is not None and task.status is not TaskStatus.RUNNING:
        status += f" (exit code {task.exit_code})"
    lines = [note(status)]
    if task.note:
        lines.append(note(task.note))
    if chunk.matched_lines is not None:
        lines.append(note(f"{chunk.matched_lines} of {chunk.scanned_lines} new lines matched the filter."))
    if chunk.lost_bytes:
        lines.append(
            note(
                f"{chunk.lost_bytes:,} bytes of output before what follows were not saved (the note above "
                "says why) and are lost; what follows is the end of the output, kept in memory."
            )
        )
    # The task's lines are the command's: none may pass for a note (a read may start mid-line).
    text, forged = neutralize_output(chunk.text.rstrip("\n"))
    lines.append(text if text else "(no new output)")
    if chunk.more_available:
        lines.append(note("More output is available: call TaskOutput again."))
    lines.append(note(f"Full output: {task.output_path}"))
    if forged:
        lines.append(neutralized_note(forged))
    return "\n".join(lines)
