"""Red team round 38 (novel3): a TodoWrite list without bounds cost the host a gigabyte per call.

TodoWrite runs unasked in every mode (the session's own state, no environment touched), and its
input was the one tool input holding a list of objects: pydantic builds a model per item. One
64 MiB line of the MCP server (its cap) held 1.2 million ``{"content": "a", ...}`` items: 7.8 s
of validation and a 1.08 GB peak in the shellrt process, the list then kept in the session's state
(and rendered, and validated again from the transcript on every resume). A person's task list has
a few dozen items of a line each; now the schema says so (`MAX_TODOS`, `MAX_TODO_CHARS`) and a
longer one is refused before any item is built, with what to do instead.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from pydantic import ValidationError

from shellrt.tools.todo_write import MAX_TODO_CHARS, MAX_TODOS, TodoWriteTool, rebuild_todos


def _item(content: str = "Run the tests", status: str = "pending") -> dict[str, Any]:
    return {"content": content, "status": status, "activeForm": "Running the tests"}


def test_a_list_of_a_million_items_is_refused_before_it_is_built() -> None:
    tool = TodoWriteTool()
    started = time.monotonic()
    with pytest.raises(ValidationError) as caught:
        tool.parse_input({"todos": [_item()] * 300_000})
    assert "at most" in str(caught.value)
    assert time.monotonic() - started < 5.0


def test_an_item_of_a_megabyte_is_refused() -> None:
    tool = TodoWriteTool()
    with pytest.raises(ValidationError):
        tool.parse_input({"todos": [_item("x" * 1_000_000)]})
    with pytest.raises(ValidationError):
        tool.parse_input({"todos": [{**_item(), "activeForm": "y" * (MAX_TODO_CHARS + 1)}]})


def test_a_real_list_still_passes_and_a_resume_skips_an_oversized_one() -> None:
    tool = TodoWriteTool()
    ok = [_item(f"Step {i}") for i in range(MAX_TODOS)]
    assert len(tool.parse_input({"todos": ok}).todos) == MAX_TODOS
    # A transcript an older shellrt wrote may hold an oversized list: it is not brought back.
    messages = [_use("t1", ok[:3]), _use("t2", [_item()] * (MAX_TODOS + 1))]
    assert [t.content for t in rebuild_todos(messages)] == ["Step 0", "Step 1", "Step 2"]


def _use(use_id: str, todos: list[dict[str, Any]]) -> dict[str, Any]:
    block = {"type": "tool_use", "id": use_id, "name": "TodoWrite", "input": {"todos": todos}}
    return {"role": "assistant", "content": [block]}
