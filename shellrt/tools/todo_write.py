"""TodoWrite: the model's task list for the session, sent as a full snapshot each time.

A snapshot (not a diff) keeps the tool idempotent and the state trivially
rebuildable: the last successful TodoWrite in the transcript *is* the list
(`rebuild_todos`). The UI shows the list; the model only needs a short
confirmation, since it just wrote the list itself. A list whose items are all
completed is cleared (as Claude Code does): finished work costs no context.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from shellrt.protocol import (
    ContentBlock,
    PermissionResult,
    Tool,
    ToolContext,
    ToolOutput,
    ValidationResult,
)
from shellrt.tools._history import tool_calls
from shellrt.tools._people import for_people

__all__ = [
    "MAX_TODOS",
    "MAX_TODO_CHARS",
    "TodoItem",
    "TodoWriteInput",
    "TodoWriteOutput",
    "TodoWriteTool",
    "rebuild_todos",
]

TOOL_NAME = "TodoWrite"
STATE_KEY = TOOL_NAME

#: Items a list may hold, and characters an item's text: a person's task list has a few dozen items
#: of a line each. Unbounded, one 64 MiB request of 1.2 million items cost 7.8 s and a 1.08 GB peak
#: in the shellrt process, kept in the session's state (red team round 38, novel3).
MAX_TODOS = 100
MAX_TODO_CHARS = 1_000

TodoStatus = Literal["pending", "in_progress", "completed"]


class TodoItem(BaseModel):
    """One task."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    content: str = Field(
        min_length=1, max_length=MAX_TODO_CHARS, description='The task, imperative: "Run the tests".'
    )
    status: TodoStatus = Field(description="pending, in_progress (at most one at a time) or completed.")
    activeForm: str = Field(
        min_length=1,
        max_length=MAX_TODO_CHARS,
        description='The task while it is being done: "Running the tests".',
    )


class TodoWriteInput(BaseModel):
    """Input of TodoWrite: the whole list, every time."""

    model_config = ConfigDict(extra="forbid")

    todos: list[TodoItem] = Field(
        max_length=MAX_TODOS,
        description=f"The complete, updated todo list (it replaces the previous one); at most {MAX_TODOS} "
        "items: group small steps into one.",
    )

    @field_validator("todos", mode="before")
    @classmethod
    def _few(cls, value: Any) -> Any:
        """Count before any item is built (pydantic's ``max_length`` counts after building them all)."""
        if isinstance(value, list | tuple) and len(value) > MAX_TODOS:
            raise ValueError(
                f"{len(value):,} todos; at most {MAX_TODOS}: group small steps into one item and send the list again"
            )
        return value


@dataclass(frozen=True)
class TodoWriteOutput:
    """The list before and after this call."""

    old_todos: tuple[TodoItem, ...]
    new_todos: tuple[TodoItem, ...]


_MARK = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}


class TodoWriteTool(Tool[TodoWriteInput, TodoWriteOutput]):
    """Create and update the session's task list."""

    name = TOOL_NAME
    input_model = TodoWriteInput
    touches_environment: ClassVar[bool] = False
    search_hint = "todo task list plan progress track steps checklist"
    idempotent: ClassVar[bool] = True

    def prompt(self) -> str:
        return (
            "Keep a structured task list for the current work; send the complete list every time.\n"
            "- Use it for multi-step tasks (3+ steps) or when the user gives several tasks; skip it for trivial ones.\n"
            "- Each item: `content` (imperative), `activeForm` (present continuous), `status`.\n"
            "- Exactly one item should be `in_progress` while you work (never more than one); mark items "
            "`completed` as soon as they are done, not in batches; add tasks you discover along the way."
        )

    def is_concurrency_safe(self, tool_input: TodoWriteInput) -> bool:
        return False

    async def validate(self, tool_input: TodoWriteInput, ctx: ToolContext) -> ValidationResult:
        active = [t.content for t in tool_input.todos if t.status == "in_progress"]
        if len(active) > 1:
            return ValidationResult.failure(
                f"{len(active)} tasks are in_progress ({'; '.join(active)}); at most one may be. Mark the others "
                "pending or completed and send the list again."
            )
        return ValidationResult.success()

    async def check_permissions(self, tool_input: TodoWriteInput, ctx: ToolContext) -> PermissionResult:
        return PermissionResult.allow("updating the session's own task list")

    async def call(self, tool_input: TodoWriteInput, ctx: ToolContext) -> ToolOutput[TodoWriteOutput]:
        old = tuple(ctx.tool_state.get(STATE_KEY, ()))
        new = _kept(tool_input.todos)

        def store(context: ToolContext) -> None:
            context.tool_state[STATE_KEY] = list(new)

        return ToolOutput(TodoWriteOutput(old, new), context_modifier=store)

    def to_model_content(self, output: TodoWriteOutput) -> str | list[ContentBlock]:
        if not output.new_todos:
            return "Todos have been updated: the list is empty (a list whose tasks are all completed is cleared)."
        done = sum(1 for t in output.new_todos if t.status == "completed")
        return (
            f"Todos have been updated ({done}/{len(output.new_todos)} completed). Keep using the todo list to "
            "track your progress, and proceed with the current task."
        )

    def render_result(self, output: TodoWriteOutput) -> str:
        if not output.new_todos:
            return "(todo list cleared)"
        return "\n".join(
            # One item, one line, nothing a terminal runs (round 38, novel3: a newline drew a forged item).
            f"{_MARK[t.status]} {for_people(t.activeForm if t.status == 'in_progress' else t.content)}"
            for t in output.new_todos
        )

    def audit_text(self, output: TodoWriteOutput) -> str:
        return self.render_result(output)


def rebuild_todos(messages: Iterable[Any]) -> list[TodoItem]:
    """The todo list as of the last successful, valid TodoWrite in ``messages`` (empty if none)."""
    latest: list[TodoItem] = []
    for call in tool_calls(messages):
        if call.name != TOOL_NAME or call.is_error:
            continue
        try:
            parsed = TodoWriteInput.model_validate(call.input)
        except ValidationError:
            continue
        if sum(1 for t in parsed.todos if t.status == "in_progress") > 1:
            continue
        latest = list(_kept(parsed.todos))
    return latest


def _kept(todos: Iterable[TodoItem]) -> tuple[TodoItem, ...]:
    """The list to keep: empty when every item is completed."""
    items = tuple(todos)
    return () if all(t.status == "completed" for t in items) else items
