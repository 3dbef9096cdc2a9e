"""TodoWrite: snapshot input, one in_progress at most, state via context modifier, rebuild from history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import ValidationError

from shellrt.protocol import ToolContext
from shellrt.tools.todo_write import TodoWriteTool, rebuild_todos


def make_ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(session_id="s", session_dir=tmp_path, workspace=tmp_path, cwd=str(tmp_path))


def todo(content: str, status: str) -> dict[str, str]:
    return {"content": content, "status": status, "activeForm": content + "ing"}


def write(ctx: ToolContext, todos: list[dict[str, str]]) -> tuple[str, str]:
    tool = TodoWriteTool()

    async def go() -> tuple[str, str]:
        inp = tool.parse_input({"todos": todos})
        v = await tool.validate(inp, ctx)
        if not v.ok:
            raise ValueError(v.message)
        out = await tool.call(inp, ctx)
        assert out.context_modifier is not None
        out.context_modifier(ctx)
        text = tool.to_model_content(out.data)
        assert isinstance(text, str)
        return text, tool.render_result(out.data)

    return anyio.run(go)


def test_snapshot_state_and_faces(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    text, ui = write(ctx, [todo("Test", "completed"), todo("Build", "in_progress"), todo("Ship", "pending")])
    assert "1/3 completed" in text and "Ship" not in text
    assert ui == "[x] Test\n[~] Building\n[ ] Ship"
    assert [t.content for t in ctx.tool_state["TodoWrite"]] == ["Test", "Build", "Ship"]
    write(ctx, [todo("Ship", "in_progress")])
    assert [t.content for t in ctx.tool_state["TodoWrite"]] == ["Ship"]
    _, ui = write(ctx, [])
    assert ui == "(todo list cleared)" and ctx.tool_state["TodoWrite"] == []


def test_at_most_one_in_progress(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at most one"):
        write(make_ctx(tmp_path), [todo("A", "in_progress"), todo("B", "in_progress")])


def test_schema_rejects_bad_items() -> None:
    tool = TodoWriteTool()
    with pytest.raises(ValidationError):
        tool.parse_input({"todos": [{"content": "x", "status": "doing", "activeForm": "x"}]})
    with pytest.raises(ValidationError):
        tool.parse_input({"todos": [{"content": "", "status": "pending", "activeForm": "x"}]})
    assert not tool.touches_environment
    assert "activeForm" in tool.input_schema()["$defs"]["TodoItem"]["properties"]


def test_rebuild_from_last_successful_write() -> None:
    history: list[Any] = [
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "a",
                    "name": "TodoWrite",
                    "input": {"todos": [todo("Old", "pending")]},
                }
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "ok"}]},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "b",
                    "name": "TodoWrite",
                    "input": {"todos": [todo("New", "in_progress"), todo("Next", "pending")]},
                }
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b", "content": "ok"}]},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "c",
                    "name": "TodoWrite",
                    "input": {"todos": [todo("Bad", "in_progress"), todo("Bad2", "in_progress")]},
                }
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "c", "content": "error", "is_error": True}],
        },
    ]
    assert [(t.content, t.status) for t in rebuild_todos(history)] == [
        ("New", "in_progress"),
        ("Next", "pending"),
    ]
    assert rebuild_todos([]) == []
