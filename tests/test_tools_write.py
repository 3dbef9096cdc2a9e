"""Write: create, overwrite only after a full fresh Read, atomic, parents inside roots only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.protocol import ToolContext, ToolExecutionError
from shellrt.tools.read import ReadTool
from shellrt.tools.write import WriteInput, WriteTool


def make_ctx(root: Path) -> ToolContext:
    return ToolContext(
        session_id="s", session_dir=root / ".session", workspace=root, cwd=str(root), allowed_roots=(root,)
    )


def read(ctx: ToolContext, path: Path, **kw: Any) -> None:
    tool = ReadTool()
    anyio.run(lambda: tool.call(tool.parse_input({"file_path": str(path), **kw}), ctx))


def write(ctx: ToolContext, **raw: Any) -> tuple[str, str]:
    tool = WriteTool()

    async def go() -> tuple[str, str]:
        inp = tool.parse_input(raw)
        v = await tool.validate(inp, ctx)
        if not v.ok:
            raise ToolExecutionError(v.message)
        out = await tool.call(inp, ctx)
        content = tool.to_model_content(out.data)
        assert isinstance(content, str)
        return content, tool.render_result(out.data)

    return anyio.run(go)


def test_create_with_parents(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    text, _ = write(ctx, file_path="a/b/c.txt", content="hi\n")
    assert "created" in text and (tmp_path / "a/b/c.txt").read_text() == "hi\n"
    assert str(tmp_path / "a/b/c.txt") in ctx.read_state


def test_parents_outside_roots_not_created(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    with pytest.raises(ToolExecutionError, match="outside the sandbox's writable places"):
        write(make_ctx(ws), file_path=str(tmp_path / "elsewhere" / "x.txt"), content="x")
    assert not (tmp_path / "elsewhere").exists()


def test_overwrite_requires_fresh_full_read(tmp_path: Path) -> None:
    f = tmp_path / "f.txt"
    f.write_text("".join(f"{i}\n" for i in range(10)))
    ctx = make_ctx(tmp_path)
    with pytest.raises(ToolExecutionError, match="not been read"):
        write(ctx, file_path=str(f), content="new")
    read(ctx, f, limit=2)
    with pytest.raises(ToolExecutionError, match="only read part"):
        write(ctx, file_path=str(f), content="new")
    read(ctx, f)
    f.write_text("changed")
    with pytest.raises(ToolExecutionError, match="read it again"):
        write(ctx, file_path=str(f), content="new")
    read(ctx, f)
    text, diff = write(ctx, file_path=str(f), content="new\n")
    assert "overwritten" in text and "-changed" in diff and "+new" in diff
    assert f.read_text() == "new\n"


def test_overwrite_keeps_crlf_and_encoding(tmp_path: Path) -> None:
    f = tmp_path / "w.txt"
    f.write_bytes(b"caf\xe9\r\nold\r\n")
    ctx = make_ctx(tmp_path)
    read(ctx, f)
    write(ctx, file_path=str(f), content="café\nnew\n")
    assert f.read_bytes() == b"caf\xe9\r\nnew\r\n"


def test_destructive_and_directory(tmp_path: Path) -> None:
    f = tmp_path / "f.txt"
    f.write_text("x")
    tool = WriteTool()
    assert tool.is_destructive(WriteInput(file_path=str(f), content=""))
    assert not tool.is_destructive(WriteInput(file_path=str(tmp_path / "nope"), content=""))
    with pytest.raises(ToolExecutionError, match="directory"):
        write(make_ctx(tmp_path), file_path=str(tmp_path), content="x")
