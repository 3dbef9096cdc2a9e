"""Context thrift: an unchanged re-Read is a short note, a finished todo list is cleared, PDFs have an extra."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.protocol import ToolContext
from shellrt.runtime import Runtime
from shellrt.tools.read import ReadTool
from shellrt.tools.todo_write import TodoWriteTool, rebuild_todos

ROOT = Path(__file__).resolve().parent.parent
UNCHANGED = "File unchanged since last read"


def make_ctx(root: Path) -> ToolContext:
    return ToolContext(session_id="s", session_dir=root, workspace=root, cwd=str(root), allowed_roots=(root,))


def read(ctx: ToolContext, **kw: Any) -> str:
    tool = ReadTool()

    async def go() -> str:
        tool_input = tool.parse_input(kw)
        await tool.validate(tool_input, ctx)
        out = await tool.call(tool_input, ctx)
        text = tool.to_model_content(out.data)
        assert isinstance(text, str)
        return text

    return anyio.run(go)


def test_an_unchanged_range_is_a_short_note(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_text("".join(f"line {i}\n" for i in range(1, 3001)))
    ctx = make_ctx(tmp_path)
    first = read(ctx, file_path="big.txt")
    assert "line 2000" in first
    again = read(ctx, file_path="big.txt")
    assert again.startswith(UNCHANGED) and len(again) < 300 and "big.txt" in again
    page = read(ctx, file_path="big.txt", offset=2001, limit=10)  # another range: its content
    assert "line 2005" in page
    assert read(ctx, file_path="big.txt", offset=2001, limit=10).startswith(UNCHANGED)
    assert "line 5" in read(ctx, file_path="big.txt"), "only the most recent read of a file is remembered"
    # Changed on disk (another process, a formatter): the content comes back.
    big.write_text("new\n")
    assert "new" in read(ctx, file_path="big.txt")
    st = big.stat()
    os.utime(big, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert "new" in read(ctx, file_path="big.txt"), "a touched file is read again"


@pytest.mark.anyio
async def test_edit_and_restore_forget_the_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("alpha\n")

    def use(id_: str, name: str, **input_: Any) -> dict[str, Any]:
        return {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": id_, "name": name, "input": input_}],
        }

    async def text(rt: Runtime, message: dict[str, Any]) -> str:
        block = (await rt.run(message))["content"][0]
        assert not block["is_error"], block
        content = block["content"]
        return content if isinstance(content, str) else content[0]["text"]

    async with Runtime(ws, "local", session_dir=tmp_path / "s", allow=["Edit"]) as rt:
        assert "alpha" in await text(rt, use("r1", "Read", file_path="a.txt"))
        assert (await text(rt, use("r2", "Read", file_path="a.txt"))).startswith(UNCHANGED)
        await text(rt, use("e1", "Edit", file_path="a.txt", old_string="alpha", new_string="beta"))
        assert "beta" in await text(rt, use("r3", "Read", file_path="a.txt"))
        assert (await text(rt, use("r4", "Read", file_path="a.txt"))).startswith(UNCHANGED)
        rt.restore([{"role": "user", "content": "a compacted conversation"}])
        assert "beta" in await text(rt, use("r5", "Read", file_path="a.txt")), (
            "after a restore the content returns"
        )


def test_a_fully_completed_todo_list_is_cleared(tmp_path: Path) -> None:
    tool = TodoWriteTool()
    ctx = make_ctx(tmp_path)

    def write(todos: list[dict[str, str]]) -> str:
        async def go() -> str:
            tool_input = tool.parse_input({"todos": todos})
            out = await tool.call(tool_input, ctx)
            assert out.context_modifier is not None
            out.context_modifier(ctx)
            text = tool.to_model_content(out.data)
            assert isinstance(text, str)
            return text

        return anyio.run(go)

    item = {"content": "Run the tests", "activeForm": "Running the tests"}
    write([{**item, "status": "in_progress"}, {**item, "content": "Ship", "status": "pending"}])
    assert len(ctx.tool_state["TodoWrite"]) == 2
    text = write([{**item, "status": "completed"}, {**item, "content": "Ship", "status": "completed"}])
    assert ctx.tool_state["TodoWrite"] == [] and "cleared" in text
    history = [
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "TodoWrite",
                    "input": {"todos": [{**item, "status": "completed"}]},
                }
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
    ]
    assert rebuild_todos(history) == []


def test_pdf_support_is_an_extra_named_in_the_readme() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pdf = project["optional-dependencies"]["pdf"]
    assert any(req.startswith("pypdf>=") for req in pdf)
    assert "'.[pdf]'" in (ROOT / "README.md").read_text()
